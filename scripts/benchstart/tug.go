package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"tug/scripts/internal/benchns"
)

// tugProc is the tug agent under test, with its own directories.
type tugProc struct {
	bin       string
	cmd       *exec.Cmd
	exited    chan struct{}
	logPath   string
	manifests string
	staging   string // on the same file system as manifests
	runDir    string
	netns     *benchns.Netns // tug's network namespace, deleted when it exits
}

// buildTug builds ./agent of the module the benchmark runs in into dir.
func buildTug(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("find the module: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("find the module: not inside tug's module (run from the repository)")
	}
	bin := filepath.Join(dir, "tug")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./agent")
	cmd.Dir = filepath.Dir(gomod)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build tug: %w\n%s", err, out)
	}
	return bin, nil
}

// startTug starts tug on its own directories under dir, in namespace nsTug,
// logging at debug level to dir/tug.log, and waits until it runs.
func startTug(ctx context.Context, bin, sock, dir string) (*tugProc, error) {
	t := &tugProc{
		bin:       bin,
		exited:    make(chan struct{}),
		logPath:   filepath.Join(dir, "tug.log"),
		manifests: filepath.Join(dir, "manifests"),
		staging:   filepath.Join(dir, "staging"),
		runDir:    filepath.Join(dir, "run"),
	}
	for _, d := range []string{t.manifests, t.staging, t.runDir, filepath.Join(dir, "images")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("tug directories: %w", err)
		}
	}
	logf, err := os.Create(t.logPath)
	if err != nil {
		return nil, fmt.Errorf("tug log: %w", err)
	}
	defer logf.Close()
	if t.netns, err = benchns.New("tug"); err != nil {
		return nil, err
	}
	t.cmd = t.netns.Command(bin, "run",
		"--pod-manifest-path", t.manifests,
		"--root-dir", filepath.Join(dir, "root"),
		"--run-dir", t.runDir,
		"--pod-logs-dir", filepath.Join(dir, "logs"),
		"--image-dir", filepath.Join(dir, "images"),
		"--containerd-address", sock,
		"--containerd-namespace", nsTug,
		"--hostname-override", hostname,
		"--log-level", "debug")
	t.cmd.Stdout, t.cmd.Stderr = logf, logf
	// Own process group: a ^C to the benchmark reaches tug only through
	// stop, after the last measurement.
	t.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := t.cmd.Start(); err != nil {
		t.netns.Delete()
		return nil, fmt.Errorf("start tug: %w", err)
	}
	go func() {
		_ = t.cmd.Wait()
		t.netns.Delete(filepath.Join(t.runDir, "node-net"))
		close(t.exited)
	}()
	fmt.Fprintf(os.Stderr, "benchstart: tug started (pid %d, log %s)\n", t.cmd.Process.Pid, t.logPath)
	return t, t.waitRunning(ctx)
}

// waitRunning waits until tug's file source has logged (it logs with
// source=file:...) or a second has passed, and fails if tug exited. The
// warm-up run is the real check that tug works.
func (t *tugProc) waitRunning(ctx context.Context) error {
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-t.exited:
			return fmt.Errorf("tug exited at start (%s); its log:\n%s", t.cmd.ProcessState, t.tail(20))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if data, err := os.ReadFile(t.logPath); err == nil && strings.Contains(string(data), "source=file:") {
			return nil
		}
	}
	return nil
}

// stop stops tug with SIGTERM (its pods keep running), then SIGKILL.
func (t *tugProc) stop() error {
	select {
	case <-t.exited:
		return nil
	default:
	}
	if err := t.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop tug: %w", err)
	}
	select {
	case <-t.exited:
		return nil
	case <-time.After(15 * time.Second):
	}
	if err := t.cmd.Process.Kill(); err != nil {
		return fmt.Errorf("kill tug: %w", err)
	}
	<-t.exited
	return errors.New("tug did not stop within 15s of SIGTERM; killed it")
}

// alive fails if tug has exited.
func (t *tugProc) alive() error {
	select {
	case <-t.exited:
		return fmt.Errorf("tug exited (%s); its log:\n%s", t.cmd.ProcessState, t.tail(20))
	default:
		return nil
	}
}

