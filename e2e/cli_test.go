//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"tug/internal/podview"
	"tug/internal/testutil"
)

// watchBound is how long after a change shows in the API a watching
// command may take to print it: the promise is a second (the agent's poll
// is 250 ms, which TestPodWatchIntervalIsAtMostAQuarterSecond checks); the
// bound is generous because five test suites share two cores here.
const watchBound = 5 * time.Second

// follower is a "tug ... -w" process whose output a test reads as it comes.
type follower struct {
	cmd    *exec.Cmd
	out    *testutil.SyncBuffer
	errOut *testutil.SyncBuffer
	done   chan struct{}
	err    error // cmd.Wait's, set before done is closed
}

// follow starts "tug <args> --socket <tug's socket>" and stops it (if
// still running) when the test ends.
func (tg *tug) follow(args ...string) *follower {
	tg.t.Helper()
	f := &follower{out: &testutil.SyncBuffer{}, errOut: &testutil.SyncBuffer{}, done: make(chan struct{})}
	f.cmd = exec.Command(tugBin, append(args, "--socket", tg.socketPath())...)
	f.cmd.Stdout, f.cmd.Stderr = f.out, f.errOut
	f.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := f.cmd.Start(); err != nil {
		tg.t.Fatalf("start tug %s: %v", strings.Join(args, " "), err)
	}
	go func() { f.err = f.cmd.Wait(); close(f.done) }()
	tg.t.Cleanup(func() {
		_ = f.cmd.Process.Kill()
		<-f.done
	})
	return f
}

// interrupt sends SIGINT, as Ctrl-C does, and returns how the command
// exited.
func (f *follower) interrupt(t *testing.T) error {
	t.Helper()
	_ = f.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-f.done:
		return f.err
	case <-time.After(10 * time.Second):
		return errors.New("still running 10s after SIGINT")
	}
}

// lines returns the output lines that contain every one of subs.
func (f *follower) lines(subs ...string) []string {
	var out []string
	for line := range strings.Lines(f.out.String()) {
		ok := true
		for _, s := range subs {
			ok = ok && strings.Contains(line, s)
		}
		if ok {
			out = append(out, strings.TrimSuffix(line, "\n"))
		}
	}
	return out
}

// waitLine waits until the command has printed more than n lines with
// every one of subs, failing the test after timeout; it returns when.
func (f *follower) waitLine(t *testing.T, timeout time.Duration, n int, subs ...string) time.Time {
	t.Helper()
	waitFor(t, timeout, fmt.Sprintf("a line with %q", subs), func() (bool, error) {
		select {
		case <-f.done:
			return false, fmt.Errorf("%w: the command exited (%v): %s%s", errStop, f.err, f.out.String(), f.errOut.String())
		default:
		}
		return len(f.lines(subs...)) > n, nil
	})
	return time.Now()
}

