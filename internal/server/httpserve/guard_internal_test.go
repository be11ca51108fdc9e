package httpserve

import (
	"net"
	"testing"
)

// TestLoopbackAddr: the guard's test of the listener's address agrees with
// IsLoopback of its string, for every kind of TCP address.
func TestLoopbackAddr(t *testing.T) {
	addrs := []net.Addr{
		&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080},
		&net.TCPAddr{IP: net.IPv4(127, 1, 2, 3).To4(), Port: 1},
		&net.TCPAddr{IP: net.IPv6loopback, Port: 8080},
		&net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 8080},
		&net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 8080},
		&net.TCPAddr{IP: net.ParseIP("fe80::1"), Port: 8080, Zone: "lo"},
		&net.TCPAddr{IP: net.ParseIP("::ffff:127.0.0.1"), Port: 8080},
		&net.TCPAddr{IP: nil, Port: 8080},
		&net.TCPAddr{IP: net.IP{1, 2, 3}, Port: 8080},
		&net.UnixAddr{Name: "/tmp/sock", Net: "unix"},
	}
	for _, a := range addrs {
		if got, want := loopbackAddr(a), IsLoopback(a.String()); got != want {
			t.Errorf("loopbackAddr(%s) = %v, IsLoopback says %v", a, got, want)
		}
	}
}
