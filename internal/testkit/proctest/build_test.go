package proctest

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// TestCachedOneAtATime: Cached keeps its binary in BinDir under the name
// given, makes it with the file locked (no two makers of one name at
// once, whether in one process or several) and passes a maker's error on.
func TestCachedOneAtATime(t *testing.T) {
	dir, err := BinDir()
	if err != nil {
		t.Fatal(err)
	}
	name := "cached-test-" + filepath.Base(t.TempDir())
	t.Cleanup(func() { _ = os.Remove(filepath.Join(dir, name)); _ = os.Remove(filepath.Join(dir, name+".lock")) })
	var inside, overlaps atomic.Int32
	var wg sync.WaitGroup
	paths := make([]string, 8)
	for i := range paths {
		wg.Go(func() {
			p, err := Cached(name, func(out string) error {
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
				defer inside.Add(-1)
				return os.WriteFile(out, []byte("x"), 0o600)
			})
			if err != nil {
				t.Error(err)
			}
			paths[i] = p
		})
	}
	wg.Wait()
	if n := overlaps.Load(); n != 0 {
		t.Fatalf("%d makers ran while another held the lock", n)
	}
	for _, p := range paths {
		if p != filepath.Join(dir, name) {
			t.Fatalf("Cached returned %s, want %s", p, filepath.Join(dir, name))
		}
	}
	boom := errors.New("boom")
	if _, err := Cached(name, func(string) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("a failed make: got %v, want %v", err, boom)
	}
}
