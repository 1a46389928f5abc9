package api

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startServer runs s.Serve on a socket in a new temporary directory (and on
// healthAddr) and stops it at cleanup, checking that it stopped cleanly. It
// returns the socket path once the server answers.
func startServer(t *testing.T, s *Server, healthAddr string) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "run", "tug.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, sock, healthAddr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve returned %v after a normal stop, want nil", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after its context ended")
		}
		if _, err := os.Lstat(sock); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("socket %s left behind after stop (%v)", sock, err)
		}
	})
	waitSocket(t, sock, done)
	return sock
}

// waitSocket waits until sock answers, failing if Serve returned first.
func waitSocket(t *testing.T, sock string, done chan error) {
	t.Helper()
	c := &Client{SocketPath: sock}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := c.Manifests(context.Background())
		if err == nil {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("Serve returned early: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("server on %s never answered: %v", sock, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

func TestServeAndClient(t *testing.T) {
	sock := startServer(t, &Server{Status: testStatus(), Log: testLogger(t)}, "")
	c := &Client{SocketPath: sock}
	ctx := context.Background()

	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("socket mode = %v, want 0600", perm)
	}
	if di, err := os.Stat(filepath.Dir(sock)); err != nil || di.Mode().Perm() != 0o700 {
		t.Errorf("socket directory mode = %v (%v), want 0700", di.Mode().Perm(), err)
	}

	l, err := c.Pods(ctx)
	if err != nil || len(l.Items) != 5 || l.Items[0].Metadata.Name != "api-edge1" {
		t.Errorf("Pods = %d items (%v), want 5 starting with api-edge1", len(l.Items), err)
	}
	v, err := c.Pod(ctx, "default", "web")
	if err != nil || v.Metadata.UID != "uid-web" {
		t.Errorf("Pod(default, web) = %q, %v; want uid-web", v.Metadata.UID, err)
	}
	_, err = c.Pod(ctx, "default", "nope")
	var se *StatusError
	if !errors.Is(err, ErrNotFound) || !errors.As(err, &se) || se.Code != 404 ||
		err.Error() != `pod "nope" not found in namespace "default"` {
		t.Errorf("Pod(default, nope) error = %v, want a 404 matching ErrNotFound", err)
	}
	if _, err = c.Pod(ctx, "other", "twin"); !errors.Is(err, ErrAmbiguous) {
		t.Errorf("Pod(other, twin) error = %v, want ErrAmbiguous", err)
	}
	ms, err := c.Manifests(ctx)
	if err != nil || len(ms) != 2 {
		t.Errorf("Manifests = %v, %v; want 2", ms, err)
	}
}

func TestServeHealthListener(t *testing.T) {
	// Find a free loopback port (it may be taken again before Serve listens;
	// unlikely enough for a test).
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	startServer(t, &Server{Status: testStatus(), Health: fakeHealth{}, Log: testLogger(t)}, addr)

	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/metrics": 200, "/pods": 404} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("TCP GET %s = %d, want %d: %s", path, resp.StatusCode, want, body)
		}
	}
}

func TestServeRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{":10248", "0.0.0.0:10248", "192.0.2.1:10248", "[::]:10248", "example.com:10248", "10248"} {
		sock := filepath.Join(t.TempDir(), "tug.sock")
		err := (&Server{}).Serve(context.Background(), sock, addr)
		if err == nil || (addr != "10248" && !errors.Is(err, ErrNotLoopback)) {
			t.Errorf("Serve(health %q) = %v, want an error (ErrNotLoopback)", addr, err)
		}
		if _, err := os.Lstat(sock); err == nil {
			t.Errorf("Serve(health %q) created the socket before refusing", addr)
		}
	}
	for _, addr := range []string{"127.0.0.1:10248", "127.0.0.2:1", "[::1]:10248", "localhost:10248"} {
		if err := checkLoopback(addr); err != nil {
			t.Errorf("checkLoopback(%q) = %v, want nil", addr, err)
		}
	}
}

func TestServeReplacesStaleSocket(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "tug.sock")
	// A socket left by a killed tug: bound, then closed without unlinking.
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- (&Server{Log: testLogger(t)}).Serve(ctx, sock, "") }()
	waitSocket(t, sock, done)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve = %v, want nil", err)
	}
}

func TestServeRefusesLiveSocket(t *testing.T) {
	sock := startServer(t, &Server{Log: testLogger(t)}, "")
	err := (&Server{}).Serve(context.Background(), sock, "")
	if !errors.Is(err, ErrSocketInUse) {
		t.Errorf("second Serve on %s = %v, want ErrSocketInUse", sock, err)
	}
}

func TestServeRefusesOtherFile(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "tug.sock")
	if err := os.WriteFile(sock, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := (&Server{}).Serve(context.Background(), sock, ""); err == nil {
		t.Error("Serve over a regular file succeeded, want an error")
	}
	if data, _ := os.ReadFile(sock); string(data) != "keep me" {
		t.Error("Serve removed a regular file at the socket path")
	}
}

func TestClientUnreachable(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "stale.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()

	for name, sock := range map[string]string{"missing": filepath.Join(dir, "none.sock"), "stale": stale} {
		t.Run(name, func(t *testing.T) {
			_, err := (&Client{SocketPath: sock}).Pods(context.Background())
			want := "cannot reach tug at " + sock + ": is it running?"
			if !errors.Is(err, ErrUnreachable) || err == nil || err.Error() != want {
				t.Errorf("Pods = %v, want %q (ErrUnreachable)", err, want)
			}
		})
	}
}

// TestServeClosesIdleConnections: a keep-alive connection that sends no
// new request is closed after IdleTimeout, on the TCP health listener and
// on the socket, instead of being held open forever.
func TestServeClosesIdleConnections(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	sock := startServer(t, &Server{Status: testStatus(), Health: fakeHealth{}, Log: testLogger(t), IdleTimeout: 300 * time.Millisecond}, addr)
	tests := []struct{ name, network, addr string }{
		{"tcp", "tcp", addr},
		{"socket", "unix", sock},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.Dial(tt.network, tt.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: tug\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			start := time.Now()
			buf := make([]byte, 4096)
			var got strings.Builder
			for {
				n, err := c.Read(buf)
				got.Write(buf[:n])
				if err != nil {
					if !errors.Is(err, io.EOF) {
						t.Fatalf("read: %v after %v, want the server to close the idle connection (EOF); got %q", err, time.Since(start), got.String())
					}
					break
				}
			}
			if !strings.HasPrefix(got.String(), "HTTP/1.1 200") {
				t.Errorf("answer %q", got.String())
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("closed after %v, want about the idle timeout", d)
			}
		})
	}
}
