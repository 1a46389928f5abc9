package prober

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// DialContext connects to addr from inside the network namespace at path
// nsPath ("" is the node's: a plain dial). The socket is created on an OS
// thread locked to a goroutine that entered the namespace; the goroutine
// ends without unlocking, so the Go runtime terminates that thread instead
// of handing it, still in the pod's namespace, to other goroutines. A
// socket keeps the namespace it was created in, so the connection is used
// from any thread afterwards. A host name in addr is resolved from the
// pod's namespace too (the pure-Go resolver may ask from other threads:
// give probes an IP address or localhost).
func DialContext(ctx context.Context, nsPath, network, addr string) (net.Conn, error) {
	var d net.Dialer
	if nsPath == "" {
		return d.DialContext(ctx, network, addr)
	}
	type result struct {
		conn net.Conn
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: this thread leaves with its goroutine.
		ns, err := os.Open(nsPath)
		if err != nil {
			ch <- result{err: fmt.Errorf("open netns: %w", err)}
			return
		}
		err = unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET)
		_ = ns.Close()
		if err != nil {
			ch <- result{err: fmt.Errorf("enter netns %s: %w", nsPath, err)}
			return
		}
		conn, err := d.DialContext(ctx, network, addr)
		ch <- result{conn, err}
	}()
	r := <-ch
	return r.conn, r.err
}
