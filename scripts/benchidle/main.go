// Command benchidle measures what tug costs when nothing happens ("make
// bench"): it starts tug with N one-container pods (busybox sleep), waits
// until all run and the start-up has settled, then measures tug's CPU time
// over an idle window and its memory at the end. containerd, measured over
// the same window, is the baseline a reader can compare with; the shims and
// tug's per-container log drivers are shown too.
//
//	go run ./scripts/benchidle [-pods 30] [-settle 10s] [-window 60s] [-tug ./tug] [-keep]
//
// It needs root and a containerd (scripts/testenv.sh up; the defaults come
// from its env file's variables). It prints PASS/FAIL against the targets
// of the lifecycle issue (idle CPU under 1% of one core, RSS under 30 MiB)
// and exits 0 whether they are met or not: it is a measurement.
// docs/benchmarks.md holds measured numbers.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/images"
	"github.com/containerd/containerd/namespaces"
	"golang.org/x/sys/unix"

	"tug/internal/api"
	"tug/internal/pod"
	"tug/scripts/internal/benchns"
)

// The containerd namespace of the benchmark, and the host name tug is given.
const (
	namespace = "bench-idle"
	hostname  = "bench"
)

// Targets from the lifecycle issue.
const (
	targetCPU = 1.0 // % of one core
	targetRSS = 30  // MiB
)

type options struct {
	containerd    string
	containerdPID int
	image         string
	archive       string
	tug           string
	pods          int
	settle        time.Duration
	window        time.Duration
	keep          bool
}

