//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"tug/internal/pod"
	"tug/internal/podview"
	"tug/internal/testutil"
)

// execTimeout bounds one tug exec or tug restart.
const execTimeout = 60 * time.Second

// openPTY opens a new pseudo-terminal of rows x cols and returns its
// master and slave ends, closed when the test ends.
func openPTY(t *testing.T, rows, cols uint16) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock the pty: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pty number: %v", err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open the pty's slave: %v", err)
	}
	t.Cleanup(func() { slave.Close() })
	if err := unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
		t.Fatalf("set the pty's size: %v", err)
	}
	return master, slave
}

// TestExecCommand: "tug exec" runs a command in a running container of a
// real pod: its stdout and stderr arrive apart and its exit code is tug
// exec's; -i forwards stdin (cat echoes it); -it under a pseudo-terminal
// gives the command a terminal (tty prints a /dev/pts path) of the
// client's size, follows a resize, and leaves the client's terminal as it
// was; a missing command exits 127; a missing or stopped container is
// refused with kubectl's words.
func TestExecCommand(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	tg.writeManifest("shell.yaml", podYAML{name: "shell", restartPolicy: "OnFailure", containers: []ctrYAML{
		{name: "main", image: tg.image, script: idle},
		{name: "side", image: tg.image, script: idle},
		{name: "done", image: tg.image, script: "exit 0"},
	}}.String())
	tg.waitRunning(startTimeout, "shell", "main", 0)
	tg.waitPod(startTimeout, "shell", "main running, done completed", func(v *podview.View) error {
		if statusOf(v, "main").State.Running == nil || statusOf(v, "done").State.Terminated == nil {
			return fmt.Errorf("%s", describeStatus(&v.Status))
		}
		return nil
	})

	t.Run("streams and exit code", func(t *testing.T) {
		tg := tg.forTest(t)
		stdout, stderr, code := tg.runCLIInput("", execTimeout, "exec", "shell", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
		if code != 3 || stdout != "out\n" {
			t.Errorf("exit %d, stdout %q, stderr %q; want 3 and \"out\\n\"", code, stdout, stderr)
		}
		if !strings.Contains(stderr, "err\n") || !strings.Contains(stderr, `Defaulted container "main" out of: main, side, done`) {
			t.Errorf("stderr %q: want err and the defaulted container's note", stderr)
		}
		// The container's own process: its environment and working directory.
		stdout, stderr, code = tg.runCLIInput("", execTimeout, "exec", "-c", "side", "shell", "--", "sh", "-c", "echo $HOSTNAME; pwd")
		if code != 0 || stdout != "shell-e2e\n/\n" || stderr != "" {
			t.Errorf("-c side: exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
	})

	t.Run("stdin", func(t *testing.T) {
		tg := tg.forTest(t)
		in := "hello\nworld\n" + strings.Repeat("x", 200000) + "\n"
		stdout, stderr, code := tg.runCLIInput(in, execTimeout, "exec", "-i", "-c", "main", "shell", "--", "cat")
		if code != 0 || stdout != in {
			t.Errorf("exit %d, %d bytes of stdout (want %d, the same), stderr %q", code, len(stdout), len(in), stderr)
		}
		// Without -i the command reads an empty stdin.
		stdout, _, code = tg.runCLIInput("ignored\n", execTimeout, "exec", "-c", "main", "shell", "--", "sh", "-c", "cat; echo end")
		if code != 0 || stdout != "end\n" {
			t.Errorf("without -i: exit %d, stdout %q", code, stdout)
		}
	})

	t.Run("tty", func(t *testing.T) {
		tg := tg.forTest(t)
		master, slave := openPTY(t, 33, 101)
		before, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), execTimeout)
		defer cancel()
		script := `tty; stty size; while [ "$(stty size)" = "33 101" ]; do sleep 0.1; done; echo resized; stty size`
		cmd := exec.CommandContext(ctx, tugBin, "exec", "--socket", tg.socketPath(), "-it", "-c", "main", "shell", "--", "sh", "-c", script)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		// Its own session, with the pty as its controlling terminal: the
		// kernel sends it SIGWINCH when the pty's size changes.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		out := &testutil.SyncBuffer{}
		go func() {
			buf := make([]byte, 4096)
			for {
				n, err := master.Read(buf)
				out.Write(buf[:n])
				if err != nil {
					return
				}
			}
		}()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		tg.waitFor(execTimeout, "the command's tty and first size", func() (bool, error) {
			return strings.Contains(out.String(), "33 101"), fmt.Errorf("output %q", out.String())
		})
		if err := unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 120}); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("tug exec -it: %v; output %q", err, out.String())
			}
		case <-ctx.Done():
			t.Fatalf("tug exec -it did not end after the resize; output %q", out.String())
		}
		tg.waitFor(logTimeout, "the command's output after the resize", func() (bool, error) {
			return strings.Contains(out.String(), "40 120"), fmt.Errorf("output %q", out.String())
		})
		// A terminal turns \n into \r\n.
		got := strings.ReplaceAll(out.String(), "\r\n", "\n")
		if !regexp.MustCompile(`(?m)^/dev/pts/\d+\n33 101\nresized\n40 120\n`).MatchString(got) {
			t.Errorf("output %q: want the tty's path, 33 101, resized, 40 120", got)
		}
		after, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		if *after != *before {
			t.Errorf("the terminal's settings are not restored: %+v, were %+v", after, before)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		tg := tg.forTest(t)
		_, stderr, code := tg.runCLIInput("", execTimeout, "exec", "-c", "main", "shell", "--", "no-such-command")
		if code != 127 || !strings.Contains(stderr, "no-such-command") {
			t.Errorf("a missing command: exit %d, stderr %q; want 127", code, stderr)
		}
		_, stderr, code = tg.runCLIInput("", execTimeout, "exec", "-c", "nope", "shell", "--", "true")
		if code != 1 || !strings.Contains(stderr, "container nope is not valid for pod shell-e2e") {
			t.Errorf("a missing container: exit %d, stderr %q", code, stderr)
		}
		_, stderr, code = tg.runCLIInput("", execTimeout, "exec", "-c", "done", "shell", "--", "true")
		if code != 1 || !strings.Contains(stderr, "container done is not running") {
			t.Errorf("a completed container: exit %d, stderr %q", code, stderr)
		}
		_, stderr, code = tg.runCLIInput("", execTimeout, "exec", "nopod", "--", "true")
		if code != 1 || !strings.Contains(stderr, `pod "nopod" not found`) {
			t.Errorf("a missing pod: exit %d, stderr %q", code, stderr)
		}
	})
}

