package testutil

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
)

// The environment variables written by scripts/testenv.sh.
const (
	EnvContainerd    = "TUG_TEST_CONTAINERD"
	EnvImage         = "TUG_TEST_IMAGE"
	EnvImageArchive  = "TUG_TEST_IMAGE_ARCHIVE"
	EnvRegistry      = "TUG_TEST_REGISTRY"
	EnvRegistryImage = "TUG_TEST_REGISTRY_IMAGE"
)

// hint tells a developer how to get the test environment.
const hint = `(run "scripts/testenv.sh up" as root and eval "$(scripts/testenv.sh env)")`

// probeTimeout bounds every check of a daemon a helper makes.
const probeTimeout = 5 * time.Second

// InCI reports whether the tests run in CI, that is whether the environment
// variable CI holds a true value ("true", "1", ...; GitHub Actions, GitLab
// and most CI systems set CI=true).
func InCI() bool {
	ci, err := strconv.ParseBool(os.Getenv("CI"))
	return err == nil && ci
}

// Missing ends the test because a prerequisite is missing: t.Skipf with the
// reason on a developer's machine, t.Fatalf in CI (see InCI).
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if InCI() {
		t.Fatalf("CI=true and a prerequisite is missing: "+format, args...)
		return
	}
	t.Skipf("skipping: "+format, args...)
}

// RequireRoot skips (fails in CI) the test unless it runs as root.
func RequireRoot(t testing.TB) {
	t.Helper()
	if uid := os.Geteuid(); uid != 0 {
		Missing(t, "requires root (running as uid %d)", uid)
	}
}

// RequireCommand skips (fails in CI) the test unless the named command is
// found in PATH.
func RequireCommand(t testing.TB, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		Missing(t, "requires command %q: %v", name, err)
	}
}

// RequireContainerd skips (fails in CI) the test unless the containerd named
// by TUG_TEST_CONTAINERD answers a Version call within 5 s, and returns its
// address. It needs root, and checks that too.
func RequireContainerd(t testing.TB) string {
	t.Helper()
	addr := os.Getenv(EnvContainerd)
	if addr == "" {
		Missing(t, "%s is not set %s", EnvContainerd, hint)
		return ""
	}
	if uid := os.Geteuid(); uid != 0 {
		Missing(t, "containerd tests require root (running as uid %d)", uid)
		return ""
	}
	if fi, err := os.Stat(addr); err != nil || fi.Mode().Type() != os.ModeSocket {
		Missing(t, "%s=%s is not a socket %s", EnvContainerd, addr, hint)
		return ""
	}
	version, err := containerdVersion(addr)
	if err != nil {
		Missing(t, "containerd at %s (%s) does not answer: %v %s", addr, EnvContainerd, err, hint)
		return ""
	}
	t.Logf("containerd %s at %s", version, addr)
	return addr
}

// containerdVersion asks the containerd at addr (a unix socket path) for
// its version, within probeTimeout.
func containerdVersion(addr string) (string, error) {
	client, err := containerd.New(addr, containerd.WithTimeout(probeTimeout))
	if err != nil {
		return "", fmt.Errorf("connect: %w", err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	v, err := client.Version(ctx)
	if err != nil {
		return "", fmt.Errorf("version: %w", err)
	}
	return v.Version, nil
}

// TestImage returns the name of the test image (docker.io/library/busybox:1.35)
// and the path of its OCI archive, skipping (failing in CI) the test when the
// test environment does not provide them.
func TestImage(t testing.TB) (name, archive string) {
	t.Helper()
	name, archive = os.Getenv(EnvImage), os.Getenv(EnvImageArchive)
	if name == "" || archive == "" {
		Missing(t, "%s and %s must be set %s", EnvImage, EnvImageArchive, hint)
		return "", ""
	}
	if _, err := os.Stat(archive); err != nil {
		Missing(t, "test image archive: %v %s", err, hint)
		return "", ""
	}
	return name, archive
}

// RegistryImage returns the test image's reference in the test registry
// (127.0.0.1:PORT/tug/busybox:1.35, plain HTTP), skipping (failing in CI) the
// test unless the registry answers.
func RegistryImage(t testing.TB) string {
	t.Helper()
	ref, registry := os.Getenv(EnvRegistryImage), os.Getenv(EnvRegistry)
	if ref == "" || registry == "" {
		Missing(t, "%s and %s must be set %s", EnvRegistryImage, EnvRegistry, hint)
		return ""
	}
	if err := registryAnswers(registry); err != nil {
		Missing(t, "test registry %s does not answer: %v %s", registry, err, hint)
		return ""
	}
	return ref
}

func registryAnswers(registry string) error {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+registry+"/v2/", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /v2/: %s", resp.Status)
	}
	return nil
}

// maxNamespace is the length limit of Namespace's result (containerd allows
// 76; this leaves room for a caller's own suffix).
const maxNamespace = 60

// Namespace returns a containerd namespace for this test: t.Name()
// lowercased, with every run of characters outside [a-z0-9] turned into one
// '-', cut so that with a random suffix it is at most 60 characters, e.g.
// "testpodruntime-start-restart-3f9a1c". Each call returns a new name.
//
// Removing what the test creates in it is up to the test's own clean-up
// (t.Cleanup, registered after this call, so that it runs before). Namespace
// registers the leak check that runs last: whatever is still in the
// namespace then (tasks, containers, images, leases, snapshots, blobs,
// ingests, and shim processes of the namespace still running 5 s later) is
// removed and FAILS the test, and the namespace is deleted. A
// test that leaves containers for tug to adopt, or tug's image cache, must
// still remove them in its own clean-up (RemoveContainers, RemoveImages).
// The containerd is TUG_TEST_CONTAINERD's (see RequireContainerd).
func Namespace(t testing.TB) string {
	t.Helper()
	addr := containerdAddr()
	if addr == "" {
		Missing(t, "%s is not set %s", EnvContainerd, hint)
		return ""
	}
	ns := newNamespace(t)
	t.Cleanup(func() { checkNamespace(t, addr, ns) })
	return ns
}

// newNamespace is a fresh namespace name for t: its name and a random
// suffix.
func newNamespace(t testing.TB) string {
	t.Helper()
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("namespace suffix: %v", err)
	}
	return namespaceFor(t.Name(), hex.EncodeToString(b[:]))
}

// namespaceFor builds Namespace's result from a test name and a suffix made
// of [a-z0-9].
func namespaceFor(name, suffix string) string {
	var sb strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && sb.Len() > 0 {
				sb.WriteByte('-')
			}
			sb.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	base := sb.String()
	if n := maxNamespace - len(suffix) - 1; len(base) > n {
		base = strings.TrimRight(base[:n], "-")
	}
	if base == "" {
		base = "test"
	}
	return base + "-" + suffix
}

// Logger returns a logger at Debug level that writes through t.Log, so its
// output appears with the test's and only when the test fails or runs with
// -v. Records logged after the test has finished (by a goroutine that
// outlived it) are dropped instead of panicking. Safe for concurrent use.
func Logger(t testing.TB) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(w.close)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testWriter) close() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}