func main() {
	var o options
	flag.StringVar(&o.containerd, "containerd", os.Getenv("TUG_TEST_CONTAINERD"), "containerd socket (default $TUG_TEST_CONTAINERD)")
	flag.IntVar(&o.containerdPID, "containerd-pid", 0, "pid of that containerd, for the baseline (default: from $TUG_TESTENV_DIR/containerd.pid)")
	flag.StringVar(&o.image, "image", envOr("TUG_TEST_IMAGE", "docker.io/library/busybox:1.35"), "image of the pods (default $TUG_TEST_IMAGE)")
	flag.StringVar(&o.archive, "archive", os.Getenv("TUG_TEST_IMAGE_ARCHIVE"), "OCI archive holding -image, put in tug's image directory (default $TUG_TEST_IMAGE_ARCHIVE)")
	flag.StringVar(&o.tug, "tug", "", "tug binary (default: build ./agent into the work directory)")
	flag.IntVar(&o.pods, "pods", 30, "number of running one-container pods")
	flag.DurationVar(&o.settle, "settle", 10*time.Second, "wait after all pods run, before measuring")
	flag.DurationVar(&o.window, "window", 60*time.Second, "idle window measured")
	flag.BoolVar(&o.keep, "keep", false, "keep the work directory (tug's log) instead of removing it")
	flag.Parse()

	err := o.check()
	if err == nil {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		err = run(ctx, o)
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchidle:", err)
		os.Exit(1)
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func (o *options) check() error {
	var errs []error
	if o.containerd == "" {
		errs = append(errs, errors.New("-containerd: not set and $TUG_TEST_CONTAINERD is empty (eval \"$(scripts/testenv.sh env)\")"))
	}
	if o.archive == "" {
		errs = append(errs, errors.New("-archive: not set and $TUG_TEST_IMAGE_ARCHIVE is empty"))
	}
	if o.containerdPID == 0 {
		pid, err := testenvContainerdPID()
		if err != nil {
			errs = append(errs, fmt.Errorf("-containerd-pid: not set, and %w", err))
		}
		o.containerdPID = pid
	}
	if o.pods < 1 || o.pods > 200 {
		errs = append(errs, errors.New("-pods: from 1 to 200"))
	}
	if o.window < time.Second {
		errs = append(errs, errors.New("-window: at least 1s"))
	}
	if os.Geteuid() != 0 {
		errs = append(errs, errors.New("needs root (containerd, namespaces, mounts)"))
	}
	return errors.Join(errs...)
}

// testenvContainerdPID reads the pid of scripts/testenv.sh's containerd.
func testenvContainerdPID() (int, error) {
	dir := os.Getenv("TUG_TESTENV_DIR")
	if dir == "" {
		return 0, errors.New("$TUG_TESTENV_DIR is empty")
	}
	data, err := os.ReadFile(filepath.Join(dir, "containerd.pid"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}

// bench is one run: the work directory, the containerd client and tug.
type bench struct {
	o       options
	dir     string
	client  *containerd.Client
	tug     *exec.Cmd
	netns   *benchns.Netns // tug's network namespace, deleted when it exits
	exited  chan struct{}
	logPath string
}

func (b *bench) path(elem ...string) string {
	return filepath.Join(append([]string{b.dir}, elem...)...)
}

func run(ctx context.Context, o options) (err error) {
	if _, err := readTicks(o.containerdPID); err != nil {
		return fmt.Errorf("containerd pid %d: %w", o.containerdPID, err)
	}
	client, err := containerd.New(o.containerd, containerd.WithTimeout(10*time.Second))
	if err != nil {
		return fmt.Errorf("connect to containerd at %s: %w", o.containerd, err)
	}
	dir, err := os.MkdirTemp("", "tug-benchidle-")
	if err != nil {
		client.Close()
		return err
	}
	b := &bench{o: o, dir: dir, client: client, logPath: filepath.Join(dir, "tug.log")}
	defer func() { err = errors.Join(err, b.teardown()) }()
	fmt.Fprintf(os.Stderr, "benchidle: work directory %s\n", dir)
	if err := purge(ctx, client); err != nil {
		return fmt.Errorf("remove leftovers of an earlier run: %w", err)
	}
	if err := b.prepare(ctx); err != nil {
		return err
	}
	if err := b.startTug(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "benchidle: tug started (pid %d, log %s); waiting for %d pods to run\n", b.tug.Process.Pid, b.logPath, o.pods)
	t0 := time.Now()
	if err := b.waitRunning(ctx, 3*time.Minute); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "benchidle: %d pods running after %v; settling %v\n", o.pods, time.Since(t0).Round(time.Millisecond), o.settle)
	if err := sleep(ctx, o.settle); err != nil {
		return err
	}
	res, err := b.measure(ctx)
	if err != nil {
		return err
	}
	if err := b.checkStillRunning(ctx, res.pids); err != nil {
		return err
	}
	report(os.Stdout, o, res)
	return nil
}

// prepare writes the manifests and puts the image archive into tug's image
// directory (tug imports it at start, as on an offline device), and builds
// tug unless -tug names a binary.
func (b *bench) prepare(ctx context.Context) error {
	for _, d := range []string{"manifests", "root", "run", "logs", "images"} {
		if err := os.MkdirAll(b.path(d), 0o700); err != nil {
			return err
		}
	}
	for i := range b.o.pods {
		name := fmt.Sprintf("idle-%02d", i)
		m := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - name: main
      image: %s
      command: ["sleep", "86400"]
`, name, b.o.image)
		if err := os.WriteFile(b.path("manifests", name+".yaml"), []byte(m), 0o644); err != nil {
			return err
		}
	}
	if err := copyFile(b.o.archive, b.path("images", filepath.Base(b.o.archive))); err != nil {
		return fmt.Errorf("image archive: %w", err)
	}
	if b.o.tug != "" {
		return nil
	}
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		return fmt.Errorf("find tug's module (run from the repository): %v", err)
	}
	b.o.tug = b.path("tug")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", b.o.tug, "./agent")
	cmd.Dir = filepath.Dir(gomod)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build tug: %w\n%s", err, out)
	}
	return nil
}

// startTug starts tug as it runs in production (log level info, the health
// port on, here a free one), on the work directory.
func (b *bench) startTug() error {
	port, err := freePort()
	if err != nil {
		return err
	}
	logf, err := os.Create(b.logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	if b.netns, err = benchns.New("idle"); err != nil {
		return err
	}
	b.tug = b.netns.Command(b.o.tug, "run",
		"--pod-manifest-path", b.path("manifests"),
		"--root-dir", b.path("root"),
		"--run-dir", b.path("run"),
		"--pod-logs-dir", b.path("logs"),
		"--image-dir", b.path("images"),
		"--containerd-address", b.o.containerd,
		"--containerd-namespace", namespace,
		"--hostname-override", hostname,
		"--healthz-port", strconv.Itoa(port))
	b.tug.Stdout, b.tug.Stderr = logf, logf
	// Own process group: a ^C reaches tug only through teardown.
	b.tug.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := b.tug.Start(); err != nil {
		b.netns.Delete()
		return fmt.Errorf("start tug: %w", err)
	}
	b.exited = make(chan struct{})
	go func() {
		_ = b.tug.Wait()
		b.netns.Delete(b.path("run", "node-net"))
		close(b.exited)
	}()
	return nil
}

func (b *bench) tugExited() bool {
	select {
	case <-b.exited:
		return true
	default:
		return false
	}
}

// waitRunning waits until tug's API lists every pod Running with its
// container running.
func (b *bench) waitRunning(ctx context.Context, timeout time.Duration) error {
	c := &api.Client{SocketPath: b.path("run", "tug.sock")}
	deadline := time.Now().Add(timeout)
	last := "no answer yet"
	for time.Now().Before(deadline) {
		if b.tugExited() {
			return fmt.Errorf("tug exited (%v); see %s", b.tug.ProcessState, b.logPath)
		}
		if list, err := c.Pods(ctx); err != nil {
			last = err.Error()
		} else {
			running := 0
			for _, v := range list.Items {
				if v.Status.Phase == pod.PhaseRunning && len(v.Status.ContainerStatuses) == 1 && v.Status.ContainerStatuses[0].State.Running != nil {
					running++
				}
			}
			if running == b.o.pods {
				return nil
			}
			last = fmt.Sprintf("%d of %d pods running", running, b.o.pods)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("pods not running within %v: %s", timeout, last)
}

// procGroup is one process or a set of like processes, measured together.
type procGroup struct {
	name string
	pids []int
	// ticks is their CPU time (utime+stime) at the start of the window.
	ticks uint64
}

// result is what measure found.
type result struct {
	window time.Duration
	clkTck uint64
	groups []groupResult
	pids   map[string]int // container ID -> task pid, at the start
}

type groupResult struct {
	name           string
	n              int
	cpuPercent     float64 // of one core, over the window
	rssMiB, hwmMiB float64 // VmRSS and VmHWM at the end (summed over a group)
	pssMiB         float64 // proportional set size at the end, summed
}

// measure reads the CPU time of tug, containerd, the pods' shims and tug's
// log drivers at the start and the end of the idle window, and their memory
// at the end.
func (b *bench) measure(ctx context.Context) (result, error) {
	res := result{window: b.o.window, clkTck: clockTicks()}
	pids, err := taskPIDs(ctx, b.client)
	if err != nil {
		return res, err
	}
	if len(pids) != b.o.pods {
		return res, fmt.Errorf("%d tasks in namespace %s, want %d", len(pids), namespace, b.o.pods)
	}
	res.pids = pids
	shims, loggers, err := findHelpers(b.o.containerd, b.o.tug, b.path("logs"))
	if err != nil {
		return res, err
	}
	groups := []*procGroup{
		{name: "tug run", pids: []int{b.tug.Process.Pid}},
		{name: "containerd", pids: []int{b.o.containerdPID}},
		{name: "containerd-shim-runc-v2", pids: shims},
		{name: "tug logger", pids: loggers},
	}
	for _, g := range groups {
		if g.ticks, err = sumTicks(g.pids); err != nil {
			return res, fmt.Errorf("%s: %w", g.name, err)
		}
	}
	start := time.Now()
	fmt.Fprintf(os.Stderr, "benchidle: measuring %v idle (tug pid %d, containerd pid %d, %d shims, %d log drivers)\n",
		b.o.window, b.tug.Process.Pid, b.o.containerdPID, len(shims), len(loggers))
	if err := sleep(ctx, b.o.window); err != nil {
		return res, err
	}
	res.window = time.Since(start)
	if b.tugExited() {
		return res, fmt.Errorf("tug exited during the window (%v)", b.tug.ProcessState)
	}
	for _, g := range groups {
		end, err := sumTicks(g.pids)
		if err != nil {
			return res, fmt.Errorf("%s: %w", g.name, err)
		}
		r := groupResult{name: g.name, n: len(g.pids)}
		cpu := float64(end-g.ticks) / float64(res.clkTck)
		r.cpuPercent = 100 * cpu / res.window.Seconds()
		for _, pid := range g.pids {
			m, err := readMemory(pid)
			if err != nil {
				return res, fmt.Errorf("%s: %w", g.name, err)
			}
			r.rssMiB += m.rss
			r.hwmMiB += m.hwm
			r.pssMiB += m.pss
		}
		res.groups = append(res.groups, r)
	}
	return res, nil
}

// checkStillRunning checks that the pods' tasks are the ones measured: an
// idle window with a restart in it would not be idle.
func (b *bench) checkStillRunning(ctx context.Context, before map[string]int) error {
	now, err := taskPIDs(ctx, b.client)
	if err != nil {
		return err
	}
	for id, pid := range before {
		if now[id] != pid {
			return fmt.Errorf("task %s changed during the window (pid %d, now %d)", id, pid, now[id])
		}
	}
	return nil
}

func report(w io.Writer, o options, res result) {
	fmt.Fprintf(w, "\nbenchidle: %d pods running, %v idle window after %v of settling, CLK_TCK %d\n\n",
		o.pods, res.window.Round(time.Millisecond), o.settle, res.clkTck)
	fmt.Fprintf(w, "%-26s %5s %22s %10s %12s %10s\n", "process", "count", "CPU (% of one core)", "RSS (MiB)", "VmHWM (MiB)", "PSS (MiB)")
	for _, g := range res.groups {
		fmt.Fprintf(w, "%-26s %5d %21.3f%% %10.1f %12.1f %10.1f\n", g.name, g.n, g.cpuPercent, g.rssMiB, g.hwmMiB, g.pssMiB)
	}
	fmt.Fprintln(w, "(RSS, VmHWM and PSS are summed over a group's processes; RSS counts shared pages in each.)")
	tug, ctd := res.groups[0], res.groups[1]
	fmt.Fprintln(w)
	fmt.Fprintf(w, "idle CPU: %.3f%% of one core (target < %g%%)  %s\n", tug.cpuPercent, targetCPU, verdict(tug.cpuPercent < targetCPU))
	fmt.Fprintf(w, "RSS: %.1f MiB (target < %d MiB)  %s  (VmHWM %.1f MiB)\n", tug.rssMiB, targetRSS, verdict(tug.rssMiB < targetRSS), tug.hwmMiB)
	fmt.Fprintf(w, "baseline, containerd over the same window: idle CPU %.3f%% of one core, RSS %.1f MiB (VmHWM %.1f MiB)\n",
		ctd.cpuPercent, ctd.rssMiB, ctd.hwmMiB)
}

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// teardown stops tug, removes the pods it ran and everything else the
// benchmark made: containers, images and the namespace in containerd, the
// mounts under the work directory, the work directory. It uses its own
// context: it also runs after an interrupt.
func (b *bench) teardown() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var errs []error
	if b.tug != nil && !b.tugExited() {
		// Let tug remove its pods (containers, namespace pins, log
		// directories), then stop it.
		ms, _ := filepath.Glob(b.path("manifests", "*.yaml"))
		for _, m := range ms {
			errs = append(errs, os.Remove(m))
		}
		if err := waitNoContainers(ctx, b.client, time.Minute); err != nil {
			fmt.Fprintf(os.Stderr, "benchidle: tug did not remove its pods: %v; removing them directly\n", err)
		}
		_ = b.tug.Process.Signal(syscall.SIGTERM)
		select {
		case <-b.exited:
		case <-time.After(20 * time.Second):
			_ = b.tug.Process.Kill()
			<-b.exited
		}
	}
	errs = append(errs, purge(ctx, b.client), removeNamespace(ctx, b.client))
	errs = append(errs, b.client.Close())
	errs = append(errs, unmountUnder(b.dir))
	if b.o.keep {
		fmt.Fprintf(os.Stderr, "benchidle: kept %s\n", b.dir)
	} else if err := errors.Join(errs...); err == nil {
		errs = append(errs, os.RemoveAll(b.dir))
	} else {
		fmt.Fprintf(os.Stderr, "benchidle: clean-up failed, kept %s\n", b.dir)
	}
	return errors.Join(errs...)
}

// taskPIDs returns the pid of every task in the namespace, by container ID.
func taskPIDs(ctx context.Context, client *containerd.Client) (map[string]int, error) {
	ctx = namespaces.WithNamespace(ctx, namespace)
	ctrs, err := client.Containers(ctx)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	out := map[string]int{}
	for _, c := range ctrs {
		task, err := c.Task(ctx, nil)
		if err != nil {
			return nil, fmt.Errorf("task of %s: %w", c.ID(), err)
		}
		st, err := task.Status(ctx)
		if err != nil {
			return nil, fmt.Errorf("task of %s: %w", c.ID(), err)
		}
		if st.Status != containerd.Running {
			return nil, fmt.Errorf("task of %s is %s", c.ID(), st.Status)
		}
		out[c.ID()] = int(task.Pid())
	}
	return out, nil
}

// waitNoContainers waits until the namespace has no container left.
func waitNoContainers(ctx context.Context, client *containerd.Client, timeout time.Duration) error {
	ctx = namespaces.WithNamespace(ctx, namespace)
	deadline := time.Now().Add(timeout)
	for {
		ctrs, err := client.Containers(ctx)
		if err != nil {
			return err
		}
		if len(ctrs) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d containers left after %v", len(ctrs), timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// purge kills and deletes every container of the namespace, with its
// snapshot.
func purge(ctx context.Context, client *containerd.Client) error {
	ctx = namespaces.WithNamespace(ctx, namespace)
	ctrs, err := client.Containers(ctx)
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	var errs []error
	for _, c := range ctrs {
		if task, err := c.Task(ctx, nil); err == nil {
			if _, err := task.Delete(ctx, containerd.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete task %s: %w", c.ID(), err))
			}
		}
		if err := c.Delete(ctx, containerd.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete container %s: %w", c.ID(), err))
		}
	}
	return errors.Join(errs...)
}

// removeNamespace deletes the namespace's images (their content and
// snapshots go by garbage collection), leases, then the namespace.
func removeNamespace(ctx context.Context, client *containerd.Client) error {
	ctx = namespaces.WithNamespace(ctx, namespace)
	imgs, err := client.ImageService().List(ctx)
	if err != nil {
		return fmt.Errorf("list images: %w", err)
	}
	for _, img := range imgs {
		if err := client.ImageService().Delete(ctx, img.Name, images.SynchronousDelete()); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("delete image %s: %w", img.Name, err)
		}
	}
	ls, err := client.LeasesService().List(ctx)
	if err != nil {
		return fmt.Errorf("list leases: %w", err)
	}
	for _, l := range ls {
		if err := client.LeasesService().Delete(ctx, l); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("delete lease %s: %w", l.ID, err)
		}
	}
	// The garbage collector may hold the namespace for a moment.
	for i := 0; ; i++ {
		err := client.NamespaceService().Delete(ctx, namespace)
		if err == nil || errdefs.IsNotFound(err) {
			return nil
		}
		if i == 50 {
			return fmt.Errorf("delete namespace %s: %w", namespace, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// unmountUnder detaches every mount at or below dir, deepest first (tug's
// namespace pins under <run>/ns, and <run>/ns itself).
func unmountUnder(dir string) error {
	for range 10 {
		data, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			return err
		}
		var points []string
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line)
			if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
				points = append(points, f[4])
			}
		}
		if len(points) == 0 {
			return nil
		}
		slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
		for _, p := range points {
			if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
				return fmt.Errorf("unmount %s: %w", p, err)
			}
		}
	}
	return fmt.Errorf("mounts left under %s", dir)
}

// findHelpers returns the pids of the shims serving the benchmark's
// namespace on this containerd, and of tug's log drivers writing under
// logsDir.
func findHelpers(sock, tugBin, logsDir string) (shims, loggers []int, err error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, nil, err
	}
	tugExe, _ := filepath.EvalSymlinks(tugBin)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || len(raw) == 0 {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		switch {
		case strings.HasPrefix(filepath.Base(exe), "containerd-shim") &&
			slices.Contains(args, sock) && argAfter(args, "-namespace") == namespace:
			shims = append(shims, pid)
		case exe == tugExe && len(args) > 2 && args[1] == "logger" && strings.Contains(args[2], url.QueryEscape(logsDir)):
			loggers = append(loggers, pid)
		}
	}
	return shims, loggers, nil
}

func argAfter(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// readTicks returns a process's utime+stime in clock ticks
// (/proc/<pid>/stat, fields 14 and 15).
func readTicks(pid int) (uint64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	f := strings.Fields(s[i+1:]) // from field 3, state
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return utime + stime, nil
}

func sumTicks(pids []int) (uint64, error) {
	var sum uint64
	for _, pid := range pids {
		t, err := readTicks(pid)
		if err != nil {
			return 0, err
		}
		sum += t
	}
	return sum, nil
}

// memory is a process's VmRSS, VmHWM and Pss in MiB.
type memory struct{ rss, hwm, pss float64 }

func readMemory(pid int) (memory, error) {
	var m memory
	status, err := kiBFields(fmt.Sprintf("/proc/%d/status", pid), "VmRSS:", "VmHWM:")
	if err != nil {
		return m, err
	}
	rollup, err := kiBFields(fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss:")
	if err != nil {
		return m, err
	}
	return memory{rss: status[0] / 1024, hwm: status[1] / 1024, pss: rollup[0] / 1024}, nil
}

// kiBFields reads the "Key:  123 kB" lines named by keys from file.
func kiBFields(file string, keys ...string) ([]float64, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := make([]float64, len(keys))
	found := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		if i := slices.Index(keys, fields[0]); i >= 0 {
			v, err := strconv.ParseFloat(fields[1], 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %q: %w", file, sc.Text(), err)
			}
			out[i] = v
			found++
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if found != len(keys) {
		return nil, fmt.Errorf("%s: not all of %v found", file, keys)
	}
	return out, nil
}

// clockTicks returns the kernel's clock ticks per second (getconf
// CLK_TCK), 100 if getconf fails.
func clockTicks() uint64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err == nil {
		if n, err := strconv.ParseUint(strings.TrimSpace(string(out)), 10, 64); err == nil && n > 0 {
			return n
		}
	}
	return 100
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