// TestRestartCommand: "tug restart" stops a running container as a failed
// liveness probe does (its preStop hook, then SIGTERM) and starts a new
// one (another containerd container and task), restartCount goes up by one
// in the API and tug inspect, the Killing event says why, the pod runs
// again, and the rollout controller, which fails an update at its first
// restart here (max-restarts 0), judges the spec good all the same.
func TestRestartCommand(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{args: []string{"--rollout-min-ready", "45s"}})
	dir := hookDir(t, "svc")
	extra := execHook("preStop", "echo prestop >> /d/order") +
		"      volumeMounts:\n        - name: d\n          mountPath: /d\n" +
		"  volumes:\n    - name: d\n      hostPath: {path: " + q(dir) + ", type: Directory}\n"
	tg.writeManifest("svc.yaml", rolloutPod("svc", tg.image, termScript, map[string]string{pod.AnnotationRolloutMaxRestarts: "0"}, extra))
	before := tg.waitRunning(startTimeout, "svc", "main", 0)
	tg.waitOrder(logTimeout, dir, "started")
	tg.waitFor(logTimeout, "the rollout controller to watch the spec", func() (bool, error) {
		h, err := tg.history("svc")
		if err != nil {
			return false, err
		}
		if h.GoodHash != "" {
			return false, fmt.Errorf("%w: the spec is good already (history %+v): it must restart while watched", errStop, h)
		}
		return len(h.Entries) > 0, fmt.Errorf("history %+v", h)
	})

	// tug restart acts on the containers tug's status says run, which
	// follows containerd by a relist: wait for it to say so.
	tg.waitPod(startTimeout, "svc", "main running in tug's status", func(v *podview.View) error {
		if cs := mainStatus(v); cs.State.Running == nil {
			return fmt.Errorf("main: %+v", cs.State)
		}
		return nil
	})
	stdout := tg.cli("restart", "svc")
	if stdout != "default/svc-e2e: restarting main\n" {
		t.Errorf("tug restart printed %q", stdout)
	}
	after := tg.waitRunning(startTimeout, "svc", "main", 1)
	if after.ID == before.ID || after.PID == before.PID {
		t.Errorf("restarted container %v is the old one, %v", after, before)
	}
	tg.waitOrder(logTimeout, dir, "started", "prestop", "term", "started")
	v := tg.waitPod(startTimeout, "svc", "Running again with restartCount 1", func(v *podview.View) error {
		cs := statusOf(v, "main")
		if v.Status.Phase != pod.PhaseRunning || cs.State.Running == nil || cs.RestartCount != 1 {
			return fmt.Errorf("phase %s, %s", v.Status.Phase, describeStatus(&v.Status))
		}
		return nil
	})
	if term := statusOf(&v, "main").LastTerminationState.Terminated; term == nil || term.Message != "restart requested by tug restart" {
		t.Errorf("last state %+v: want terminated by the requested restart", statusOf(&v, "main").LastTerminationState)
	}
	if inspect := tg.cli("inspect", "svc"); !strings.Contains(inspect, "restartCount: 1") {
		t.Errorf("tug inspect does not show restartCount 1:\n%s", inspect)
	}
	events := tg.cli("events", staticName("svc"))
	killing := findLine(events, "Killing", "Container main restart requested by tug restart")
	if killing == "" || !strings.Contains(events[strings.Index(events, killing):], "Started") {
		t.Errorf("tug events: want the Killing event of the restart, then Started:\n%s", events)
	}

	// Counted as a restart, it would fail the watched spec at once.
	tg.waitGood("svc", "")
	for _, r := range tg.eventReasons(v.Metadata.UID) {
		if r == "RolloutFailed" || r == pod.ReasonRolledBack {
			t.Errorf("events %v: the requested restart failed the rollout", tg.eventReasons(v.Metadata.UID))
		}
	}

	// A container that is not running is refused.
	_, stderr, code := tg.runCLI("restart", "-c", "nope", "svc")
	if code != 1 || !strings.Contains(stderr, "container nope is not valid for pod svc-e2e") {
		t.Errorf("tug restart -c nope: exit %d, stderr %q", code, stderr)
	}
}
