package prober

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"
	"time"

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
		if err := enter(nsPath); err != nil {
			ch <- result{err: err}
			return
		}
		conn, err := d.DialContext(ctx, network, addr)
		ch <- result{conn, err}
	}()
	r := <-ch
	return r.conn, r.err
}

// nsIdle is how long a pool's thread waits for the next dial into its
// namespace before it ends (with its thread).
const nsIdle = 30 * time.Second

// nsPool dials from inside network namespaces with one long-lived thread
// per namespace, so that a probe does not pay for a new OS thread and a
// setns each time. Each thread is locked to its goroutine, enters its
// namespace once, dials one connection at a time (a probe's dial into its
// own pod is local: refused or accepted at once) and ends, with its
// goroutine, after nsIdle without work: the runtime then terminates it.
// A dial that finds its namespace's queue full falls back to DialContext.
// Its zero value is ready to use; safe for concurrent use.
type nsPool struct {
	mu      sync.Mutex
	dialers map[string]*nsDialer
}

type nsDialer struct {
	reqs chan dialReq
}

type dialReq struct {
	ctx           context.Context
	network, addr string
	res           chan dialResult
}

type dialResult struct {
	conn net.Conn
	err  error
}

// dial connects to addr from inside the namespace at nsPath ("" is the
// node's).
func (p *nsPool) dial(ctx context.Context, nsPath, network, addr string) (net.Conn, error) {
	if nsPath == "" {
		return DialContext(ctx, "", network, addr)
	}
	req := dialReq{ctx: ctx, network: network, addr: addr, res: make(chan dialResult, 1)}
	p.mu.Lock()
	if p.dialers == nil {
		p.dialers = map[string]*nsDialer{}
	}
	d := p.dialers[nsPath]
	if d == nil {
		d = &nsDialer{reqs: make(chan dialReq, 64)}
		p.dialers[nsPath] = d
		go p.serve(nsPath, d)
	}
	queued := false
	select {
	case d.reqs <- req:
		queued = true
	default:
	}
	p.mu.Unlock()
	if !queued {
		return DialContext(ctx, nsPath, network, addr)
	}
	select {
	case r := <-req.res:
		return r.conn, r.err
	case <-ctx.Done():
		// The dial goes on and sees the same ctx; drop what it makes.
		go func() {
			if r := <-req.res; r.conn != nil {
				_ = r.conn.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// serve is the goroutine of one namespace's thread.
func (p *nsPool) serve(nsPath string, d *nsDialer) {
	runtime.LockOSThread()
	// No UnlockOSThread: the thread ends with this goroutine.
	err := enter(nsPath)
	var dialer net.Dialer
	idle := time.NewTimer(nsIdle)
	defer idle.Stop()
	for {
		select {
		case r := <-d.reqs:
			if err != nil {
				r.res <- dialResult{err: err}
				continue
			}
			conn, derr := dialer.DialContext(r.ctx, r.network, r.addr)
			r.res <- dialResult{conn, derr}
			if !idle.Stop() {
				<-idle.C
			}
			idle.Reset(nsIdle)
		case <-idle.C:
			p.mu.Lock()
			if len(d.reqs) > 0 {
				p.mu.Unlock()
				idle.Reset(nsIdle)
				continue
			}
			delete(p.dialers, nsPath)
			p.mu.Unlock()
			return
		}
	}
}

// enter moves the calling thread into the network namespace at nsPath.
func enter(nsPath string) error {
	ns, err := os.Open(nsPath)
	if err != nil {
		return fmt.Errorf("open netns: %w", err)
	}
	defer ns.Close()
	if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("enter netns %s: %w", nsPath, err)
	}
	return nil
}
