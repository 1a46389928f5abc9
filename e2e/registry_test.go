//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tug/internal/testutil"
)

// testRegistry is a docker-registry (Debian's distribution 2.x) of one
// test, on a free loopback port, with storage of its own or the test
// environment's (read-only), that a test stops and starts again to make a
// registry unreachable. Plain HTTP, like the test environment's registry.
type testRegistry struct {
	t    *testing.T
	Addr string // 127.0.0.1:PORT
	Dir  string // its storage root
	cfg  string // its config file
	log  string // its log file
	cmd  *exec.Cmd
}

// registryOpts say what a testRegistry serves.
type registryOpts struct {
	// shared serves the test environment's registry storage read-only (the
	// busybox image at tug/busybox:1.35); otherwise the registry starts
	// empty with storage of its own.
	shared bool
	// auth is an htpasswd file's content: basic auth when not empty.
	auth string
}

// startRegistry starts a registry for t; the end of the test stops it and
// prints its log if the test failed.
func startRegistry(t *testing.T, o registryOpts) *testRegistry {
	t.Helper()
	testutil.RequireCommand(t, "docker-registry")
	base := t.TempDir()
	r := &testRegistry{
		t:    t,
		Addr: fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		Dir:  filepath.Join(base, "storage"),
		cfg:  filepath.Join(base, "registry.yml"),
		log:  filepath.Join(base, "registry.log"),
	}
	readonly := "false"
	if o.shared {
		dir := os.Getenv("TUG_TESTENV_DIR")
		if dir == "" {
			testutil.Missing(t, "TUG_TESTENV_DIR must be set (eval \"$(scripts/testenv.sh env)\")")
			return nil
		}
		r.Dir, readonly = filepath.Join(dir, "registry"), "true"
	}
	auth := ""
	if o.auth != "" {
		htpasswd := filepath.Join(base, "htpasswd")
		must(t, os.WriteFile(htpasswd, []byte(o.auth), 0o600))
		auth = "auth:\n  htpasswd:\n    realm: tug-e2e\n    path: " + htpasswd + "\n"
	}
	must(t, os.WriteFile(r.cfg, []byte(`version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: `+r.Dir+`
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
    readonly:
      enabled: `+readonly+`
`+auth+`http:
  addr: `+r.Addr+`
`), 0o600))
	t.Cleanup(func() {
		r.Stop()
		if t.Failed() {
			b, _ := os.ReadFile(r.log)
			t.Logf("registry %s log:\n%s", r.Addr, b)
		}
	})
	r.Start()
	return r
}

// Start starts the registry (again) and waits until it listens.
func (r *testRegistry) Start() {
	r.t.Helper()
	if r.cmd != nil {
		return
	}
	logf, err := os.OpenFile(r.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	must(r.t, err)
	defer logf.Close()
	cmd := exec.Command("docker-registry", "serve", r.cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	must(r.t, cmd.Start())
	r.cmd = cmd
	waitFor(r.t, 10*time.Second, "registry "+r.Addr+" listening", func() (bool, error) {
		c, err := net.DialTimeout("tcp", r.Addr, time.Second)
		if err != nil {
			return false, err
		}
		c.Close()
		return true, nil
	})
}

// Stop kills the registry; connections to its port are refused until
// Start.
func (r *testRegistry) Stop() {
	if r.cmd == nil {
		return
	}
	r.cmd.Process.Kill()
	r.cmd.Wait()
	r.cmd = nil
}

// Ref is a reference to repository path (and tag or digest) on this
// registry, e.g. r.Ref("tug/busybox:1.35").
func (r *testRegistry) Ref(path string) string { return r.Addr + "/" + strings.TrimPrefix(path, "/") }

// testImageGetter returns a GET of the test registry's test image
// repository: get("/manifests/TAG" or "/blobs/DIGEST", accept) returns
// the body of a 200 answer and fails the test on any other; repo and tag
// are the test image's in that registry.
func testImageGetter(t *testing.T) (get func(path, accept string) []byte, repo, tag string) {
	t.Helper()
	ref := testutil.RegistryImage(t) // 127.0.0.1:PORT/REPO:TAG
	host, rest, _ := strings.Cut(ref, "/")
	repo, tag, _ = strings.Cut(rest, ":")
	return func(path, accept string) []byte {
		req, err := http.NewRequest(http.MethodGet, "http://"+host+"/v2/"+repo+path, nil)
		must(t, err)
		req.Header.Set("Accept", accept)
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		must(t, err)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s from the test registry: %s", path, resp.Status)
		}
		return b
	}, repo, tag
}
