package identity

import (
	"crypto/sha256"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/toolgate/toolgate/internal/fsx"
	"github.com/toolgate/toolgate/toolcall"
)

// TokensFile is a tokens file kept current (docs/contract.md §8): Reload
// reads the file again and, when it loads, swaps in its tokens in one
// step, so a request sees either the old set or the new one, never a
// mix. A file that does not load changes nothing: the last good tokens
// keep serving. A *TokensFile is safe for concurrent use and is a
// HashLookup.
type TokensFile struct {
	path string
	cur  atomic.Pointer[Tokens]
	mu   sync.Mutex // serializes Reload
	sum  [sha256.Size]byte
}

// OpenTokensFile loads the tokens file at path; its error is
// LoadTokens's.
func OpenTokensFile(path string) (*TokensFile, error) {
	f := &TokensFile{path: path}
	if _, err := f.Reload(); err != nil {
		return nil, err
	}
	return f, nil
}

// Path is the file's path.
func (f *TokensFile) Path() string { return f.path }

// Reload reads the file again. changed is true when its content differs
// from the last good load and the new tokens now serve. On error (the
// *TokenFileError LoadTokens would return) the last good tokens keep
// serving.
func (f *TokensFile) Reload() (changed bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	data, err := fsx.ReadFile(f.path)
	if err != nil {
		return false, &TokenFileError{Path: f.path, Err: err}
	}
	sum := sha256.Sum256(data)
	if f.cur.Load() != nil && sum == f.sum {
		return false, nil
	}
	t, err := parseTokens(data)
	if err != nil {
		var tfe *TokenFileError
		if errors.As(err, &tfe) {
			tfe.Path = f.path
			return false, tfe
		}
		return false, &TokenFileError{Path: f.path, Err: err}
	}
	f.cur.Store(t)
	f.sum = sum
	return true, nil
}

// Tokens is the set serving now.
func (f *TokensFile) Tokens() *Tokens { return f.cur.Load() }

// Len is the number of tokens serving now.
func (f *TokensFile) Len() int { return f.cur.Load().Len() }

// Lookup is Tokens.Lookup of the set serving now.
func (f *TokensFile) Lookup(token string) (*toolcall.Caller, bool) {
	return f.cur.Load().Lookup(token)
}

// LookupHash is Tokens.LookupHash of the set serving now.
func (f *TokensFile) LookupHash(sum [sha256.Size]byte) (*toolcall.Caller, bool) {
	return f.cur.Load().LookupHash(sum)
}

var _ HashLookup = (*TokensFile)(nil)
