//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestLogsCommand: "tug logs -f" started while a container runs prints
// every line of its attempt exactly once, in order, across several
// rotations of its log file, and ends when the container stops; "tug logs
// --previous" then shows the attempt that stopped, "--tail" and
// "--timestamps" shape the current one as kubectl does.
func TestLogsCommand(t *testing.T) {
	t.Parallel()
	const lines = 200
	tg := startTug(t, tugOpts{args: []string{
		"--crash-loop-back-off-initial", "1s",
		"--container-log-max-size", "4096", "--container-log-max-files", "3",
	}})
	// Each attempt counts itself in an emptyDir, writes 200 numbered lines
	// of about 90 bytes (18 KB: four rotations at 4 KiB), and the first
	// one fails.
	script := fmt.Sprintf(`n=$(cat /data/n 2>/dev/null || echo 0); echo $((n+1)) > /data/n; i=0; `+
		`while [ $i -lt %d ]; do echo "run $n line $i padding padding padding padding padding padding"; i=$((i+1)); sleep 0.02; done; `+
		`if [ $n = 0 ]; then exit 1; fi; %s`, lines, idle)
	tg.writeManifest("chatty.yaml", podYAML{name: "chatty",
		containers: []ctrYAML{{name: "main", image: tg.image, script: script, mounts: []mountYAML{{name: "data", path: "/data"}}}},
		volumes:    []volYAML{emptyVol("data")},
	}.String())
	tg.waitRunning(startTimeout, "chatty", "main", 0)

	want := func(run, from, to int) string {
		var b strings.Builder
		for i := from; i < to; i++ {
			fmt.Fprintf(&b, "run %d line %d padding padding padding padding padding padding\n", run, i)
		}
		return b.String()
	}

	// Follow attempt 0 until it stops.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, tugBin, "logs", "-f", "chatty", "--socket", tg.socketPath())
	var errOut strings.Builder
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tug logs -f: %v: %s", err, errOut.String())
	}
	if got := string(out); got != want(0, 0, lines) {
		t.Errorf("tug logs -f printed %d lines, want run 0's %d lines, each once, in order:\n%s", strings.Count(got, "\n"), lines, got)
	}
	// It did follow across rotations: attempt 0 has rotated files.
	if _, err := os.Stat(tg.podLogGlob("chatty") + "/main/0.log.1"); err != nil {
		t.Errorf("attempt 0's log never rotated: %v", err)
	}

	// Attempt 1 runs and has written everything: --previous is the end of
	// attempt 0 (what rotation kept), the default is attempt 1.
	tg.waitRunning(startTimeout, "chatty", "main", 1)
	tg.waitLog(logTimeout, "chatty", "main", 1, fmt.Sprintf("run 1 line %d padding padding padding padding padding padding", lines-1))
	stdout, stderr, code := tg.runCLI("logs", "--previous", "chatty")
	if code != 0 || stdout == "" || !strings.HasSuffix(want(0, 0, lines), stdout) || !strings.HasPrefix(stdout, "run 0 line ") {
		t.Errorf("tug logs --previous: exit %d, stderr %q, stdout not a tail of attempt 0's lines:\n%s", code, stderr, stdout)
	}
	stdout, stderr, code = tg.runCLI("logs", "chatty", "--tail", "3")
	if code != 0 || stdout != want(1, lines-3, lines) {
		t.Errorf("tug logs --tail 3: exit %d, stderr %q, stdout\n%s\nwant\n%s", code, stderr, stdout, want(1, lines-3, lines))
	}
	stdout, _, code = tg.runCLI("logs", "-c", "main", "--timestamps", "--tail", "1", "--since", "1h", "chatty")
	ts, text, _ := strings.Cut(strings.TrimSuffix(stdout, "\n"), " ")
	if _, err := time.Parse(time.RFC3339Nano, ts); code != 0 || err != nil || text+"\n" != want(1, lines-1, lines) {
		t.Errorf("tug logs --timestamps --tail 1: exit %d, %q", code, stdout)
	}
	stdout, stderr, code = tg.runCLI("logs", "-c", "nope", "chatty")
	if code != 1 || !strings.Contains(stderr, "container nope is not valid for pod chatty-") {
		t.Errorf("tug logs -c nope: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
