//go:build e2e

// Package e2e runs the tug binary against a real containerd (the private one
// of scripts/testenv.sh), with real runc containers, namespaces, mounts and
// files, and checks from the outside what a user would see.
//
// Every test starts its own tug with startTug: its own manifest, root, run,
// logs and image directories under t.TempDir(), its own network namespace,
// cgroup root and containerd namespace, all removed by t.Cleanup even when
// the test fails. So the tests run in parallel: each starts with
// t.Parallel(), and most of their time is waiting (on a container, a
// back-off, a probe, a watchdog), which other tests fill. The few that
// change what all tests share (the containerd daemon, a core, the disk's
// bandwidth) or time something closely are named in runsAlone
// (parallel_test.go, which checks both rules); Go runs them one at a time
// before the others.
//
//	set -a; source /var/tmp/tug-testenv/env; set +a
//	CI=true go test -tags e2e -count=1 -v ./e2e/
package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"golang.org/x/sys/unix"

	"tug/internal/pod"
	"tug/internal/testutil"
)

// Settings every tug under test runs with.
const (
	hostname      = "e2e"
	fileCheck     = 2 * time.Second
	syncFrequency = 5 * time.Second
	// stopTimeout bounds how long Stop waits for tug to exit after SIGTERM
	// before it kills it.
	stopTimeout = 20 * time.Second
	// cleanupTimeout bounds the removal of a test's containerd objects.
	cleanupTimeout = time.Minute
)

// tugBin is the tug binary built once by TestMain.
var tugBin string

func TestMain(m *testing.M) {
	os.Exit(testutil.RunWithBinary(m, "../agent", &tugBin))
}