// TestPodsWatch: "tug pods -w" prints the table, then a row for a pod that
// appears, each change of its row (running, then exited with an error) and
// its removal, each within a second or so of the API showing it; a pod
// that does not change gets no row of its own however long its AGE moves.
// "tug events -w" prints each new event as it happens.
func TestPodsWatch(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	tg.writeManifest("stay.yaml", shPod("stay", tg.image, idle))
	tg.waitRunning(startTimeout, "stay", "main", 0)
	// The table is to show stay as it stays: ready in the API (the
	// relist that brings its running container to the status follows the
	// start by up to a second).
	tg.waitPod(startTimeout, "stay", "ready in the API", readyIs(true))
	pods := tg.follow("pods", "-w")
	evs := tg.follow("events", "-w")
	pods.waitLine(t, apiTimeout, 0, "NAME", "READY", "STATUS", "RESTARTS", "AGE")
	table := pods.waitLine(t, apiTimeout, 0, staticName("stay"), "1/1", "Running")

	// A new pod: its row appears, then Running.
	changed := time.Now()
	tg.writeManifest("fresh.yaml", podYAML{name: "fresh", restartPolicy: "Never", containers: []ctrYAML{
		{name: "main", image: tg.image, script: "while [ ! -e /tmp/stop ]; do sleep 0.1; done; exit 3"}}}.String())
	printed := pods.waitLine(t, watchBound, 0, staticName("fresh"))
	t.Logf("fresh's first row %v after the manifest was written", printed.Sub(changed).Round(time.Millisecond))
	c := tg.waitRunning(startTimeout, "fresh", "main", 0)
	pods.waitLine(t, watchBound, 0, staticName("fresh"), "1/1", "Running")

	// Its container exits 3: the row says so soon after the API does.
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/root/tmp/stop", c.PID), nil, 0o644); err != nil {
		t.Fatalf("stop fresh's container: %v", err)
	}
	var seen time.Time
	tg.waitPod(watchBound, "fresh", "its container terminated", func(v *podview.View) error {
		if len(v.Status.ContainerStatuses) == 0 || v.Status.ContainerStatuses[0].State.Terminated == nil {
			return errors.New("not terminated yet")
		}
		seen = time.Now()
		return nil
	})
	printed = pods.waitLine(t, watchBound, 0, staticName("fresh"), "0/1", "Error")
	t.Logf("fresh's Error row %v after the API showed it", printed.Sub(seen).Round(time.Millisecond))

	// Removed: one more row for it.
	before := len(pods.lines(staticName("fresh")))
	tg.removeManifest("fresh.yaml")
	tg.waitGone(startTimeout, tg.uid("fresh"), "fresh")
	pods.waitLine(t, watchBound, before, staticName("fresh"))

	// events -w printed fresh's start, and prints another pod's as soon as
	// the API has it.
	evs.waitLine(t, watchBound, 0, "Started", "pod/"+staticName("fresh"))
	tg.writeManifest("third.yaml", shPod("third", tg.image, idle))
	tg.waitFor(startTimeout, "third's Started event in the API", func() (bool, error) {
		return slices.Contains(tg.eventReasons(tg.uid("third")), "Started"), nil
	})
	seen = time.Now()
	printed = evs.waitLine(t, watchBound, 0, "Started", "pod/"+staticName("third"))
	t.Logf("tug events -w printed third's Started event %v after the API had it", printed.Sub(seen).Round(time.Millisecond))

	// stay never changed: its one row is the table's, though its AGE moved
	// (by a second at least: it is under two minutes old).
	time.Sleep(time.Until(table.Add(3 * time.Second)))
	if got := pods.lines(staticName("stay")); len(got) != 1 {
		t.Errorf("tug pods -w printed %d rows for stay, whose row did not change, want 1: %q", len(got), got)
	}
	for _, f := range []*follower{pods, evs} {
		if err := f.interrupt(t); err != nil {
			t.Errorf("tug %s after SIGINT: %v; stderr %s", strings.Join(f.cmd.Args[1:], " "), err, f.errOut.String())
		}
	}
	t.Logf("tug pods -w:\n%s", pods.out.String())
}

