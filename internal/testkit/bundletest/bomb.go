package bundletest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"testing"
)

// Bomb is the bundle raw (.tar.gz) with n more files of size zero bytes
// each: a few hundred KiB on the wire or on disk, n×size once unpacked.
// Without a bound on the bundle as a whole it reads as raw does.
func Bomb(t testing.TB, raw []byte, n, size int) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var out bytes.Buffer
	// BestSpeed: zeros compress as well (long matches either way), and
	// under the race detector BestCompression's hashing of every byte
	// took most of a test's time.
	zw, _ := gzip.NewWriterLevel(&out, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(tw, tr); err != nil {
			t.Fatal(err)
		}
	}
	zeros := make([]byte, size)
	for i := range n {
		if err := tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("/padding/%d.txt", i), Mode: 0o644, Size: int64(size), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(zeros); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
