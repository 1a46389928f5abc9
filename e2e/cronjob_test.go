//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"tug/internal/pod"
	"tug/internal/podview"
	"tug/internal/testutil"
)

// cronTimeout bounds the wait for a run: the next slot (a minute at most),
// then the run's start.
const cronTimeout = 100 * time.Second

// cronJob is a CronJob manifest running script every minute; extra is
// more lines of its spec (2 spaces in).
func cronJob(tg *tug, name, script, extra string) string {
	return fmt.Sprintf(`apiVersion: batch/v1
kind: CronJob
metadata:
  name: %s
spec:
  schedule: "*/1 * * * *"
  timeZone: Etc/UTC
%s  jobTemplate:
    spec:
      backoffLimit: 0
      template:
        spec:
          restartPolicy: Never
          terminationGracePeriodSeconds: 2
          containers:
            - name: main
              image: %s
              command: ["sh", "-c", %s]
`, name, extra, tg.image, q(script))
}

// runs returns the slots (minutes since the epoch) of the run pods of
// CronJob name that tug lists, sorted, with their views.
func (tg *tug) runs(name string) ([]int64, map[int64]podview.View, error) {
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	l, err := tg.api().Pods(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("GET /pods: %w", err)
	}
	views := map[int64]podview.View{}
	var slots []int64
	for _, v := range l.Items {
		rest, ok := strings.CutPrefix(v.Metadata.Name, name+"-")
		if !ok {
			continue
		}
		m, ok := strings.CutSuffix(rest, "-pod-"+hostname)
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(m, 10, 64)
		if err != nil {
			continue
		}
		slots = append(slots, n)
		views[n] = v
	}
	slices.Sort(slots)
	return slots, views, nil
}

// mustRuns is runs that fails the test on an error.
func (tg *tug) mustRuns(name string) ([]int64, map[int64]podview.View) {
	tg.t.Helper()
	slots, views, err := tg.runs(name)
	if err != nil {
		tg.t.Fatal(err)
	}
	return slots, views
}

// waitRuns waits until CronJob name has runs that pass check.
func (tg *tug) waitRuns(timeout time.Duration, name, what string, check func(slots []int64, views map[int64]podview.View) error) []int64 {
	tg.t.Helper()
	var slots []int64
	tg.waitFor(timeout, "CronJob "+name+": "+what, func() (bool, error) {
		var views map[int64]podview.View
		var err error
		if slots, views, err = tg.runs(name); err != nil {
			return false, err
		}
		if err := check(slots, views); err != nil {
			return false, fmt.Errorf("%w (runs %v)", err, slots)
		}
		return true, nil
	})
	return slots
}

// runPod is the manifest name of CronJob name's run for slot.
func runPod(name string, slot int64) string { return fmt.Sprintf("%s-%d-pod", name, slot) }

// atLeastSucceeded checks for n runs, all Succeeded.
func atLeastSucceeded(n int) func([]int64, map[int64]podview.View) error {
	return func(slots []int64, views map[int64]podview.View) error {
		if len(slots) < n {
			return fmt.Errorf("%d runs, want %d", len(slots), n)
		}
		for _, s := range slots {
			if ph := views[s].Status.Phase; ph != pod.PhaseSucceeded {
				return fmt.Errorf("run %d is %s", s, ph)
			}
		}
		return nil
	}
}

