//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tug/internal/testutil"
)

func TestHostNetworkHTTP(t *testing.T) {
	tg := startTug(t, tugOpts{})
	requireFreePort(t, "127.0.0.1:8080")
	web, err := os.ReadFile(repoPath(t, "manifests/web.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tg.writeManifest("web.yaml", string(web))
	c := tg.waitRunning(startTimeout, "web", "httpd", 0)

	client := &http.Client{Timeout: 2 * time.Second}
	var body string
	tg.waitFor(logTimeout, "http://127.0.0.1:8080/ to answer", func() (bool, error) {
		resp, err := client.Get("http://127.0.0.1:8080/")
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return false, err
		}
		if resp.StatusCode != http.StatusOK {
			return false, fmt.Errorf("%s: %s", resp.Status, b)
		}
		body = string(b)
		return true, nil
	})
	if !strings.Contains(body, "hello from tug") {
		t.Errorf("body = %q, want it to say hello from tug", body)
	}

	got, err := procNS(c.PID, "net")
	if err != nil {
		t.Fatal(err)
	}
	host, err := hostNS("net")
	if err != nil {
		t.Fatal(err)
	}
	if got != host {
		t.Errorf("hostNetwork pod's task is in %s, want the host's %s", got, host)
	}
	if _, err := os.Lstat(filepath.Join(tg.runDir, "ns", tg.uid("web"), "net")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a net namespace was pinned for a hostNetwork pod: %v", err)
	}
}

// requireFreePort skips (fails in CI) the test when addr is taken.
func requireFreePort(t *testing.T, addr string) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		testutil.Missing(t, "%s is taken: %v", addr, err)
		return
	}
	l.Close()
}
