package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"tug/bench/internal/kit"
)

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
	if err := t.Alive(); err != nil {
		return sample{}, err
	}
	names := podNames(n, run)
	pods := map[string]bool{} // pod names as tug makes them: the key of a container ID
	for _, name := range names {
		pods[name+"-"+hostname] = true
		data := fmt.Sprintf(manifest, name, e.o.Image)
		if err := os.WriteFile(filepath.Join(t.Staging, name+".yaml"), []byte(data), 0o600); err != nil {
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
	e.rec.Drain()
	logFrom := t.LogSize()
	t0 := time.Now()
	for _, name := range names {
		base := name + ".yaml"
		if err := os.Rename(filepath.Join(t.Staging, base), filepath.Join(t.Manifests, base)); err != nil {
			return sample{}, fmt.Errorf("rename manifest into place: %w", err)
		}
	}
	tl, err := e.rec.Await(mctx, nsTug, n, key)
	if err != nil {
		return sample{}, fmt.Errorf("%w; tug's log ends:\n%s", err, t.Tail(20))
	}
	s := newSample(tl, t0)
	if n == 1 {
		s.pickup, s.pickupMsg = pickupFromLog(t.LogPath, logFrom, e.o.pickupLog, t0)
	}
	if err := kit.CheckRunning(mctx, e.client, nsTug, n, mine); err != nil {
		return s, err
	}
	return s, removeTugPods(ctx, e, names, mine)
}

// removeTugPods deletes the run's manifests and waits (untimed) until tug
// has removed their containers.
func removeTugPods(ctx context.Context, e *env, names []string, mine func(string) bool) error {
	for _, name := range names {
		if err := os.Remove(filepath.Join(e.tug.Manifests, name+".yaml")); err != nil {
			return fmt.Errorf("remove manifest: %w", err)
		}
	}
	err := kit.WaitGone(ctx, e.client, nsTug, time.Minute, mine)
	if err == nil {
		return nil
	}
	fmt.Fprintf(os.Stderr, "benchstart: WARNING: tug did not remove the pods' containers (%v); removing them\n", err)
	return kit.Purge(ctx, e.client, nsTug, mine)
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