// tail returns the last n lines of tug's log.
func (t *tugProc) tail(n int) string {
	data, err := os.ReadFile(t.logPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// logSize returns the current size of tug's log: where a run's lines begin.
func (t *tugProc) logSize() int64 {
	fi, err := os.Stat(t.logPath)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// manifest is a one-container pod that sleeps; grace period 0 so that its
// removal between runs is quick.
const manifest = `apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - name: c
      image: %s
      command: ["sleep", "3600"]
`

// runTug is one measurement of tug: n manifests are renamed into the
// manifest directory one right after the other; t0 is just before the
// first rename.
func runTug(ctx context.Context, e *env, n, run int) (sample, error) {
	t := e.tug
	if err := t.alive(); err != nil {
		return sample{}, err
	}
	names := podNames(n, run)
	pods := map[string]bool{} // pod names as tug makes them: the key of a container ID
	for _, name := range names {
		pods[name+"-"+hostname] = true
		data := fmt.Sprintf(manifest, name, e.o.image)
		if err := os.WriteFile(filepath.Join(t.staging, name+".yaml"), []byte(data), 0o600); err != nil {
			return sample{}, fmt.Errorf("stage manifest: %w", err)
		}
	}
	key := func(id string) (string, bool) {
		k, _, _ := strings.Cut(id, "_") // <pod>_<container>_<uid>_<attempt>
		return k, pods[k]
	}
	mine := func(id string) bool { _, ok := key(id); return ok }

	mctx, cancel := context.WithTimeout(ctx, runTimeout(n))
	defer cancel()
	e.rec.drain()
	logFrom := t.logSize()
	t0 := time.Now()
	for _, name := range names {
		base := name + ".yaml"
		if err := os.Rename(filepath.Join(t.staging, base), filepath.Join(t.manifests, base)); err != nil {
			return sample{}, fmt.Errorf("rename manifest into place: %w", err)
		}
	}
	tl, err := e.rec.await(mctx, nsTug, n, key)
	if err != nil {
		return sample{}, fmt.Errorf("%w; tug's log ends:\n%s", err, t.tail(20))
	}
	s := newSample(tl, t0)
	if n == 1 {
		s.pickup, s.pickupMsg = pickupFromLog(t.logPath, logFrom, e.o.pickupLog, t0)
	}
	if err := checkRunning(mctx, e.client, nsTug, n, mine); err != nil {
		return s, err
	}
	return s, removeTugPods(ctx, e, names, mine)
}

// removeTugPods deletes the run's manifests and waits (untimed) until tug
// has removed their containers.
func removeTugPods(ctx context.Context, e *env, names []string, mine func(string) bool) error {
	for _, name := range names {
		if err := os.Remove(filepath.Join(e.tug.manifests, name+".yaml")); err != nil {
			return fmt.Errorf("remove manifest: %w", err)
		}
	}
	err := waitGone(ctx, e.client, nsTug, time.Minute, mine)
	if err == nil {
		return nil
	}
	fmt.Fprintf(os.Stderr, "benchstart: WARNING: tug did not remove the pods' containers (%v); removing them\n", err)
	return purge(ctx, e.client, nsTug, mine)
}

// pickupFromLog returns the time from t0 to tug's first log line (written
// from offset on) that re matches, and that line's message. It is -1 when
// there is none. slog writes times to the millisecond.
func pickupFromLog(path string, offset int64, re *regexp.Regexp, t0 time.Time) (time.Duration, string) {
	f, err := os.Open(path)
	if err != nil {
		return -1, ""
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return -1, ""
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !re.MatchString(line) {
			continue
		}
		at, ok := logTime(line)
		if !ok {
			continue
		}
		return at.Sub(t0), logField(line, "msg")
	}
	return -1, ""
}

// logTime parses the time= field of a slog text line.
func logTime(line string) (time.Time, bool) {
	at, err := time.Parse(time.RFC3339Nano, logField(line, "time"))
	return at, err == nil
}

// logField returns the value of key=value in a slog text line (quoted
// values unquoted, roughly).
func logField(line, key string) string {
	i := strings.Index(line, key+"=")
	if i < 0 || (i > 0 && line[i-1] != ' ') {
		return ""
	}
	v := line[i+len(key)+1:]
	if strings.HasPrefix(v, `"`) {
		if j := strings.Index(v[1:], `"`); j >= 0 {
			return v[1 : j+1]
		}
		return v[1:]
	}
	v, _, _ = strings.Cut(v, " ")
	return v
}

// podNames returns the names of the pods (or ctr containers) of one run:
// b<n>r<run>-<i>, and w<n>-<i> for the warm-up (run < 0).
func podNames(n, run int) []string {
	prefix := fmt.Sprintf("b%dr%d", n, run)
	if run < 0 {
		prefix = fmt.Sprintf("w%d", n)
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%02d", prefix, i)
	}
	return names
}

// runTimeout bounds one measurement of n pods.
func runTimeout(n int) time.Duration {
	return 30*time.Second + time.Duration(n)*2*time.Second
}

// unmountPins unmounts tug's namespace pins (<run-dir>/ns/<uid>/<kind>) and
// the shared bind mount tug makes of <run-dir>/ns itself, each as often as
// it is mounted.
func unmountPins(nsDir string) error {
	var errs []error
	uids, _ := os.ReadDir(nsDir)
	for _, uid := range uids {
		kinds, _ := os.ReadDir(filepath.Join(nsDir, uid.Name()))
		for _, k := range kinds {
			errs = append(errs, unmountAll(filepath.Join(nsDir, uid.Name(), k.Name())))
		}
	}
	errs = append(errs, unmountAll(nsDir))
	return errors.Join(errs...)
}

// unmountAll detaches every mount stacked on path; not mounted is fine.
func unmountAll(path string) error {
	for i := 0; i < 100; i++ {
		err := unix.Unmount(path, unix.MNT_DETACH)
		switch {
		case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOENT):
			return nil
		case err != nil:
			return fmt.Errorf("unmount %s: %w", path, err)
		}
	}
	return fmt.Errorf("unmount %s: still mounted after 100 unmounts", path)
}