// TestCronJobRunsEachSlot: a CronJob scheduled every minute runs one Job
// pod per slot, named "<cronjob>-<minute>-pod" as the CronJob controller
// names its Jobs; each completes, its log is read with tug logs and its
// status with tug describe; the finished runs beyond
// successfulJobsHistoryLimit are removed with their containers and logs.
func TestCronJobRunsEachSlot(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	start := time.Now()
	tg.writeManifest("tick.yaml", cronJob(tg, "tick", "echo tick $(date +%s)", "  successfulJobsHistoryLimit: 1\n"))
	first := tg.waitRuns(cronTimeout, "tick", "a first run that succeeds", atLeastSucceeded(1))[0]
	if first*60 < start.Unix()-60 {
		t.Fatalf("first run for slot %d, before tug saw the CronJob at %v", first, start)
	}
	name := runPod("tick", first)
	out, stderr, code := tg.runCLI("logs", staticName(name))
	if code != 0 || !strings.Contains(out, "tick ") {
		t.Fatalf("tug logs %s = %d, %q %q", name, code, out, stderr)
	}
	out, stderr, code = tg.runCLI("describe", staticName(name))
	if code != 0 || !strings.Contains(out, "Succeeded") {
		t.Fatalf("tug describe %s = %d, %q %q", name, code, out, stderr)
	}
	out, _, _ = tg.runCLI("pods")
	if !strings.Contains(out, staticName(name)) {
		t.Fatalf("tug pods does not list %s:\n%s", name, out)
	}
	firstUID := tg.uid(name)
	logDir := tg.podLogGlob(name)

	// The next slot's run; the first, beyond the limit of 1, is removed.
	slots := tg.waitRuns(cronTimeout, "tick", "the next slot's run, the first removed", func(slots []int64, views map[int64]podview.View) error {
		if err := atLeastSucceeded(1)(slots, views); err != nil {
			return err
		}
		if len(slots) != 1 || slots[0] == first {
			return fmt.Errorf("want one run, of a later slot than %d", first)
		}
		return nil
	})
	if slots[0] != first+1 {
		t.Errorf("second run for slot %d, want %d (one run per slot)", slots[0], first+1)
	}
	tg.waitGone(removeTimeout, firstUID, "the first run's containers removed")
	if m, _ := filepath.Glob(logDir); len(m) != 0 {
		t.Errorf("the removed run's logs are still there: %v", m)
	}
	// Every run is its slot's: the pod started after its minute began.
	_, views := tg.mustRuns("tick")
	if st := views[slots[0]].Status.StartTime; st == nil || st.Unix() < slots[0]*60 {
		t.Errorf("run %d started at %v, before its slot", slots[0], st)
	}
	if l := views[slots[0]].Metadata.Labels["job-name"]; l != fmt.Sprintf("tick-%d", slots[0]) {
		t.Errorf("run %d has label job-name %q", slots[0], l)
	}
}

// TestCronJobForbidSkipsBusySlot: with concurrencyPolicy Forbid, the slot
// that comes while the previous run still runs (it sleeps 70 s) is not
// started (event JobAlreadyActive), and, its startingDeadlineSeconds past
// when that run ends, never is; the slot after runs.
func TestCronJobForbidSkipsBusySlot(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	tg.writeManifest("busy.yaml", cronJob(tg, "busy", "echo start; sleep 70; echo done",
		"  concurrencyPolicy: Forbid\n  startingDeadlineSeconds: 10\n"))
	first := tg.waitRuns(cronTimeout, "busy", "a first run", func(slots []int64, _ map[int64]podview.View) error {
		if len(slots) == 0 {
			return fmt.Errorf("no run")
		}
		return nil
	})[0]
	// The slot after the next: the busy one is skipped.
	slots := tg.waitRuns(3*time.Minute, "busy", "the run of the slot after the busy one", func(slots []int64, views map[int64]podview.View) error {
		if !slices.Contains(slots, first+2) {
			return fmt.Errorf("no run for slot %d", first+2)
		}
		if ph := views[first+2].Status.Phase; ph != pod.PhaseRunning && ph != pod.PhaseSucceeded {
			return fmt.Errorf("run %d is %s", first+2, ph)
		}
		return nil
	})
	if slices.Contains(slots, first+1) {
		t.Errorf("runs %v: slot %d, which came while run %d ran, was started", slots, first+1, first)
	}
	if reasons := tg.eventReasons(tg.uid("busy-pod")); !slices.Contains(reasons, "JobAlreadyActive") {
		t.Errorf("CronJob events %v, want JobAlreadyActive", reasons)
	}
	v, err := tg.podView(runPod("busy", first))
	if err != nil || v.Status.Phase != pod.PhaseSucceeded {
		t.Errorf("first run: %v %v, want Succeeded", v.Status.Phase, err)
	}
}

