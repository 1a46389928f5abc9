//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLogsNoLossAcrossKills: a container writes numbered lines at about
// 5,000 lines/s for 60 s (and a numbered batch line to stderr every 100
// lines) while tug is killed with SIGKILL and started again three times
// and containerd is restarted once; its log files, rotated many times
// (1 MiB), hold every number exactly once, in order, on each stream.
func TestLogsNoLossAcrossKills(t *testing.T) {
	env := requireTestenv(t)
	const maxFiles = 200
	tg := startTug(t, tugOpts{args: []string{
		"--container-log-driver", "file",
		"--container-log-max-size", strconv.Itoa(1 << 20), "--container-log-max-files", strconv.Itoa(maxFiles),
	}})
	t.Cleanup(func() { env.ensureContainerd(t) })
	// 100 lines, then 14 ms of sleep: about 5,000 lines/s on a loaded
	// machine (busybox sh spends a few ms on each 100).
	script := `end=$(( $(date +%s) + 60 )); i=0; b=0; ` +
		`while [ $(date +%s) -lt $end ]; do j=0; while [ $j -lt 100 ]; do echo "n $i"; i=$((i+1)); j=$((j+1)); done; ` +
		`echo "b $b" >&2; b=$((b+1)); usleep 14000; done; echo "END $i"; echo "END $b" >&2`
	tg.writeManifest("numbers.yaml", podYAML{name: "numbers", restartPolicy: "Never",
		containers: []ctrYAML{{name: "main", image: tg.image, script: script}}}.String())
	tg.waitRunning(startTimeout, "numbers", "main", 0)
	started := time.Now()

	at := func(d time.Duration) {
		if w := time.Until(started.Add(d)); w > 0 {
			time.Sleep(w)
		}
	}
	for i, d := range []time.Duration{8 * time.Second, 20 * time.Second, 32 * time.Second} {
		at(d)
		tg.Kill()
		t.Logf("kill %d of tug at %v", i+1, time.Since(started).Round(time.Millisecond))
		time.Sleep(time.Duration(500*(i+1)) * time.Millisecond) // down a while: the output piles up
		tg.Start()
	}
	at(44 * time.Second)
	env.restartContainerd(t)
	t.Logf("containerd restarted at %v", time.Since(started).Round(time.Millisecond))

	// The container ends after 60 s; its log is complete once tug has
	// converted the rest and removed the raw files.
	state := filepath.Join(tg.rootDir, "pods", tg.uid("numbers"), "logs", "main", "0.state")
	tg.waitFor(90*time.Second, "the container to end and its raw log to be converted", func() (bool, error) {
		_, err := os.Stat(state)
		return os.IsNotExist(err), nil
	})

	dir := filepath.Join(tg.podLogGlob("numbers"), "main")
	var files []string
	for n := maxFiles; n >= 0; n-- {
		p := filepath.Join(dir, "0.log")
		if n > 0 {
			p += "." + strconv.Itoa(n)
		}
		if _, err := os.Stat(p); err == nil {
			files = append(files, p)
		}
	}
	next := map[string]int{"stdout": 0, "stderr": 0}
	prefix := map[string]string{"stdout": "n ", "stderr": "b "}
	end := map[string]int{"stdout": -1, "stderr": -1}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := parseCRI(string(data))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if !strings.HasSuffix(string(data), "\n") {
			t.Fatalf("%s does not end with a whole record", f)
		}
		for _, l := range lines {
			if l.Tag != "F" {
				t.Fatalf("%s: partial record %+v", f, l)
			}
			if end[l.Stream] >= 0 {
				t.Fatalf("%s: %s record %q after END", f, l.Stream, l.Text)
			}
			if v, ok := strings.CutPrefix(l.Text, "END "); ok {
				if n, _ := strconv.Atoi(v); n != next[l.Stream] {
					t.Fatalf("%s: %s says END %d after %d lines", f, l.Stream, n, next[l.Stream])
				}
				end[l.Stream] = next[l.Stream]
				continue
			}
			if want := fmt.Sprintf("%s%d", prefix[l.Stream], next[l.Stream]); l.Text != want {
				t.Fatalf("%s: %s record %q, want %q (each number once, in order)", f, l.Stream, l.Text, want)
			}
			next[l.Stream]++
		}
	}
	if end["stdout"] < 0 || end["stderr"] < 0 {
		t.Fatalf("no END line on stdout (%d) or stderr (%d): lines %v", end["stdout"], end["stderr"], next)
	}
	t.Logf("%d stdout lines (%.0f/s), %d stderr lines, in %d files, each once and in order",
		next["stdout"], float64(next["stdout"])/60, next["stderr"], len(files))
	if len(files) < 5 {
		t.Errorf("only %d log files: the test meant to cross rotations", len(files))
	}
	if next["stdout"] < 60*2000 {
		t.Errorf("only %d lines in 60 s: the container wrote far slower than meant", next["stdout"])
	}
}
