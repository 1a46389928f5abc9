//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// loggerProcs returns the pids of the "tug logger" processes whose
// settings name a file under dir.
func loggerProcs(dir string) []int {
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(string(data), "\x00")
		if len(args) > 2 && args[1] == "logger" && strings.Contains(args[2], filepath.Base(dir)) {
			var pid int
			fmt.Sscanf(p, "/proc/%d/cmdline", &pid)
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestLogDriverUpgrade: a container started by a tug with the binary
// driver (a "tug logger" per container, the design before the file driver)
// keeps its logger and its log across a restart of tug with the file
// driver; its next attempt uses the file driver (no logger process, raw
// files under the pod's root dir) and "tug logs --previous" still shows
// the attempt before.
func TestLogDriverUpgrade(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{args: []string{"--container-log-driver", "binary"}})
	script := `i=0; while true; do echo "tick $i"; i=$((i+1)); usleep 100000; done`
	tg.writeManifest("ticker.yaml", shPod("ticker", tg.image, script))
	c0 := tg.waitRunning(startTimeout, "ticker", "main", 0)
	tg.waitLog(logTimeout, "ticker", "main", 0, "tick 3")
	logDir := tg.podLogGlob("ticker")
	if pids := loggerProcs(logDir); len(pids) != 1 {
		t.Fatalf("binary driver: %d tug logger processes for the pod, want 1", len(pids))
	}

	// The upgrade: tug restarts with the file driver; the running
	// container and its logger are left alone.
	if err := tg.Stop(); err != nil {
		t.Fatal(err)
	}
	tg.args = append(tg.args, "--container-log-driver", "file")
	tg.Start()
	lines := tg.waitLog(logTimeout, "ticker", "main", 0, "tick 30")
	if c := tg.waitRunning(startTimeout, "ticker", "main", 0); c.PID != c0.PID {
		t.Fatalf("the container was restarted by the upgrade: %v, then %v", c0, c)
	}
	if pids := loggerProcs(logDir); len(pids) != 1 {
		t.Errorf("after the upgrade: %d tug logger processes for the pod, want the old one", len(pids))
	}

	// The next attempt uses the file driver.
	if err := unix.Kill(int(c0.PID), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	tg.waitRunning(startTimeout, "ticker", "main", 1)
	tg.waitLog(logTimeout, "ticker", "main", 1, "tick 3")
	state := filepath.Join(tg.rootDir, "pods", tg.uid("ticker"), "logs", "main", "1.state")
	if _, err := os.Stat(state); err != nil {
		t.Errorf("attempt 1 has no file driver state: %v", err)
	}
	tg.waitFor(15*time.Second, "the old logger to exit", func() (bool, error) {
		return len(loggerProcs(logDir)) == 0, nil
	})
	stdout, stderr, code := tg.runCLI("logs", "--previous", "ticker")
	if code != 0 || !strings.HasPrefix(stdout, "tick 0\ntick 1\n") || !strings.Contains(stdout, lines[len(lines)-1].Text+"\n") {
		t.Errorf("tug logs --previous: exit %d, stderr %q, stdout %q", code, stderr, stdout)
	}
}
