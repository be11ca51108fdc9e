package decisionlog

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
)

// IsURL reports whether Open sends to target over HTTP (an http:// or
// https:// URL) rather than appending to the file it names.
func IsURL(target string) bool {
	return strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://")
}

// CheckTarget reports what is wrong with a target Open is to be given:
// a URL without a host. A file's path is checked when Open opens it.
func CheckTarget(target string) error {
	if !IsURL(target) {
		return nil
	}
	if u, err := url.Parse(target); err != nil || u.Host == "" {
		return errors.New("want an http:// or https:// URL with a host, or a file path")
	}
	return nil
}

// MinHashKeyLen is the shortest hash key (Options.HashKey) ReadHashKey
// accepts, in bytes.
const MinHashKeyLen = 32

// ReadHashKey reads a hash key (Options.HashKey) from where ref says:
// "${NAME}" is the environment variable NAME, anything else a file
// holding it (one trailing newline ignored). A key is at least
// MinHashKeyLen bytes. "" is no key: nil. Its errors name where the key
// was looked for, never the key.
func ReadHashKey(ref string) ([]byte, error) {
	if ref == "" {
		return nil, nil
	}
	var key []byte
	if name, ok := strings.CutPrefix(ref, "${"); ok && strings.HasSuffix(name, "}") {
		name = strings.TrimSuffix(name, "}")
		v, set := os.LookupEnv(name)
		if !set {
			return nil, fmt.Errorf("the environment variable %s is not set", name)
		}
		key = []byte(v)
	} else {
		b, err := os.ReadFile(ref)
		if err != nil {
			return nil, fmt.Errorf("cannot read the key file: %w", err)
		}
		key = bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r"))
	}
	if len(key) < MinHashKeyLen {
		return nil, fmt.Errorf("the key is %d bytes; want at least %d (for example: openssl rand -hex 32)", len(key), MinHashKeyLen)
	}
	return key, nil
}

// Settings are the decision log's settings of `toolgate serve`
// (docs/contract.md §14). The zero value is no decision log.
type Settings struct {
	// Target, when set, receives every grant and call decision as an
	// event (Open): an http(s) URL is POSTed batches of them, anything
	// else is a file appended one event per line (CheckTarget).
	Target string
	// HashKey, when set, says where the key of the hashes of argument and
	// _meta values is (ReadHashKey; Options.HashKey): "${NAME}" or a file.
	// The key itself is never in the settings. It needs Target.
	HashKey string
	// HistoryEntries writes the history entries a decision read into its
	// event (Options.HistoryEntries). It needs Target.
	HistoryEntries bool
}

// ReadHashKey reads the key HashKey refers to (ReadHashKey): nil when
// HashKey is "".
func (s Settings) ReadHashKey() ([]byte, error) { return ReadHashKey(s.HashKey) }