// TestCronJobMissedSlotAfterRestart: tug is killed after a slot's run
// and started again after the next slot has passed: a CronJob with no
// startingDeadlineSeconds runs the missed slot once (and only once, across
// one more restart), one whose deadline has passed does not; the runs left
// running and finished are adopted, not run again.
func TestCronJobMissedSlotAfterRestart(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	tg.writeManifest("late.yaml", cronJob(tg, "late", "echo late", ""))
	tg.writeManifest("strict.yaml", cronJob(tg, "strict", "echo strict", "  startingDeadlineSeconds: 15\n"))
	var first int64
	tg.waitFor(cronTimeout, "a first run of both CronJobs", func() (bool, error) {
		l, _, err := tg.runs("late")
		if err != nil {
			return false, err
		}
		s, _, err := tg.runs("strict")
		if err != nil {
			return false, err
		}
		if len(l) == 0 || len(s) == 0 {
			return false, fmt.Errorf("runs late %v strict %v", l, s)
		}
		if l[0] != s[0] {
			return false, fmt.Errorf("first runs of different slots: late %v strict %v", l, s)
		}
		first = l[0]
		return true, nil
	})
	tg.Kill()
	// Past the next slot and strict's 15 s deadline.
	if wait := time.Until(time.Unix((first+1)*60+25, 0)); wait > 0 {
		time.Sleep(wait)
	}
	tg.Start()
	tg.waitRuns(startTimeout, "late", "the missed slot run", func(slots []int64, _ map[int64]podview.View) error {
		if !slices.Contains(slots, first+1) {
			return fmt.Errorf("no run for the missed slot %d", first+1)
		}
		return nil
	})
	tg.waitPod(startTimeout, runPod("late", first+1), "Succeeded", phaseIs(pod.PhaseSucceeded))
	c, ok, err := tg.container(tg.uid(runPod("late", first+1)), "main")
	if err != nil || !ok {
		t.Fatalf("the missed slot's container: %v %v", ok, err)
	}
	// strict's missed slot was past its deadline; it must not run.
	if s, _ := tg.mustRuns("strict"); slices.Contains(s, first+1) {
		t.Errorf("strict runs %v: the slot %d past its deadline ran", s, first+1)
	}
	// Once: another restart within the same minute starts nothing again.
	if err := tg.Stop(); err != nil {
		t.Fatal(err)
	}
	tg.Start()
	tg.waitPod(startTimeout, runPod("late", first+1), "Succeeded", phaseIs(pod.PhaseSucceeded))
	c2, ok, err := tg.container(tg.uid(runPod("late", first+1)), "main")
	if err != nil || !ok || c2.ID != c.ID {
		t.Errorf("the missed slot's container after a restart: %v (%v, %v), want %v", c2.ID, ok, err, c.ID)
	}
	for _, name := range []string{"late", "strict"} {
		c, ok, err := tg.container(tg.uid(runPod(name, first)), "main")
		if err != nil || !ok || c.Attempt() != 0 {
			t.Errorf("%s's first run after restarts: %v %v %v, want its one container", name, c, ok, err)
		}
	}
	if _, err := os.Stat(filepath.Join(tg.rootDir, "cronjob", "state.json")); err != nil {
		t.Errorf("cronjob state: %v", err)
	}
}

// TestCronJobFromURLUnderItsPolicy: a CronJob served by --manifest-url
// runs as a pod of that source: its run is the URL's (its UID is the URL
// source's), a run within the URL's baseline policy completes, and the run
// of a CronJob whose template asks for every capability is Blocked by that
// policy and never created.
func TestCronJobFromURLUnderItsPolicy(t *testing.T) {
	t.Parallel()
	image, _ := testutil.TestImage(t)
	tmpl := cronJob(&tug{image: image}, "fetch", "echo fetched", "")
	caps := strings.Replace(cronJob(&tug{image: image}, "grab", "echo grabbed", ""),
		"              command:", "              securityContext: {capabilities: {add: [\"ALL\"]}}\n              command:", 1)
	srv := newManifestServer(t, good(tmpl+"---\n"+caps))
	tg := urlTug(t, srv.url)
	slot := tg.waitRuns(cronTimeout, "fetch", "a run that succeeds", atLeastSucceeded(1))[0]
	if _, ok, err := tg.container(urlUID(srv.url, runPod("fetch", slot)), "main"); err != nil || !ok {
		t.Fatalf("the run's container, as a pod of the URL source: %v %v", ok, err)
	}
	grab := tg.waitRuns(cronTimeout, "grab", "a run", func(slots []int64, _ map[int64]podview.View) error {
		if len(slots) == 0 {
			return fmt.Errorf("no run")
		}
		return nil
	})[0]
	tg.waitBlocked(runPod("grab", grab), `"ALL" is not allowed by the baseline policy of source `+srv.url)
	tg.assertNothingCreated(urlUID(srv.url, runPod("grab", grab)))
}

