//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package proctest

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on the file at path, creating it, and
// returns its release. The lock waits for other processes' locks.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() { _ = f.Close() }, nil
}
