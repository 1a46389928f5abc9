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
// removal between runs is quick. The second verb is the hostNetwork line.
const manifest = `apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 0%s
  containers:
    - name: c
      image: %s
      command: ["sleep", "3600"]
`

// tugMethod is the method that measures tug u with pods on the pod network
// or, with hostNet, on the node's network.
func tugMethod(u *tugUnderTest, hostNet bool) method {
	name := u.label + " pod network"
	if hostNet {
		name = u.label + " hostNetwork"
	}
	return method{name: name, run: func(ctx context.Context, e *env, n, run int) (sample, error) {
		return runTug(ctx, e, u, hostNet, n, run)
	}}
}

// runTug is one measurement of tug u: n manifests are renamed into the
// manifest directory one right after the other; t0 is just before the
// first rename.
func runTug(ctx context.Context, e *env, u *tugUnderTest, hostNet bool, n, run int) (sample, error) {
	t := u.t
	if err := t.Alive(); err != nil {
		return sample{}, err
	}
	prefix, hostLine := "b", ""
	if hostNet {
		prefix, hostLine = "h", "\n  hostNetwork: true"
	}
	names := podNames(prefix, n, run)
	pods := map[string]bool{} // pod names as tug makes them: the key of a container ID
	for _, name := range names {
		pods[name+"-"+hostname] = true
		data := fmt.Sprintf(manifest, name, hostLine, e.o.Image)
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
	cpu0, cpuErr := kit.ReadTicks(t.PID())
	ctrd0 := e.containerdTicks()
	t0 := time.Now()
	for _, name := range names {
		base := name + ".yaml"
		if err := os.Rename(filepath.Join(t.Staging, base), filepath.Join(t.Manifests, base)); err != nil {
			return sample{}, fmt.Errorf("rename manifest into place: %w", err)
		}
	}
	tl, err := e.rec.Await(mctx, u.ns, n, key)
	if err != nil {
		return sample{}, fmt.Errorf("%w; tug's log ends:\n%s", err, t.Tail(20))
	}
	cpu1, cpuErr1 := kit.ReadTicks(t.PID())
	s := newSample(tl, t0)
	s.ctrdCPU = e.containerdSince(ctrd0)
	if cpuErr == nil && cpuErr1 == nil {
		s.cpu = e.ticks(cpu1 - cpu0)
	}
	if n == 1 {
		s.pickup, s.pickupMsg = pickupFromLog(t.LogPath, logFrom, e.o.pickupLog, t0)
	}
	if err := kit.CheckRunning(mctx, e.client, u.ns, n, mine); err != nil {
		return s, err
	}
	s.steps, s.stepOrder = stepsFromLog(t.LogPath, logFrom, pods)
	return s, removeTugPods(ctx, e, u, names, mine)
}

// removeTugPods deletes the run's manifests and waits (untimed) until tug
// has removed their containers.
func removeTugPods(ctx context.Context, e *env, u *tugUnderTest, names []string, mine func(string) bool) error {
	for _, name := range names {
		if err := os.Remove(filepath.Join(u.t.Manifests, name+".yaml")); err != nil {
			return fmt.Errorf("remove manifest: %w", err)
		}
	}
	err := kit.WaitGone(ctx, e.client, u.ns, time.Minute, mine)
	if err == nil {
		return nil
	}
	fmt.Fprintf(os.Stderr, "benchstart: WARNING: tug did not remove the pods' containers (%v); removing them\n", err)
	return kit.Purge(ctx, e.client, u.ns, mine)
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
// <p><n>r<run>-<i>, and <p>w<n>-<i> for the warm-up (run < 0).
func podNames(p string, n, run int) []string {
	prefix := fmt.Sprintf("%s%dr%d", p, n, run)
	if run < 0 {
		prefix = fmt.Sprintf("%sw%d", p, n)
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%02d", prefix, i)
	}
	return names
}

// The debug lines in which tug times its steps: a pod's sandbox (logged on
// every sync of the pod; the first one of a run is the sandbox's making)
// and a container's start.
const (
	msgSandboxSteps = "pod sandbox ready"
	msgStartSteps   = "container start steps"
)

// stepsFromLog returns the steps tug timed for the given pods in the lines
// written from offset on: each step's durations, one per pod, keyed
// "sandbox <step>" and "start <step>", and the keys in the order tug logs
// them. Lines of other pods, later syncs of a pod, and keys whose values
// are not durations are left out.
func stepsFromLog(path string, offset int64, pods map[string]bool) (map[string][]time.Duration, []string) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, nil
	}
	steps := map[string][]time.Duration{}
	var order []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var kind string
		switch logField(line, "msg") {
		case msgSandboxSteps:
			kind = "sandbox"
		case msgStartSteps:
			kind = "start"
		default:
			continue
		}
		_, name, _ := strings.Cut(logField(line, "pod"), "/")
		if !pods[name] || seen[kind+name] {
			continue
		}
		seen[kind+name] = true
		for _, kv := range strings.Fields(line) {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				continue
			}
			if d, err := time.ParseDuration(v); err == nil {
				key := kind + " " + k
				if _, ok := steps[key]; !ok {
					order = append(order, key)
				}
				steps[key] = append(steps[key], d)
			}
		}
	}
	return steps, order
}

// runTimeout bounds one measurement of n pods.
func runTimeout(n int) time.Duration {
	return 30*time.Second + time.Duration(n)*2*time.Second
}
