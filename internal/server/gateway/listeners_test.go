package gateway_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// listeners returns the TCP sockets this process listens on, inode →
// port, read from /proc. A test that a listener was released asks this
// instead of binding the port again, which another process may have taken
// since.
func listeners(t *testing.T) map[uint64]int {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("reading this process's listeners needs Linux's /proc")
	}
	ours := map[uint64]bool{}
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err != nil {
			continue // closed since ReadDir
		}
		if s, ok := strings.CutPrefix(link, "socket:["); ok {
			if n, err := strconv.ParseUint(strings.TrimSuffix(s, "]"), 10, 64); err == nil {
				ours[n] = true
			}
		}
	}
	out := map[uint64]int{}
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		b, err := os.ReadFile(table)
		if os.IsNotExist(err) {
			continue // no IPv6
		}
		require.NoError(t, err)
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" { // 0A: LISTEN
				continue
			}
			inode, err := strconv.ParseUint(f[9], 10, 64)
			require.NoError(t, err, line)
			if !ours[inode] {
				continue
			}
			_, hexPort, _ := strings.Cut(f[1], ":")
			port, err := strconv.ParseUint(hexPort, 16, 16)
			require.NoError(t, err, line)
			out[inode] = int(port)
		}
	}
	return out
}

// listenerOn is the inode of this process's listener on port; zero: none.
func listenerOn(t *testing.T, port int) uint64 {
	t.Helper()
	for inode, p := range listeners(t) {
		if p == port {
			return inode
		}
	}
	return 0
}
