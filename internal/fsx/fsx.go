// Package fsx reads operator files (registry, policies, data, tokens,
// config, capabilities) safely: only regular files, after following
// symlinks, of at most MaxFileSize bytes (docs/contract.md §11). Anything else is an
// error naming the file, never an unbounded read: /dev/zero, a FIFO, a
// directory or a file that grows while it is read are all refused.
//
//	data, err := fsx.ReadFile("registry.yaml")
package fsx

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// MaxFileSize is the largest operator file read: 16 MiB.
const MaxFileSize = 16 << 20

// ErrNotRegular is wrapped by the error for a path that is not a regular
// file (a device, a FIFO, a socket, a directory).
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by the error for a file larger than MaxFileSize.
var ErrTooLarge = fmt.Errorf("larger than %d bytes (16 MiB)", MaxFileSize)

// ReadFile reads the named file of the operating system, following
// symlinks. It fails, with an *fs.PathError naming the file, when the file
// is not a regular file (ErrNotRegular) or holds more than MaxFileSize
// bytes (ErrTooLarge), also when it grows past that while being read. The
// errors of os.ReadFile (fs.ErrNotExist, fs.ErrPermission) pass through.
func ReadFile(name string) ([]byte, error) {
	// Check the type before opening: opening a FIFO blocks until a writer
	// comes. O_NONBLOCK covers a FIFO swapped in between the two.
	st, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if err := check(name, st); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return read(name, f)
}

// ReadFileFS is ReadFile for a file of fsys (fs.Stat follows what fsys
// follows).
func ReadFileFS(fsys fs.FS, name string) ([]byte, error) {
	st, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, err
	}
	if err := check(name, st); err != nil {
		return nil, err
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return read(name, f)
}

// Check reports whether the file described by st (as os.Stat describes it,
// symlinks followed) may be read: a regular file of at most MaxFileSize
// bytes. The error names the file.
func Check(name string, st fs.FileInfo) error { return check(name, st) }

func check(name string, st fs.FileInfo) error {
	switch {
	case !st.Mode().IsRegular():
		return &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("%w (%s)", ErrNotRegular, kind(st.Mode()))}
	case st.Size() > MaxFileSize:
		return &fs.PathError{Op: "read", Path: name, Err: ErrTooLarge}
	}
	return nil
}

// read reads f through a limit of MaxFileSize+1 bytes, so that a file
// that grew since it was checked is caught too.
func read(name string, f fs.File) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := check(name, st); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	if len(data) > MaxFileSize {
		return nil, &fs.PathError{Op: "read", Path: name, Err: ErrTooLarge}
	}
	return data, nil
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}
