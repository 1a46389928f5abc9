// Command benchrollout measures a rollback against a plain
// update of the same pod, in the same run ("make bench"): it starts tug
// with one pod (an HTTP server with a readiness probe), and repeats
//
//   - a plain update: a new manifest renamed into place, timed from the
//     rename until the new container runs (its startedAt);
//   - a bad update (its readiness never succeeds, rollout timeout 3 s),
//     timed from tug's decision to roll back (the end of the failed spec in
//     the pod's history) until the last good spec's container runs.
//
// Both replace the running container (stop, create, start). It reports
// the medians and their ratio (target: the rollback within 1.2x of the
// plain update).
//
//	go run ./bench/benchrollout [-runs 7] [-tug ./tug] [-keep] [-markdown]
//
// It needs root and a containerd (scripts/testenv.sh up). It exits 0
// whether the target is met or not: it is a measurement.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tug/bench/internal/kit"
	"tug/internal/pod"
	"tug/internal/podview"
)

const (
	namespace = "bench-rollout"
	hostname  = "bench"
	podName   = "roll"
	target    = 1.2
)

type options struct {
	kit.Options
	runs int
}

func main() {
	var o options
	o.Flags(flag.CommandLine)
	flag.IntVar(&o.runs, "runs", 7, "plain updates and rollbacks measured")
	flag.Parse()
	err := o.Options.Check()
	if err == nil && (o.runs < 1 || o.runs > 50) {
		err = errors.New("-runs: from 1 to 50")
	}
	kit.Run("benchrollout", err, func(ctx context.Context) error { return run(ctx, o) })
}

// manifest is the pod at version n; ready false gives it a readiness
// probe that never succeeds. The container exits on SIGTERM at once, so
// neither path waits for a grace period.
func manifest(image string, n int, ready bool) string {
	path := "/index.html"
	if !ready {
		path = "/missing"
	}
	script := fmt.Sprintf("trap 'exit 0' TERM; mkdir -p /www && echo v%d > /www/index.html && httpd -p 8080 -h /www; while :; do sleep 0.1; done", n)
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  annotations:
    tug.io/rollout-timeout: "3s"
spec:
  terminationGracePeriodSeconds: 5
  containers:
    - name: main
      image: %s
      command: ["sh", "-c", %q]
      readinessProbe:
        httpGet: {path: %s, port: 8080}
        periodSeconds: 1
`, podName, image, script, path)
}

func run(ctx context.Context, o options) (err error) {
	s, err := kit.Open(ctx, "benchrollout", o.Options, namespace)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	tug, err := s.NewTug(ctx, kit.TugConfig{Hostname: hostname, Netns: "rollout", Args: []string{"--rollout-min-ready", "1s"}})
	if err != nil {
		return err
	}
	if err := tug.AddImage(o.Archive); err != nil {
		return err
	}
	m := measurer{tug: tug, image: o.Image}
	if err := m.write(0, true); err != nil {
		return err
	}
	if err := tug.Start(); err != nil {
		return err
	}
	if _, err := m.waitRunning(ctx, 0, time.Time{}); err != nil {
		return err
	}
	good, err := m.waitGood(ctx, "")
	if err != nil {
		return err
	}
	var plain, rollback []time.Duration
	for i := 1; i <= o.runs; i++ {
		n := 2 * i
		t0 := time.Now()
		if err := m.write(n-1, true); err != nil {
			return err
		}
		started, err := m.waitRunning(ctx, n-1, t0)
		if err != nil {
			return err
		}
		plain = append(plain, started.Sub(t0))
		if good, err = m.waitGood(ctx, good); err != nil {
			return err
		}
		if err := m.write(n, false); err != nil {
			return err
		}
		decided, err := m.waitRolledBack(ctx, good)
		if err != nil {
			return err
		}
		started, err = m.waitRunning(ctx, n-1, decided)
		if err != nil {
			return err
		}
		rollback = append(rollback, started.Sub(decided))
		fmt.Fprintf(os.Stderr, "benchrollout: run %d: plain update %v, rollback %v\n", i, plain[i-1].Round(time.Millisecond), rollback[i-1].Round(time.Millisecond))
	}
	report(os.Stdout, o, plain, rollback)
	return nil
}

// measurer writes the pod's manifest and reads its state from tug.
type measurer struct {
	tug   *kit.Tug
	image string
}

func (m measurer) write(n int, ready bool) error {
	tmp := filepath.Join(m.tug.Staging, podName+".yaml")
	if err := os.WriteFile(tmp, []byte(manifest(m.image, n, ready)), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(m.tug.Manifests, podName+".yaml"))
}

// waitRunning waits until container main of version n runs, started after
// after, and returns when it started.
func (m measurer) waitRunning(ctx context.Context, n int, after time.Time) (time.Time, error) {
	var started time.Time
	marker := fmt.Sprintf("echo v%d ", n)
	err := m.tug.WaitPods(ctx, 1, time.Minute, func(v *podview.View) bool {
		if len(v.Status.ContainerStatuses) != 1 || len(v.Spec.Containers) != 1 {
			return false
		}
		r := v.Status.ContainerStatuses[0].State.Running
		if r == nil || !r.StartedAt.After(after) || !strings.Contains(strings.Join(v.Spec.Containers[0].Command, " "), marker) {
			return false
		}
		started = r.StartedAt
		return true
	})
	return started, err
}

// waitGood waits until the pod has a last good spec other than not, and
// returns its hash.
func (m measurer) waitGood(ctx context.Context, not string) (string, error) {
	var good string
	err := m.poll(ctx, "a new last good spec", func(h pod.RolloutHistory) bool {
		good = h.GoodHash
		return good != "" && good != not
	})
	return good, err
}

// waitRolledBack waits until the newest spec was rolled back to good,
// and returns when tug decided it.
func (m measurer) waitRolledBack(ctx context.Context, good string) (time.Time, error) {
	var decided time.Time
	err := m.poll(ctx, "a rollback", func(h pod.RolloutHistory) bool {
		if len(h.Entries) == 0 || h.GoodHash != good {
			return false
		}
		e := h.Entries[len(h.Entries)-1]
		decided = e.Ended
		return e.Outcome == "RolledBack" && e.Hash == h.Failed
	})
	return decided, err
}

func (m measurer) poll(ctx context.Context, what string, done func(h pod.RolloutHistory) bool) error {
	c := m.tug.API()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if err := m.tug.Alive(); err != nil {
			return err
		}
		if h, err := c.History(ctx, "default", podName+"-"+hostname); err == nil && done(h) {
			return nil
		}
		if err := kit.Sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("no %s within a minute", what)
}

func report(w io.Writer, o options, plain, rollback []time.Duration) {
	p, r := kit.Summarise(plain), kit.Summarise(rollback)
	fmt.Fprintf(w, "\nbenchrollout: one pod, %d plain updates and %d rollbacks, same tug and pod\n\n", len(plain), len(rollback))
	t := kit.Table{Header: []string{"", "median", "min", "max", "runs"}}
	t.Row("plain update (rename -> new container running)", kit.MS(p.Med), kit.MS(p.Min), kit.MS(p.Max), len(plain))
	t.Row("rollback (decision -> good spec's container running)", kit.MS(r.Med), kit.MS(r.Min), kit.MS(r.Max), len(rollback))
	t.Write(w, o.Markdown)
	ratio, ok := kit.Ratio(float64(r.Med), float64(p.Med))
	fmt.Fprintf(w, "\nrollback / plain update (medians): %s (target <= %.1fx)  %s\n", kit.DurationRatio(r.Med, p.Med), target, kit.Verdict(ok && ratio <= target))
}