// TestCronJobDamagedStateKeepsRuns: tug is killed (SIGKILL) while a run is
// active and its cronjob/state.json is damaged, NUL-filled, then, at the
// next kill, truncated to zero, as a power cut leaves it. Each next tug
// warns naming the file, rebuilds the state from the runs' containers
// before any pod is synced: every run keeps its container and process (it
// is neither removed as an orphan nor run again for its slot), the next
// slot runs, and the file is rewritten: a further restart warns about
// none.
func TestCronJobDamagedStateKeepsRuns(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	state := filepath.Join(tg.rootDir, "cronjob", "state.json")
	tg.writeManifest("keep.yaml", cronJob(tg, "keep", "echo start; sleep 600", ""))
	active := func(what string, want func(slots []int64) error) []int64 {
		return tg.waitRuns(cronTimeout, "keep", what, func(slots []int64, views map[int64]podview.View) error {
			if err := want(slots); err != nil {
				return err
			}
			for _, s := range slots {
				if ph := views[s].Status.Phase; ph != pod.PhaseRunning {
					return fmt.Errorf("run %d is %s", s, ph)
				}
			}
			return nil
		})
	}
	slots := active("a first run, running", func(slots []int64) error {
		if len(slots) == 0 {
			return fmt.Errorf("no run")
		}
		return nil
	})
	for _, d := range []testutil.Damage{testutil.DamageNULFilled, testutil.DamageEmpty} {
		var names []string
		for _, s := range slots {
			names = append(names, runPod("keep", s))
		}
		want := tg.snapshotTasks(names)
		tg.Kill()
		testutil.DamageFile(t, state, d)
		mark := len(tg.output())
		tg.Start()
		last := slots[len(slots)-1]
		slots = active(fmt.Sprintf("the runs %v kept after a %s state file, and the next slot's", slots, d), func(got []int64) error {
			for _, s := range slots {
				if !slices.Contains(got, s) {
					return fmt.Errorf("run %d gone", s)
				}
			}
			if got[len(got)-1] <= last {
				return fmt.Errorf("no run after slot %d", last)
			}
			return nil
		})
		if err := tg.sameTasks(want); err != nil {
			t.Fatalf("after a %s state file, the runs were not adopted: %v", d, err)
		}
		if !warnedFiles(tg.output()[mark:])[state] {
			t.Errorf("no Warn names %s after it was %s", state, d)
		}
		tg.waitFor(startTimeout, "the state file rewritten with the runs", func() (bool, error) {
			data, err := os.ReadFile(state)
			if err != nil {
				return false, err
			}
			for _, s := range slots {
				if !strings.Contains(string(data), time.Unix(s*60, 0).UTC().Format(time.RFC3339)) {
					return false, fmt.Errorf("state %q does not hold slot %d", data, s)
				}
			}
			return true, nil
		})
	}

	// Rewritten whole: a further restart warns about nothing and keeps
	// every run.
	var names []string
	for _, s := range slots {
		names = append(names, runPod("keep", s))
	}
	want := tg.snapshotTasks(names)
	tg.Kill()
	mark := len(tg.output())
	tg.Start()
	tg.waitAllRunning(startTimeout, names)
	if err := tg.sameTasks(want); err != nil {
		t.Fatalf("after a restart with the rewritten state: %v", err)
	}
	if w := warnedFiles(tg.output()[mark:]); w[state] {
		t.Errorf("a restart after the rewrite warns about %s", state)
	}
}
