//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHostNetworkHTTP(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	web, err := os.ReadFile(repoPath(t, "manifests/web.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tg.writeManifest("web.yaml", string(web))
	c := tg.waitRunning(startTimeout, "web", "httpd", 0)

	client := tg.nodeHTTPClient() // the node is the namespace tug runs in
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
	node, err := procNS(uint32(tg.cmd.Process.Pid), "net")
	if err != nil {
		t.Fatal(err)
	}
	if got != node {
		t.Errorf("hostNetwork pod's task is in %s, want the node's (tug's) %s", got, node)
	}
	if _, err := os.Lstat(filepath.Join(tg.runDir, "ns", tg.uid("web"), "net")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a net namespace was pinned for a hostNetwork pod: %v", err)
	}
}
