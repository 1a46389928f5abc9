//go:build e2e

package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"tug/internal/testutil"
)

// Every tug under test runs in a network namespace of its own, the test's
// "node": its bridge, veths and nftables rules live there, so the host's
// own links and rules are never touched, and hostNetwork pods join it (tug
// pins the namespace it runs in). What tug must reach on the host's
// loopback (the test registry, a test's HTTP server) is relayed into the
// node by relay; what the test reaches inside the node goes through
// nodeHTTPClient or inNetns.

// netnsName is the `ip netns` name of a namespace path from
// testutil.NewNetns.
func netnsName(path string) string { return strings.TrimPrefix(path, "/run/netns/") }

// run runs a command and fails the test with its output if it fails.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// listenIn listens on addr inside the network namespace at path.
func listenIn(t *testing.T, path, network, addr string) net.Listener {
	t.Helper()
	var l net.Listener
	if err := testutil.InNetns(path, func() (err error) {
		l, err = net.Listen(network, addr)
		return err
	}); err != nil {
		t.Fatalf("listen on %s in %s: %v", addr, path, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// dialIn connects to addr from inside the network namespace at path.
func dialIn(ctx context.Context, path, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := testutil.InNetns(path, func() (err error) {
		var d net.Dialer
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// nodeHTTPClient is an HTTP client whose connections start inside the
// node's network namespace (for hostNetwork pods, hostPorts, /healthz).
func (tg *tug) nodeHTTPClient() *http.Client {
	return httpClientIn(tg.netns, 5*time.Second)
}

// httpClientIn is an HTTP client whose connections start inside the
// network namespace at path, without connection reuse.
func httpClientIn(path string, timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DisableKeepAlives: true,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				return dialIn(ctx, path, network, addr)
			},
		},
	}
}

// relay makes addr (host:port on the test's loopback, e.g. the test
// registry) reachable at the same address inside the node: a listener
// there whose connections are copied to and from addr. It stops when the
// test ends.
func (tg *tug) relay(addr string) {
	t := tg.t
	t.Helper()
	l := listenIn(t, tg.netns, "tcp", addr)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		conns  = map[net.Conn]bool{}
		closed bool
	)
	// keep registers open connections, so that the end of the test closes
	// them (tug keeps its HTTP connections alive); false once it has.
	keep := func(cs ...net.Conn) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range cs {
			if closed {
				c.Close()
			} else {
				conns[c] = true
			}
		}
		return !closed
	}
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		closed = true
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				in.Close()
				continue
			}
			if !keep(in, out) {
				out.Close()
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				pipe(in, out)
			}()
		}
	}()
}

// pipe copies both ways between a and b until either side is done, then
// closes both.
func pipe(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src) // an error ends this connection's relay
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	<-done
	a.Close()
	b.Close()
}
