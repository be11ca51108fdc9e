package identity_test

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/toolcall"
)

// BenchmarkAuthenticate measures one request's authentication through the
// Chain, as the transport will call it: by the tokens file
// (identity.Tokens, 10 entries), by a cached JWT, and by a JWT verified
// cold (cache off) with RS256 and ES256.
//
//	go test -run '^$' -bench Authenticate -benchmem ./identity
func BenchmarkAuthenticate(b *testing.B) {
	entries := map[string]identity.TokenEntry{}
	for i := range 10 {
		entries[identity.HashToken(fmt.Sprintf("tg_%02d_b3JhbmdlLWp1aWNlLWFuZC1jb2ZmZWUtYmVhbnM", i))] = identity.TokenEntry{Subject: fmt.Sprintf("user%d", i), Roles: []string{"manager"}}
	}
	tokens, err := identity.NewTokens(entries)
	if err != nil {
		b.Fatal(err)
	}
	rsaKey, ecKey := newRSAKey(b, "r"), newECKey(b, "e")
	path := filepath.Join(b.TempDir(), "jwks.json")
	writeJWKS(b, path, rsaKey, ecKey)
	now := time.Now()
	payload := claimsJSON(now, `,"scope":"tools:read tools:call","email":"alice@example.com","client_id":"app"`)
	verifier := func(cache int) *identity.JWT {
		v, err := identity.NewJWT(b.Context(), identity.Settings{Issuer: testIssuer, JWKS: path, Resource: testResource},
			identity.WithCacheSize(cache), identity.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
		if err != nil {
			b.Fatal(err)
		}
		return v
	}
	cached, cold := verifier(identity.DefaultCacheSize), verifier(0)
	run := func(name string, chain identity.Chain, token string) {
		b.Run(name, func(b *testing.B) {
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			r.Header.Set("Authorization", "Bearer "+token)
			if _, err := chain.Authenticate(b.Context(), r); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := chain.Authenticate(b.Context(), r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	tok := "tg_07_b3JhbmdlLWp1aWNlLWFuZC1jb2ZmZWUtYmVhbnM"
	hashed := newHashTokens(entries)
	run("tokens-file", identity.Chain{Tokens: tokens}, tok)
	run("tokens-file-by-hash", identity.Chain{Tokens: hashed}, tok)
	run("jwt-cached", identity.Chain{Tokens: hashed, JWT: cached}, rsaKey.sign(b, payload))
	run("jwt-cached-tokens-Lookup", identity.Chain{Tokens: tokens, JWT: cached}, rsaKey.sign(b, payload))
	run("jwt-cold-RS256", identity.Chain{Tokens: tokens, JWT: cold}, rsaKey.sign(b, payload))
	run("jwt-cold-ES256", identity.Chain{Tokens: tokens, JWT: cold}, ecKey.sign(b, payload))
}

// hashTokens is identity.Tokens with LookupHash (identity.HashLookup): the
// same digests, the same constant-time scan of every entry.
type hashTokens struct {
	hashes  [][sha256.Size]byte
	callers []*toolcall.Caller
}

func newHashTokens(entries map[string]identity.TokenEntry) *hashTokens {
	h := &hashTokens{}
	for k, e := range entries {
		var sum [sha256.Size]byte
		_, _ = hex.Decode(sum[:], []byte(k))
		h.hashes = append(h.hashes, sum)
		h.callers = append(h.callers, &toolcall.Caller{Subject: e.Subject, Roles: e.Roles})
	}
	return h
}

func (h *hashTokens) Lookup(token string) (*toolcall.Caller, bool) {
	return h.LookupHash(sha256.Sum256([]byte(token)))
}

func (h *hashTokens) LookupHash(sum [sha256.Size]byte) (*toolcall.Caller, bool) {
	var found *toolcall.Caller
	for i := range h.hashes {
		if subtle.ConstantTimeCompare(sum[:], h.hashes[i][:]) == 1 {
			found = h.callers[i]
		}
	}
	if found == nil {
		return nil, false
	}
	return &toolcall.Caller{Subject: found.Subject, Roles: slices.Clone(found.Roles)}, true
}