// repoPath returns the path of a file of the repository.
func repoPath(t *testing.T, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", rel))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// tugOpts changes what startTug sets up.
type tugOpts struct {
	// noImageArchive leaves the image directory empty (by default the test
	// image's archive is copied into it, so no test needs a registry).
	noImageArchive bool
	// fileCheck overrides --file-check-frequency (default fileCheck).
	fileCheck time.Duration
	// beforeStart, if set, runs when the directories are ready and before
	// tug starts (to write manifests that are there from the start).
	beforeStart func(tg *tug)
	// noStart prepares everything but leaves starting tug to the test
	// (tg.Start, or tg.runOnce).
	noStart bool
	// healthzPort is tug's --healthz-port. 0, the default here, turns the
	// TCP health listener off, so that tests never compete for a port (tug's
	// own default, 10248, may be taken); a test that probes /healthz picks
	// a free port with freePort.
	healthzPort int
	// args are more flags for tug run, after the harness's own (a later
	// flag wins), e.g. "--crash-loop-back-off-initial", "1s".
	args []string
	// netns, if set, is the node (network namespace) tug runs in: another
	// tug's (its tg.netns), for two instances on one node. By default each
	// tug gets a new one.
	netns string
	// env is added to tug's environment (e.g. NOTIFY_SOCKET).
	env []string
	// containerd is the socket of the containerd tug uses (a test's own,
	// startContainerd); "" is the test environment's.
	containerd string
}

// tug is one tug agent under test, with its directories, its containerd
// namespace and a containerd client to look at what it did.
type tug struct {
	t *testing.T

	base        string // t.TempDir() holding everything below
	manifestDir string
	rootDir     string
	runDir      string
	logsDir     string
	imageDir    string
	scratch     string // for temporary files that are renamed into place

	netns       string // the node: the network namespace tug runs in (testutil.NewNetns)
	addr        string // containerd socket
	ns          string // containerd namespace
	image       string // the test image, docker.io/library/busybox:1.35
	archive     string // its OCI archive
	fileCheck   time.Duration
	healthzPort int      // 0: no TCP health listener
	args        []string // tugOpts.args
	env         []string // tugOpts.env
	client      *containerd.Client

	out *testutil.SyncBuffer // tug's stdout and stderr, all runs

	cmd       *exec.Cmd
	startedAt time.Time     // just before cmd started
	exited    chan struct{} // closed when cmd has exited
	waitErr   error         // cmd.Wait's result, set before exited is closed

	// failure is the wait that failed the test, said again after tug's
	// output (CI shows the end of a failed test's output).
	failure string
}

// startTug checks the prerequisites (root, the test containerd, the test
// image), prepares a fresh environment and starts tug in it. Everything is
// removed when the test ends, and tug's output is logged if it failed.
func startTug(t *testing.T, opts tugOpts) *tug {
	t.Helper()
	testutil.RequireRoot(t)
	addr := testutil.RequireContainerd(t)
	if opts.containerd != "" {
		addr = opts.containerd
	}
	image, archive := testutil.TestImage(t)
	testutil.RequireCommand(t, "nsenter")
	// Registered before the namespace's leak check, so it runs last: a
	// test that failed anywhere, the leak check included (a shim left
	// behind), shows what tug did at the end of its output.
	var tg *tug
	t.Cleanup(func() {
		if tg != nil && t.Failed() {
			tg.showOutput()
		}
	})

	base := t.TempDir()
	tg = &tug{
		t:           t,
		base:        base,
		manifestDir: filepath.Join(base, "manifests"),
		rootDir:     filepath.Join(base, "root"),
		runDir:      filepath.Join(base, "run"),
		logsDir:     filepath.Join(base, "logs"),
		imageDir:    filepath.Join(base, "images"),
		scratch:     filepath.Join(base, "scratch"),
		netns:       opts.netns,
		addr:        addr,
		ns:          testutil.Namespace(t),
		image:       image,
		archive:     archive,
		fileCheck:   fileCheck,
		healthzPort: opts.healthzPort,
		args:        opts.args,
		env:         opts.env,
		out:         &testutil.SyncBuffer{},
	}
	if tg.netns == "" {
		tg.netns = testutil.NewNetns(t, "tug-e2e")
	}
	if opts.fileCheck > 0 {
		tg.fileCheck = opts.fileCheck
	}
	for _, d := range []string{tg.manifestDir, tg.rootDir, tg.runDir, tg.logsDir, tg.imageDir, tg.scratch} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	client, err := containerd.New(addr, containerd.WithDefaultNamespace(tg.ns), containerd.WithTimeout(10*time.Second))
	if err != nil {
		t.Fatalf("connect to containerd at %s: %v", addr, err)
	}
	tg.client = client
	t.Cleanup(tg.cleanup)

	if !opts.noImageArchive {
		tg.copyImageArchive()
	}
	if opts.beforeStart != nil {
		opts.beforeStart(tg)
	}
	if !opts.noStart {
		tg.Start()
	}
	return tg
}

// Start starts tug on the test's directories. It may be called again after
// Stop: the new tug finds what the previous one left.
func (tg *tug) Start() {
	tg.t.Helper()
	if tg.running() {
		tg.t.Fatal("Start: tug is already running")
	}
	args := tg.runArgs()
	cmd := tg.command(context.Background(), args...)
	cmd.Stdout, cmd.Stderr = tg.out, tg.out
	if len(tg.env) > 0 {
		cmd.Env = append(os.Environ(), tg.env...)
	}
	// If the test binary dies, tug goes with it (the pods stay, like after
	// any tug crash; the next run's cleanup does not see them, but the
	// namespace name is unique).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	tg.startedAt = time.Now()
	if err := cmd.Start(); err != nil {
		tg.t.Fatalf("start tug: %v", err)
	}
	tg.cmd, tg.exited, tg.waitErr = cmd, make(chan struct{}), nil
	go func(exited chan struct{}) {
		err := cmd.Wait()
		tg.waitErr = err
		close(exited)
	}(tg.exited)
}

// command returns the command that runs tug with args in the node's
// network namespace, and logs it to tug's output. nsenter enters the
// namespace and execs tug (no fork), so the command's process is tug.
func (tg *tug) command(ctx context.Context, args ...string) *exec.Cmd {
	fmt.Fprintf(tg.out, "==== nsenter --net=%s %s %s\n", tg.netns, tugBin, strings.Join(args, " "))
	return exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + tg.netns, tugBin}, args...)...)
}

// runArgs returns the arguments of "tug run" on the test's directories,
// then more (later flags win).
func (tg *tug) runArgs(more ...string) []string {
	args := []string{"run",
		"--pod-manifest-path", tg.manifestDir,
		"--root-dir", tg.rootDir,
		"--run-dir", tg.runDir,
		"--pod-logs-dir", tg.logsDir,
		"--image-dir", tg.imageDir,
		"--containerd-address", tg.addr,
		"--containerd-namespace", tg.ns,
		"--hostname-override", hostname,
		"--file-check-frequency", tg.fileCheck.String(),
		"--sync-frequency", syncFrequency.String(),
		"--log-level", "debug",
		"--healthz-port", strconv.Itoa(tg.healthzPort),
		// A cgroup root of its own: tug removes pod cgroups under its root
		// that no pod of its own has.
		"--cgroup-root", tg.cgroupRoot(),
	}
	args = append(args, tg.args...)
	return append(args, more...)
}