// TestDescribe: "tug describe" of a pod whose liveness probe fails shows
// the probe as kubectl does, the restarts it caused and, in its Events,
// the real Unhealthy event; an environment variable from a Secret shows
// where it comes from, never its value.
func TestDescribe(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{args: []string{"--crash-loop-back-off-initial", "1s"}})
	const password = "hunter2-not-shown"
	tg.writeManifest("sick.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: "+password+"\n---\n"+
		podYAML{name: "sick", containers: []ctrYAML{{name: "main", image: tg.image, script: idle, extra: `      env:
        - name: MODE
          value: production
        - name: DB_PASSWORD
          valueFrom:
            secretKeyRef: {name: db, key: password}
      livenessProbe:
        exec: {command: ["cat", "/tmp/healthy"]}
        periodSeconds: 1
        failureThreshold: 1
`}}}.String())
	tg.waitPod(startTimeout, "sick", "a restart after a failed liveness probe", func(v *podview.View) error {
		if len(v.Status.ContainerStatuses) == 0 || v.Status.ContainerStatuses[0].RestartCount == 0 {
			return errors.New("no restart yet")
		}
		return nil
	})
	stdout, stderr, code := tg.runCLI("describe", "sick")
	if code != 0 {
		t.Fatalf("tug describe sick: exit %d: %s", code, stderr)
	}
	t.Logf("tug describe sick:\n%s", stdout)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^Name: +` + staticName("sick") + `$`),
		regexp.MustCompile(`(?m)^Node: +` + hostname + `\b`),
		regexp.MustCompile(`(?m)^Source: +` + regexp.QuoteMeta(tg.manifestPath("sick.yaml")) + `$`),
		regexp.MustCompile(`(?m)^    Liveness: +exec \[cat /tmp/healthy\] delay=0s timeout=1s period=1s #success=1 #failure=1$`),
		regexp.MustCompile(`(?m)^    Restart Count: +[1-9]`),
		regexp.MustCompile(`(?m)^      MODE: +production$`),
		regexp.MustCompile(`(?m)^      DB_PASSWORD: +<set to the key 'password' in secret 'db'>`),
		regexp.MustCompile(`(?m)^Events:$`),
		regexp.MustCompile(`(?m)^  Warning +Unhealthy +\S.* +Liveness probe failed`),
	} {
		if !want.MatchString(stdout) {
			t.Errorf("tug describe sick has no line matching %s", want)
		}
	}
	if strings.Contains(stdout, password) {
		t.Errorf("tug describe shows the Secret's value")
	}
	if _, _, code := tg.runCLI("describe", "nope"); code != 1 {
		t.Errorf("tug describe nope: exit %d, want 1", code)
	}
}

// TestTop: "tug top" of a pod burning CPU under a 200m limit shows
// non-zero CPU, at most about its limit (a rate, not the CPU time so
// far), and the memory it holds; --containers gives its container's row.
func TestTop(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	// 8 MiB in /dev/shm (tmpfs, charged to the container and part of its
	// working set), then a busy loop.
	tg.writeManifest("burn.yaml", podYAML{name: "burn", containers: []ctrYAML{{name: "main", image: tg.image,
		script: "head -c 8388608 /dev/zero > /dev/shm/fill; while :; do :; done",
		extra:  "      resources:\n        limits: {cpu: 200m, memory: 64Mi}\n"}}}.String())
	tg.waitRunning(startTimeout, "burn", "main", 0)
	row := regexp.MustCompile(`(?m)^` + staticName("burn") + ` +(\d+)m +(\d+)Mi$`)
	var cpu, mem int
	tg.waitFor(30*time.Second, "tug top burn to show CPU and 8Mi", func() (bool, error) {
		stdout, stderr, code := tg.runCLI("top", "burn")
		m := row.FindStringSubmatch(stdout)
		if code != 0 || m == nil {
			return false, fmt.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
		cpu, _ = strconv.Atoi(m[1])
		mem, _ = strconv.Atoi(m[2])
		return cpu > 0 && mem >= 8, fmt.Errorf("CPU %dm, memory %dMi", cpu, mem)
	})
	t.Logf("tug top burn: %dm, %dMi", cpu, mem)
	if cpu > 600 {
		t.Errorf("tug top burn: CPU %dm, want about its 200m limit", cpu)
	}
	stdout, stderr, code := tg.runCLI("top", "--containers")
	if !regexp.MustCompile(`(?m)^POD +NAME +CPU\(cores\) +MEMORY\(bytes\)$`).MatchString(stdout) ||
		!regexp.MustCompile(`(?m)^`+staticName("burn")+` +main +[1-9]\d*m +\d+Mi$`).MatchString(stdout) || code != 0 {
		t.Errorf("tug top --containers: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	t.Logf("tug top --containers:\n%s", stdout)
}
