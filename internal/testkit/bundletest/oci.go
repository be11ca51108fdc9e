package bundletest

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"github.com/google/go-containerregistry/pkg/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	oras "oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
)

// OCIRegistry is an in-memory OCI registry on loopback (go-containerregistry's,
// made for tests). With a token, it answers 401 to a request without it,
// counted in Unauthorized; as OPA does for a service of type oci, the
// token is expected base64-encoded ("Authorization: Bearer BASE64(token)",
// the form ghcr.io takes a personal access token in).
type OCIRegistry struct {
	*httptest.Server
	Token        string
	Unauthorized atomic.Int32
}

// NewOCIRegistry starts an OCIRegistry; Close it.
func NewOCIRegistry(token string) *OCIRegistry {
	r := &OCIRegistry{Token: token}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	want := authorization(token)
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if token != "" && req.Header.Get("Authorization") != want {
			r.Unauthorized.Add(1)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, req)
	}))
	return r
}

// Ref is the reference HOST/REPOSITORY:TAG of repository:tag in r.
func (r *OCIRegistry) Ref(repoTag string) string {
	return r.Listener.Addr().String() + "/" + repoTag
}

// Push pushes the bundle raw to ref (HOST/REPOSITORY:TAG, see Ref) as
// `oras push REF --config config.json:application/vnd.oci.image.config.v1+json
// bundle.tar.gz:application/vnd.oci.image.layer.v1.tar+gzip` does, the
// form OPA's OCI downloader pulls: an empty image config and one gzip tar
// layer. The tag then names the new manifest.
func (r *OCIRegistry) Push(ctx context.Context, ref string, raw []byte) error {
	repo, err := remote.NewRepository(ref)
	if err != nil {
		return err
	}
	repo.PlainHTTP = true
	repo.Client = &http.Client{Transport: bearer{authorization(r.Token)}}
	layer := content.NewDescriptorFromBytes(ocispec.MediaTypeImageLayerGzip, raw)
	layer.Annotations = map[string]string{ocispec.AnnotationTitle: "bundle.tar.gz"}
	if err := repo.Push(ctx, layer, bytes.NewReader(raw)); err != nil {
		return err
	}
	cfg := []byte("{}")
	config := content.NewDescriptorFromBytes(ocispec.MediaTypeImageConfig, cfg)
	exists, err := repo.Exists(ctx, config)
	if err != nil {
		return err
	}
	if !exists {
		if err := repo.Push(ctx, config, bytes.NewReader(cfg)); err != nil {
			return err
		}
	}
	m, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_0, "", oras.PackManifestOptions{
		Layers: []ocispec.Descriptor{layer}, ConfigDescriptor: &config})
	if err != nil {
		return err
	}
	return repo.Tag(ctx, m, repo.Reference.Reference)
}

func authorization(token string) string {
	return "Bearer " + base64.StdEncoding.EncodeToString([]byte(token))
}

// bearer sets the Authorization header.
type bearer struct{ header string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", b.header)
	return http.DefaultTransport.RoundTrip(r)
}
