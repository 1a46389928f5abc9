//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestCrashLoopLogRetention: a crash-looping container that writes enough
// to rotate its log keeps the files of its current and previous attempts
// only (it kept every attempt's until the pod was removed: 31 attempts left
// 93 files in a minute), and each attempt has at most
// --container-log-max-files files, the current one included (it kept one
// more).
func TestCrashLoopLogRetention(t *testing.T) {
	t.Parallel()
	const maxFiles = 2
	tg := startTug(t, tugOpts{args: []string{
		"--crash-loop-back-off-initial", "100ms", "--crash-loop-back-off-max", "200ms",
		"--container-log-max-size", "1024", "--container-log-max-files", strconv.Itoa(maxFiles),
	}})
	// About 4 KiB per attempt: four rotations at 1 KiB.
	script := `i=0; while [ $i -lt 60 ]; do echo "attempt output line $i padding padding padding"; i=$((i+1)); done; exit 3`
	tg.writeManifest("crash.yaml", shPod("crash", tg.image, script))
	dir := filepath.Join(tg.podLogGlob("crash"), "main")

	// attempts returns the log files by attempt.
	attempts := func() (map[int][]string, error) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		m := map[int][]string{}
		for _, e := range entries {
			num, _, ok := strings.Cut(e.Name(), ".log")
			a, err := strconv.Atoi(num)
			if !ok || err != nil {
				return nil, fmt.Errorf("unexpected file %s in %s", e.Name(), dir)
			}
			m[a] = append(m[a], e.Name())
		}
		return m, nil
	}
	const wantAttempts = 8
	var seen int
	tg.waitFor(startTimeout, fmt.Sprintf("attempt %d to have a log", wantAttempts), func() (bool, error) {
		m, err := attempts()
		if err != nil {
			return false, nil
		}
		// Whenever we look, at most two attempts have files, and they
		// are consecutive (a start removes the files of the attempt
		// before the previous one).
		keys := slices.Sorted(func(yield func(int) bool) {
			for k := range m {
				if !yield(k) {
					return
				}
			}
		})
		if len(keys) > 2 || (len(keys) == 2 && keys[1] != keys[0]+1) {
			return false, fmt.Errorf("%w: log files of attempts %v: %v", errStop, keys, m)
		}
		for a, files := range m {
			if len(files) > maxFiles {
				return false, fmt.Errorf("%w: attempt %d has %d log files %v, over --container-log-max-files %d", errStop, a, len(files), files, maxFiles)
			}
			seen = max(seen, a)
		}
		return seen >= wantAttempts, nil
	})
	m, err := attempts()
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, files := range m {
		total += len(files)
	}
	if total > 2*maxFiles {
		t.Errorf("%d log files after %d attempts: %v", total, seen+1, m)
	}
	// The previous attempt's log (what "tug logs --previous" shows) is
	// still there and complete.
	prev := seen - 1
	if _, ok := m[prev]; !ok {
		if _, ok := m[seen+1]; !ok {
			t.Errorf("the previous attempt's log is gone: %v", m)
		}
	}
}