// forTest returns a copy of tg that reports to t, a subtest: the same tug
// process, directories and output.
func (tg *tug) forTest(t *testing.T) *tug {
	c := *tg
	c.t = t
	return &c
}

// running reports whether a started tug has not exited yet.
func (tg *tug) running() bool {
	if tg.exited == nil {
		return false
	}
	select {
	case <-tg.exited:
		return false
	default:
		return true
	}
}

// Stop sends SIGTERM to tug and waits for it to exit (killing it after
// stopTimeout). It returns how tug exited: nil for status 0. Stopping a tug
// that is not running returns its earlier result.
func (tg *tug) Stop() error {
	if tg.exited == nil {
		return nil
	}
	if tg.running() {
		_ = tg.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-tg.exited:
		case <-time.After(stopTimeout):
			_ = tg.cmd.Process.Kill()
			<-tg.exited
			return fmt.Errorf("tug did not exit within %v of SIGTERM (killed)", stopTimeout)
		}
	}
	return tg.waitErr
}

// Kill sends SIGKILL to tug, as a crash or the OOM killer would, and waits
// until it has exited. The pods, and what tug left on disk (its stale API
// socket among it), stay.
func (tg *tug) Kill() {
	if !tg.running() {
		return
	}
	_ = tg.cmd.Process.Kill()
	<-tg.exited
}

// cleanup stops tug and removes what it leaves by design: its pods (tasks
// and containers with their snapshots) and its image cache; then mounts
// under the test's directory (t.TempDir removes the files afterwards) and
// the pods' cgroups. Anything else left in the containerd namespace (a
// snapshot, lease or blob tug did not release) fails the test in the leak
// check of testutil.Namespace, which runs after this and deletes the
// namespace.
func (tg *tug) cleanup() {
	t := tg.t
	if err := tg.Stop(); err != nil {
		t.Logf("stopping tug: %v", err)
	}
	ctx, cancel := context.WithTimeout(namespaces.WithNamespace(context.Background(), tg.ns), cleanupTimeout)
	defer cancel()
	if err := testutil.RemoveContainers(ctx, tg.client); err != nil {
		t.Errorf("cleanup: containerd namespace %s: %v", tg.ns, err)
	}
	if err := testutil.RemoveImages(ctx, tg.client); err != nil {
		t.Errorf("cleanup: containerd namespace %s: %v", tg.ns, err)
	}
	if err := testutil.RemovePullLeases(ctx, tg.client); err != nil {
		t.Errorf("cleanup: containerd namespace %s: %v", tg.ns, err)
	}
	if err := unmountUnder(tg.base); err != nil {
		t.Errorf("cleanup: %v", err)
	}
	if err := removeCgroupTree(tg.cgroupRoot()); err != nil {
		t.Errorf("cleanup: %v", err)
	}
	tg.client.Close()
}

// showOutput logs tug's output, then its last non-DEBUG lines and the wait
// that failed (CI shows the end of a failed test's output).
func (tg *tug) showOutput() {
	out := tg.out.String()
	tg.t.Logf("tug output:\n%s", out)
	tg.t.Logf("tug's output without DEBUG, last %d lines:\n%s", failureTail, withoutDebug(out, failureTail))
	if tg.failure != "" {
		tg.t.Logf("the test failed %s", tg.failure)
	}
}

// failureTail is how many of tug's non-DEBUG lines a failed test repeats
// at its end.
const failureTail = 40

// withoutDebug returns the last n lines of tug's output that are not at
// level DEBUG.
func withoutDebug(out string, n int) string {
	var keep []string
	for line := range strings.Lines(out) {
		if !strings.Contains(line, "level=DEBUG") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep[max(0, len(keep)-n):], "")
}

func ignoreNotFound(err error) error {
	if isNotFound(err) {
		return nil
	}
	return err
}

// unmountUnder detaches every mount at or below dir, deepest first. (The
// pinned namespaces live below <run>/ns, which is a shared bind mount of
// itself; emptyDir tmpfs mounts live below <root>/pods.)
func unmountUnder(dir string) error {
	var last []string
	for range 10 {
		ms, err := mountsUnder(dir)
		if err != nil {
			return err
		}
		if len(ms) == 0 {
			return nil
		}
		last = last[:0]
		slices.SortFunc(ms, func(a, b mountInfo) int { return len(b.point) - len(a.point) })
		for _, m := range ms {
			if err := unix.Unmount(m.point, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
				last = append(last, fmt.Sprintf("%s: %v", m.point, err))
			}
		}
	}
	return fmt.Errorf("mounts left under %s: %v", dir, last)
}

