package bundletest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/engine"
)

// KeyPair writes a fresh RSA key pair as PEM files in a temporary
// directory of t's and returns their paths.
func KeyPair(t testing.TB) (private, public string) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	private, public = filepath.Join(dir, "key.pem"), filepath.Join(dir, "pub.pem")
	pub, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	for path, block := range map[string]*pem.Block{
		private: {Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)},
		public:  {Type: "PUBLIC KEY", Bytes: pub},
	} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return private, public
}

// Example is the bundled example as an fs.FS source, with grant.rego
// replaced by grant when grant is not "".
func Example(t testing.TB, grant string) engine.Source {
	t.Helper()
	fsys := fstest.MapFS{"registry.yaml": {Data: toolgate.ExampleRegistry()}}
	err := fs.WalkDir(toolgate.ExamplePolicies(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(toolgate.ExamplePolicies(), p)
		fsys["policies/"+p] = &fstest.MapFile{Data: data}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if grant != "" {
		fsys["policies/grant.rego"] = &fstest.MapFile{Data: []byte(grant)}
	}
	return engine.Source{FS: fsys, Registry: "registry.yaml", Policies: "policies"}
}

// Server is a bundle server: it serves one bundle at a time with an ETag,
// as nginx or S3 do, and answers 304 to a request whose If-None-Match
// names it. Its methods may be called concurrently.
type Server struct {
	mu  sync.Mutex
	raw []byte
}

// NewServer returns a Server serving raw.
func NewServer(raw []byte) *Server { return &Server{raw: raw} }

// Set makes raw the bundle served.
func (s *Server) Set(raw []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.raw = raw
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	raw := s.raw
	s.mu.Unlock()
	sum := sha256.Sum256(raw)
	etag := `"` + hex.EncodeToString(sum[:8]) + `"`
	if strings.Contains(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("ETag", etag)
	w.Header().Set("Content-Type", "application/gzip")
	_, _ = w.Write(raw)
}
