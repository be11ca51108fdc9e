package regoload

import (
	"io/fs"
	"os"

	"github.com/toolgate/toolgate/internal/fsx"
)

// Stamp tells the versions of a file apart without reading it: size,
// modification time and, on disk, the file's identity (a rename over
// replaces it). The zero Stamp is no version: a file that changed while it
// was read.
type Stamp struct {
	info fs.FileInfo
	disk bool
}

// Same reports whether s and t are one version of a file.
func (s Stamp) Same(t Stamp) bool {
	if s.info == nil || t.info == nil || s.disk != t.disk {
		return false
	}
	return s.info.Size() == t.info.Size() && s.info.ModTime().Equal(t.info.ModTime()) &&
		(!s.disk || os.SameFile(s.info, t.info))
}

// StampOf stats a file, following symlinks: on disk when fsys is nil.
func StampOf(fsys fs.FS, name string) (Stamp, error) {
	if fsys == nil {
		st, err := os.Stat(name)
		return Stamp{info: st, disk: true}, err
	}
	st, err := fs.Stat(fsys, name)
	return Stamp{info: st}, err
}

// ReadStamped reads a file with fsx's bounds, between two stats: the
// stamp is the zero Stamp when the file changed while it was read.
func ReadStamped(fsys fs.FS, name string) ([]byte, Stamp, error) {
	before, err := StampOf(fsys, name)
	if err != nil {
		return nil, Stamp{}, err
	}
	var data []byte
	if fsys == nil {
		data, err = fsx.ReadFile(name)
	} else {
		data, err = fsx.ReadFileFS(fsys, name)
	}
	if err != nil {
		return nil, Stamp{}, err
	}
	if after, err := StampOf(fsys, name); err != nil || !after.Same(before) {
		return data, Stamp{}, nil
	}
	return data, before, nil
}
