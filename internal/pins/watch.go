package pins

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Watch calls onChange whenever the file at path may have changed (it is
// written, renamed over, removed or created), debounced, until ctx is
// done. It watches the file's directory, so that atomic saves (Save,
// editors' rename over) are seen, and the swaps of a Kubernetes volume.
// onChange reads the file itself. Any one file may be watched this way
// (the gateway watches its tokens file with it).
func Watch(ctx context.Context, path string, debounce time.Duration, onChange func()) error {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("pins: watch %s: %w", path, err)
	}
	defer fw.Close()
	dir, base := filepath.Dir(path), filepath.Base(path)
	if err := fw.Add(dir); err != nil {
		return fmt.Errorf("pins: watch %s: %w", path, err)
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-fw.Events:
			if !ok {
				return nil
			}
			// A ConfigMap or Secret volume swaps its "..data" link.
			if name := filepath.Base(ev.Name); name == base || strings.HasPrefix(name, "..") {
				timer.Reset(debounce)
			}
		case _, ok := <-fw.Errors:
			if !ok {
				return nil
			}
			timer.Reset(debounce) // events may be lost: look again
		case <-timer.C:
			onChange()
		}
	}
}
