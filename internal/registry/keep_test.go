package registry

import (
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func (f *fakeRegistry) connections() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.conns
}

// TestTransportKept: the resolvers of one Registry (an OCI poll each, an
// image pull each) share one connection to a TLS registry, over HTTP/2,
// while its hosts directory is unchanged; a change of the directory's
// files (hosts.toml's content, its modification time alone, a file added)
// builds its transports again, so the next resolver dials anew.
func TestTransportKept(t *testing.T) {
	tests := []struct {
		name      string
		change    func(t *testing.T, dir string)
		wantConns int
	}{
		{name: "unchanged", change: func(*testing.T, string) {}, wantConns: 1},
		{name: "hosts.toml content, same size and mtime", change: func(t *testing.T, dir string) {
			p := filepath.Join(dir, "hosts.toml")
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b = []byte(strings.Replace(string(b), "# a", "# b", 1))
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
		}, wantConns: 2},
		{name: "hosts.toml mtime", change: func(t *testing.T, dir string) {
			later := time.Now().Add(time.Hour)
			if err := os.Chtimes(filepath.Join(dir, "hosts.toml"), later, later); err != nil {
				t.Fatal(err)
			}
		}, wantConns: 2},
		{name: "a certificate added", change: func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "other.crt"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, wantConns: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := newFakeRegistry(t, "/v2", true, "")
			root := t.TempDir()
			dir := filepath.Join(root, strings.Replace(reg.host(), ":", "_", 1)+"_")
			writeHosts(t, root, reg.host(), fmt.Sprintf("# a\nserver = \"https://%s\"\n[host.\"https://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = \"ca.pem\"\n", reg.host(), reg.host()))
			ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: reg.srv.Certificate().Raw})
			if err := os.WriteFile(filepath.Join(dir, "ca.pem"), ca, 0o644); err != nil {
				t.Fatal(err)
			}
			r := New(Config{HostsDir: root})
			for i := range 3 {
				if _, err := pullConfig(t, r, reg.host(), nil); err != nil {
					t.Fatalf("pull %d: %v", i, err)
				}
			}
			if got := reg.connections(); got != 1 {
				t.Fatalf("three pulls opened %d connections, want 1", got)
			}
			tt.change(t, dir)
			if _, err := pullConfig(t, r, reg.host(), nil); err != nil {
				t.Fatalf("pull after the change: %v", err)
			}
			if got := reg.connections(); got != tt.wantConns {
				t.Errorf("after the change: %d connections, want %d", got, tt.wantConns)
			}
			reg.mu.Lock()
			defer reg.mu.Unlock()
			for _, p := range reg.protos {
				if p != "HTTP/2.0" {
					t.Errorf("request over %s, want HTTP/2.0 (the server offers it)", p)
				}
			}
		})
	}
}

// TestIdleConnTimeoutDefault: a Registry keeps idle connections for
// longer than the OCI source's default period.
func TestIdleConnTimeoutDefault(t *testing.T) {
	r := New(Config{})
	h := r.kept.forHost("example.com", "")
	tr := h.transport(0, newTestTransport())
	if tr.IdleConnTimeout != DefaultIdleConnTimeout || !tr.ForceAttemptHTTP2 {
		t.Errorf("IdleConnTimeout %v, ForceAttemptHTTP2 %v; want %v, true", tr.IdleConnTimeout, tr.ForceAttemptHTTP2, DefaultIdleConnTimeout)
	}
	if DefaultIdleConnTimeout <= time.Minute {
		t.Errorf("DefaultIdleConnTimeout %v is not longer than the default poll period", DefaultIdleConnTimeout)
	}
}

func newTestTransport() *http.Transport { return &http.Transport{IdleConnTimeout: 30 * time.Second} }