// copyImageArchive copies the test image's archive into the image
// directory the way a user would (cp: written in place).
func (tg *tug) copyImageArchive() {
	tg.t.Helper()
	src, err := os.Open(tg.archive)
	if err != nil {
		tg.t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(filepath.Join(tg.imageDir, filepath.Base(tg.archive)))
	if err != nil {
		tg.t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		tg.t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		tg.t.Fatal(err)
	}
}

// writeManifest writes a manifest atomically: a temporary file outside the
// manifest directory, renamed into it. name may contain a subdirectory.
func (tg *tug) writeManifest(name, yaml string) {
	tg.t.Helper()
	f, err := os.CreateTemp(tg.scratch, "manifest-")
	if err != nil {
		tg.t.Fatal(err)
	}
	_, err = f.WriteString(yaml)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		tg.t.Fatal(err)
	}
	dst := filepath.Join(tg.manifestDir, name)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		tg.t.Fatal(err)
	}
	if err := os.Rename(f.Name(), dst); err != nil {
		tg.t.Fatal(err)
	}
}

// manifestPath returns the path of a manifest file.
func (tg *tug) manifestPath(name string) string { return filepath.Join(tg.manifestDir, name) }

// uid returns the UID tug gives the pod named name (as written in the
// manifest) in namespace default of the manifest directory.
func (tg *tug) uid(name string) string {
	return pod.UID("file:"+tg.manifestDir, "default", staticName(name))
}

// emptyDir returns where, on the host, tug keeps the emptyDir volume of
// the pod named name (as in uid).
func (tg *tug) emptyDir(name, volume string) string {
	return filepath.Join(tg.rootDir, "pods", tg.uid(name), "volumes", "empty-dir", volume)
}

// refusedToStart runs "tug run" with the test's settings and args, within
// timeout, and fails t unless tug exits with status 1 and its output names
// each of want.
func (tg *tug) refusedToStart(t *testing.T, timeout time.Duration, args []string, want ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := tg.command(ctx, tg.runArgs(args...)...).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("tug run %v: %v, output:\n%s\nwant exit 1", args, err, out)
	}
	for _, w := range want {
		if !strings.Contains(string(out), w) {
			t.Errorf("output does not name %q:\n%s", w, out)
		}
	}
}

// staticName is the pod name tug uses: the manifest's with the host name
// appended.
func staticName(name string) string { return name + "-" + hostname }

// output returns what tug wrote so far (all runs).
func (tg *tug) output() string { return tg.out.String() }

// waitFor is waitFor that also fails at once when tug has exited.
func (tg *tug) waitFor(timeout time.Duration, what string, cond func() (bool, error)) {
	tg.t.Helper()
	var last error
	defer func() {
		if tg.t.Failed() && tg.failure == "" {
			tg.failure = fmt.Sprintf("waiting for %s; last error: %v", what, last)
		}
	}()
	waitFor(tg.t, timeout, what, func() (bool, error) {
		if tg.exited != nil && !tg.running() {
			return false, fmt.Errorf("%w (tug exited: %v)", errStop, tg.waitErr)
		}
		ok, err := cond()
		last = err
		return ok, err
	})
}

// waitForOutput waits until tug's output contains every one of subs on one
// line, and returns that line.
func (tg *tug) waitForOutput(timeout time.Duration, subs ...string) string {
	tg.t.Helper()
	var line string
	tg.waitFor(timeout, fmt.Sprintf("tug to log a line with %q", subs), func() (bool, error) {
		line = findLine(tg.output(), subs...)
		return line != "", nil
	})
	return line
}

// findLine returns the first line of text that contains every one of subs,
// or "".
func findLine(text string, subs ...string) string {
	for line := range strings.Lines(text) {
		ok := true
		for _, s := range subs {
			if !strings.Contains(line, s) {
				ok = false
				break
			}
		}
		if ok {
			return strings.TrimSuffix(line, "\n")
		}
	}
	return ""
}

// errStop, wrapped in a condition's error, ends waitFor at once.
var errStop = errors.New("giving up")

// waitFor polls cond every 20 ms until it reports true, and fails the test
// if that takes longer than timeout, with what it was waiting for and the
// condition's last error. A condition error wrapping errStop fails at once.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		ok, err := cond()
		if ok {
			t.Logf("%s: after %v", what, time.Since(start).Round(time.Millisecond))
			return
		}
		if errors.Is(err, errStop) {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if time.Now().After(deadline) {
			if err != nil {
				t.Fatalf("timed out after %v waiting for %s; last error: %v", timeout, what, err)
			}
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
