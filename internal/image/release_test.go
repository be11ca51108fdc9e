package image_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/toolgate/toolgate/internal/image"
	"github.com/toolgate/toolgate/internal/testkit/proctest"
)

// TestGoreleaserConfig: the release archives are the ones promised, built
// as the image's binary is (static, -trimpath, the version through the
// same linker variable), with a checksums file and the license. CI also
// runs `goreleaser check` and a snapshot build (scripts/release-check).
func TestGoreleaserConfig(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(proctest.Root, ".goreleaser.yaml"))
	require.NoError(t, err)
	var cfg struct {
		Version int `yaml:"version"`
		Builds  []struct {
			Main    string   `yaml:"main"`
			Env     []string `yaml:"env"`
			Flags   []string `yaml:"flags"`
			Ldflags []string `yaml:"ldflags"`
			Goos    []string `yaml:"goos"`
			Goarch  []string `yaml:"goarch"`
		} `yaml:"builds"`
		Archives []struct {
			Formats   []string `yaml:"formats"`
			Overrides []struct {
				Goos    string   `yaml:"goos"`
				Formats []string `yaml:"formats"`
			} `yaml:"format_overrides"`
			Files []string `yaml:"files"`
		} `yaml:"archives"`
		Checksum struct {
			Name      string `yaml:"name_template"`
			Algorithm string `yaml:"algorithm"`
		} `yaml:"checksum"`
	}
	require.NoError(t, yaml.Unmarshal(b, &cfg))
	require.Equal(t, 2, cfg.Version)
	require.Len(t, cfg.Builds, 1)
	bld := cfg.Builds[0]
	require.Equal(t, "./cmd/toolgate", bld.Main)
	require.Contains(t, bld.Env, "CGO_ENABLED=0")
	require.Contains(t, bld.Flags, "-trimpath")
	require.Len(t, bld.Ldflags, 1)
	require.Contains(t, bld.Ldflags[0], "-X "+image.VersionVar+"={{ .Version }}")
	slices.Sort(bld.Goos)
	slices.Sort(bld.Goarch)
	require.Equal(t, []string{"darwin", "linux", "windows"}, bld.Goos)
	require.Equal(t, []string{"amd64", "arm64"}, bld.Goarch)
	require.Len(t, cfg.Archives, 1)
	a := cfg.Archives[0]
	require.Equal(t, []string{"tar.gz"}, a.Formats)
	require.Len(t, a.Overrides, 1)
	require.Equal(t, "windows", a.Overrides[0].Goos)
	require.Equal(t, []string{"zip"}, a.Overrides[0].Formats)
	for _, f := range a.Files {
		_, err := os.Stat(filepath.Join(proctest.Root, f))
		require.NoError(t, err, "an archive's file %s is missing", f)
	}
	require.Contains(t, a.Files, "LICENSE")
	require.Equal(t, "sha256", cfg.Checksum.Algorithm)
	require.NotEmpty(t, cfg.Checksum.Name)
}
