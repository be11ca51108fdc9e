// Command toolgate-image builds toolgate's container image without a
// container daemon and writes it as a tarball that `docker load` and
// `crane push` read:
//
//	go run ./internal/image/cmd/toolgate-image -o toolgate-image.tar -tag ghcr.io/toolgate/toolgate:dev
//
// The work is package image's.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/toolgate/toolgate/internal/image"
)

func main() {
	out := flag.String("o", "toolgate-image.tar", "write the image tarball to `FILE`")
	tag := flag.String("tag", image.Repository+":dev", "the image's `REFERENCE` in the tarball")
	version := flag.String("version", "", "the `VERSION` toolgate version prints and the image's label (default: the module's)")
	arch := flag.String("arch", runtime.GOARCH, "the `GOARCH` to build for")
	root := flag.String("root", ".", "the toolgate module `DIR`")
	binary := flag.String("binary", "", "a static linux toolgate binary to use instead of building one")
	flag.Parse()
	if err := run(context.Background(), *out, *tag, *version, *arch, *root, *binary); err != nil {
		fmt.Fprintln(os.Stderr, "toolgate-image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out, tag, version, arch, root, binary string) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	if binary == "" {
		dir, err := os.MkdirTemp("", "toolgate-image")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		binary = filepath.Join(dir, "toolgate")
		if err := image.BuildBinary(ctx, root, binary, arch, version); err != nil {
			return err
		}
	}
	img, err := image.Build(image.Options{Binary: binary, Arch: arch, Version: version})
	if err != nil {
		return err
	}
	if err := tarball.WriteToFile(out, ref, img); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s %s@%s\n", out, ref, digest)
	return nil
}
