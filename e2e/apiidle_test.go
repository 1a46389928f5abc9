//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// TestLoopbackPortDropsIdleConnections: a local user
// cannot hold tug's loopback port with connections that say nothing, or that
// stay open after their answer: tug closes a connection that sends no
// request within its read bound (10 s) and a keep-alive connection idle for
// its idle bound (60 s), on the real agent.
func TestLoopbackPortDropsIdleConnections(t *testing.T) {
	t.Parallel()
	port := freePort(t)
	tg := startTug(t, tugOpts{healthzPort: port})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	waitFor(t, 30*time.Second, "/healthz answers", func() (bool, error) {
		resp, err := tg.nodeHTTPClient().Get("http://" + addr + "/healthz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return true, nil
	})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	silent, err := dialIn(ctx, tg.netns, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	idle, err := dialIn(ctx, tg.netns, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	opened := time.Now()

	// The idle connection asks once, keeps the connection alive, and then
	// says nothing more.
	if _, err := io.WriteString(idle, "GET /healthz HTTP/1.1\r\nHost: tug\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	idleReader := bufio.NewReader(idle)
	resp, err := http.ReadResponse(idleReader, nil)
	if err != nil {
		t.Fatalf("read /healthz answer: %v", err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("/healthz: %s, close %v; want 200 on a kept-alive connection", resp.Status, resp.Close)
	}
	answered := time.Now()

	silentClosed := closedWithin(t, silent, bufio.NewReader(silent), 30*time.Second)
	if d := silentClosed.Sub(opened); d < 5*time.Second {
		t.Errorf("a silent connection was closed after %s: sooner than the read bound", d)
	}
	t.Logf("silent connection closed by tug after %s", silentClosed.Sub(opened).Round(time.Millisecond))

	idleClosed := closedWithin(t, idle, idleReader, 90*time.Second)
	if d := idleClosed.Sub(answered); d < 30*time.Second {
		t.Errorf("an idle keep-alive connection was closed after %s: sooner than the idle bound", d)
	}
	t.Logf("idle keep-alive connection closed by tug %s after its answer", idleClosed.Sub(answered).Round(time.Millisecond))
}

// closedWithin waits until the peer closes c (a read returns EOF or a
// reset) and returns when; it fails the test if that takes longer than max
// or if the peer sends anything.
func closedWithin(t *testing.T, c net.Conn, r *bufio.Reader, max time.Duration) time.Time {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(max)); err != nil {
		t.Fatal(err)
	}
	b, err := r.ReadByte()
	at := time.Now()
	switch {
	case err == nil:
		rest, _ := r.Peek(r.Buffered())
		t.Fatalf("tug sent %q on an idle connection", strings.TrimSpace(string(append([]byte{b}, rest...))))
	case errors.Is(err, os.ErrDeadlineExceeded):
		t.Fatalf("connection still open after %s", max)
	}
	return at
}
