package cronjob

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"tug/internal/manifest"
	"tug/internal/pod"
	"tug/internal/testutil"
)

// fakeSink keeps each source's last snapshot.
type fakeSink struct {
	mu    sync.Mutex
	snaps map[string][]pod.SourceFile
	sets  int
}

func (f *fakeSink) Set(source string, m []pod.SourceFile) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.snaps == nil {
		f.snaps = map[string][]pod.SourceFile{}
	}
	f.snaps[source] = m
	f.sets++
}

// pods returns the names of source's pods, sorted.
func (f *fakeSink) pods(source string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, m := range f.snaps[source] {
		for _, p := range m.Pods {
			out = append(out, p.Metadata.Name)
		}
	}
	slices.Sort(out)
	return out
}

// fakeStatus reports a phase per pod name (Running when unset).
type fakeStatus map[string]pod.Phase

func (f fakeStatus) Status(p *pod.Pod) pod.Status {
	if ph, ok := f[p.Metadata.Name]; ok {
		return pod.Status{Phase: ph}
	}
	return pod.Status{Phase: pod.PhaseRunning}
}

type fakeEvents struct{ reasons []string }

func (f *fakeEvents) Event(_ *pod.Pod, _, _, reason, _ string) { f.reasons = append(f.reasons, reason) }

const cronFile = `apiVersion: batch/v1
kind: CronJob
metadata:
  name: tick
spec:
  schedule: "* * * * *"
  timeZone: Etc/UTC
  concurrencyPolicy: %s
  successfulJobsHistoryLimit: 2
  failedJobsHistoryLimit: 1
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers:
          - name: c
            image: busybox
---
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: c
    image: busybox
`

var origin = pod.Origin{Source: "file:/m", File: "/m/tick.yaml"}

func snapshot(t *testing.T, policy string) []pod.SourceFile {
	t.Helper()
	opts := manifest.ParseOptions{Origin: origin, Hostname: "h"}
	pf, err := manifest.ParseFile([]byte(fmt.Sprintf(cronFile, policy)), opts)
	if err != nil {
		t.Fatal(err)
	}
	return []pod.SourceFile{{Origin: opts.Origin, Pods: pf.Pods, Objects: pf.Objects, Hash: "h1"}}
}

// minute returns the run pod name for slot.
func runName(slot time.Time) string { return RunName("tick", slot) + "-pod-h" }

func TestSchedulerRuns(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	now := t0.Add(10 * time.Second)
	var mu sync.Mutex
	clk := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	set := func(d time.Duration) { mu.Lock(); now = t0.Add(d); mu.Unlock() }
	state := filepath.Join(t.TempDir(), "cronjob", "state.json")
	sink, status, events := &fakeSink{}, fakeStatus{}, &fakeEvents{}
	newScheduler := func() *Scheduler {
		return New(Config{Sink: sink, Status: status, Events: events, StateFile: state, Clock: clk})
	}
	s := newScheduler()
	s.Set("file:/m", snapshot(t, "Forbid"))
	if got := sink.pods("file:/m"); !slices.Equal(got, []string{"web-h"}) {
		t.Fatalf("before the first slot: %v", got)
	}
	s.Sync()

	// The first slot starts a run.
	set(time.Minute + time.Second)
	s.Sync()
	r1 := runName(t0.Add(time.Minute))
	if got := sink.pods("file:/m"); !slices.Equal(got, []string{r1, "web-h"}) {
		t.Fatalf("after the first slot: %v", got)
	}
	// The runs carry their CronJob's source, in the runs file.
	for _, m := range sink.snaps["file:/m"] {
		for _, p := range m.Pods {
			if p.Metadata.Name == r1 && (m.File != "/m/tick.yaml"+RunsSuffix || p.Metadata.Source != "file:/m" || p.CronJob != nil || p.ScheduledTime.IsZero() ||
				p.Metadata.Labels["job-name"] != RunName("tick", t0.Add(time.Minute))) {
				t.Fatalf("run pod from %q: source %q cronJob %v scheduled %v labels %v", m.File, p.Metadata.Source, p.CronJob, p.ScheduledTime, p.Metadata.Labels)
			}
		}
	}

	// Forbid: the next slot is held back while r1 runs.
	set(2*time.Minute + time.Second)
	s.Sync()
	if got := sink.pods("file:/m"); !slices.Equal(got, []string{r1, "web-h"}) {
		t.Fatalf("forbidden slot: %v", got)
	}
	if !slices.Contains(events.reasons, "JobAlreadyActive") {
		t.Fatalf("events %v: want JobAlreadyActive", events.reasons)
	}

	// r1 ends: the held slot starts (no deadline), as Kubernetes does.
	status[r1] = pod.PhaseSucceeded
	set(2*time.Minute + 10*time.Second)
	s.Sync()
	r2 := runName(t0.Add(2 * time.Minute))
	if got := sink.pods("file:/m"); !slices.Equal(got, []string{r1, r2, "web-h"}) {
		t.Fatalf("held slot after the run ended: %v", got)
	}

	// A restart: the state file gives back the runs and the last
	// schedule time; the slot missed while down runs once.
	status[r2] = pod.PhaseSucceeded
	s.Sync()
	set(5*time.Minute + 30*time.Second)
	s = newScheduler()
	s.Set("file:/m", snapshot(t, "Forbid"))
	if got := sink.pods("file:/m"); !slices.Equal(got, []string{r1, r2, "web-h"}) {
		t.Fatalf("after a restart, before its sync: %v", got)
	}
	s.Sync()
	r5 := runName(t0.Add(5 * time.Minute))
	// History: 2 successful kept, r1 (the oldest) removed.
	status[r5] = pod.PhaseSucceeded
	s.Sync()
	if got := sink.pods("file:/m"); !slices.Equal(got, []string{r2, r5, "web-h"}) {
		t.Fatalf("after the missed slot and the history limit: %v", got)
	}
	s.Sync()
	s = newScheduler()
	s.Set("file:/m", snapshot(t, "Forbid"))
	s.Sync()
	if got := sink.pods("file:/m"); !slices.Equal(got, []string{r2, r5, "web-h"}) {
		t.Fatalf("a second restart in the same minute runs nothing again: %v", got)
	}

	// The CronJob leaves its file: its runs and state go.
	s.Set("file:/m", []pod.SourceFile{{Origin: origin, Hash: "h2"}})
	if got := sink.pods("file:/m"); len(got) != 0 {
		t.Fatalf("after the CronJob left: %v", got)
	}
}

func TestSchedulerReplace(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	now := t0.Add(10 * time.Second)
	sink := &fakeSink{}
	s := New(Config{Sink: sink, Status: fakeStatus{}, Clock: func() time.Time { return now }})
	s.Set("file:/m", snapshot(t, "Replace"))
	now = t0.Add(time.Minute + time.Second)
	s.Sync()
	now = t0.Add(2*time.Minute + time.Second)
	s.Sync()
	if got := sink.pods("file:/m"); !slices.Equal(got, []string{runName(t0.Add(2 * time.Minute)), "web-h"}) {
		t.Fatalf("Replace: %v", got)
	}
}

func TestSchedulerBrokenFileKeepsRuns(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	now := t0.Add(10 * time.Second)
	sink := &fakeSink{}
	s := New(Config{Sink: sink, Status: fakeStatus{}, Clock: func() time.Time { return now }})
	s.Set("file:/m", snapshot(t, "Allow"))
	now = t0.Add(time.Minute + time.Second)
	s.Sync()
	s.Set("file:/m", []pod.SourceFile{{Origin: origin, Hash: "bad", Err: os.ErrInvalid}})
	now = t0.Add(2*time.Minute + time.Second)
	s.Sync()
	if got := sink.pods("file:/m"); !slices.Equal(got, []string{runName(t0.Add(time.Minute)), runName(t0.Add(2 * time.Minute))}) {
		t.Fatalf("a broken file's CronJob keeps running: %v", got)
	}
}

func TestSchedulerDamagedState(t *testing.T) {
	for name, content := range map[string]string{
		"cut short":  `{"cronJobs": {`,
		"null entry": `{"cronJobs": {"x": null}}`,
		"not JSON":   "\x00\x00\x00",
	} {
		t.Run(name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state.json")
			if err := os.WriteFile(state, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			sink := &fakeSink{}
			s := New(Config{Sink: sink, StateFile: state, Clock: func() time.Time { return time.Date(2026, 3, 1, 10, 0, 5, 0, time.UTC) }})
			s.Set("file:/m", snapshot(t, "Allow"))
			s.Sync()
			if got := sink.pods("file:/m"); !slices.Equal(got, []string{"web-h"}) {
				t.Fatalf("damaged state: %v", got)
			}
		})
	}
}

func TestSchedulerEvents(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		policy  string
		after   time.Duration // from the first run to the next Sync
		want    string
		wantNot string
	}{
		{"more than 100 missed slots", "Allow", 200 * time.Minute, "TooManyMissedTimes", ""},
		{"a few missed slots", "Allow", 5 * time.Minute, "SuccessfulCreate", "TooManyMissedTimes"},
		{"forbid while active", "Forbid", time.Minute, "JobAlreadyActive", ""},
		{"replace stops the active run", "Replace", time.Minute, "SuccessfulDelete", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := t0.Add(10 * time.Second)
			events := &fakeEvents{}
			s := New(Config{Sink: &fakeSink{}, Status: fakeStatus{}, Events: events, Clock: func() time.Time { return now }})
			s.Set("file:/m", snapshot(t, tt.policy))
			now = t0.Add(time.Minute + time.Second)
			s.Sync()
			events.reasons = nil
			now = now.Add(tt.after)
			s.Sync()
			if !slices.Contains(events.reasons, tt.want) || (tt.wantNot != "" && slices.Contains(events.reasons, tt.wantNot)) {
				t.Fatalf("events %v, want %s and not %q", events.reasons, tt.want, tt.wantNot)
			}
		})
	}
}

func TestSchedulerSuspended(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	now := t0.Add(10 * time.Second)
	sink := &fakeSink{}
	s := New(Config{Sink: sink, Status: fakeStatus{}, Clock: func() time.Time { return now }})
	snap := snapshot(t, "Allow")
	for _, p := range snap[0].Pods {
		if p.CronJob != nil {
			cj := *p.CronJob
			cj.Suspend = true
			p.CronJob = &cj
		}
	}
	s.Set("file:/m", snap)
	now = t0.Add(3*time.Minute + time.Second)
	s.Sync()
	if got := sink.pods("file:/m"); !slices.Equal(got, []string{"web-h"}) {
		t.Fatalf("suspended: %v", got)
	}
	// Resumed: the most recent missed slot runs.
	s.Set("file:/m", snapshot(t, "Allow"))
	s.Sync()
	if got := sink.pods("file:/m"); !slices.Equal(got, []string{runName(t0.Add(3 * time.Minute)), "web-h"}) {
		t.Fatalf("resumed: %v", got)
	}
}

func TestSchedulerFirstSeenPersists(t *testing.T) {
	// Seen at 10:00:10, restarted at 10:02:30 with no run yet: the slot
	// 10:02 missed while down runs (it came after the CronJob was seen).
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	now := t0.Add(10 * time.Second)
	state := filepath.Join(t.TempDir(), "state.json")
	sink := &fakeSink{}
	s := New(Config{Sink: sink, Status: fakeStatus{}, StateFile: state, Clock: func() time.Time { return now }})
	s.Set("file:/m", snapshot(t, "Allow"))
	now = t0.Add(2*time.Minute + 30*time.Second)
	s = New(Config{Sink: sink, Status: fakeStatus{}, StateFile: state, Clock: func() time.Time { return now }})
	s.Set("file:/m", snapshot(t, "Allow"))
	s.Sync()
	if got := sink.pods("file:/m"); !slices.Equal(got, []string{runName(t0.Add(2 * time.Minute)), "web-h"}) {
		t.Fatalf("after a restart before the first run: %v", got)
	}
}

// foundRuns is what the containers of the run pods in sink tell of their
// runs (what agent reads back from their labels).
func foundRuns(sink *fakeSink) []FoundRun {
	sink.mu.Lock()
	defer sink.mu.Unlock()
	var out []FoundRun
	for _, snap := range sink.snaps {
		for _, m := range snap {
			for _, p := range m.Pods {
				if !p.ScheduledTime.IsZero() {
					// One per container: a pod of two containers is one run.
					for range 2 {
						out = append(out, FoundRun{CronJob: p.CronJobUID, Source: p.Metadata.Source, Namespace: p.Metadata.Namespace, Slot: p.ScheduledTime})
					}
				}
			}
		}
	}
	return out
}

// TestSchedulerRestoresLostState: with the state file damaged (or gone)
// while two runs are active, the state is rebuilt from the runs' containers
// before the first snapshot reaches the sink: the runs' pods are passed on
// (adopted, not removed as orphans), their slots do not run again, the
// next slot does, a Warn names a damaged file, the file is rewritten and
// the next start warns about none and has the runs.
func TestSchedulerRestoresLostState(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	running := []string{runName(t0.Add(time.Minute)), runName(t0.Add(2 * time.Minute)), "web-h"}
	for _, d := range testutil.Damages {
		t.Run(string(d), func(t *testing.T) {
			now := t0.Add(10 * time.Second)
			clk := func() time.Time { return now }
			state := filepath.Join(t.TempDir(), "cronjob", "state.json")
			sink := &fakeSink{}
			s := New(Config{Sink: sink, Status: fakeStatus{}, StateFile: state, Clock: clk})
			s.Set("file:/m", snapshot(t, "Allow"))
			for _, at := range []time.Duration{time.Minute, 2 * time.Minute} {
				now = t0.Add(at + time.Second)
				s.Sync()
			}
			if got := sink.pods("file:/m"); !slices.Equal(got, running) {
				t.Fatalf("before the damage: %v", got)
			}
			found := foundRuns(sink)
			testutil.DamageFile(t, state, d)

			now = t0.Add(2*time.Minute + 30*time.Second)
			sink = &fakeSink{}
			log := testutil.NewWarnLog(t)
			s = New(Config{Sink: sink, Status: fakeStatus{}, StateFile: state, Clock: clk, Log: log.Logger})
			s.Restore(found)
			s.Set("file:/m", snapshot(t, "Allow"))
			if got := sink.pods("file:/m"); !slices.Equal(got, running) {
				t.Fatalf("first snapshot passed on after the %s state: %v, want the runs", d, got)
			}
			s.Sync()
			if got := sink.pods("file:/m"); !slices.Equal(got, running) {
				t.Fatalf("a slot ran again: %v", got)
			}
			wantWarn := []string{state}
			if d == testutil.DamageMissing {
				wantWarn = nil
			}
			if got := log.Files(); !slices.Equal(got, wantWarn) {
				t.Errorf("Warn files %v, want %v", got, wantWarn)
			}
			now = t0.Add(3*time.Minute + time.Second)
			s.Sync()
			if got := sink.pods("file:/m"); !slices.Equal(got, append(slices.Clone(running[:2]), runName(t0.Add(3*time.Minute)), "web-h")) {
				t.Fatalf("the next slot: %v", got)
			}

			// The file was rewritten: the next start reads it whole.
			sink = &fakeSink{}
			log = testutil.NewWarnLog(t)
			s = New(Config{Sink: sink, Status: fakeStatus{}, StateFile: state, Clock: clk, Log: log.Logger})
			s.Restore(nil)
			s.Set("file:/m", snapshot(t, "Allow"))
			if got := sink.pods("file:/m"); len(got) != 4 {
				t.Errorf("after a second start: %v, want the 3 runs and web", got)
			}
			if got := log.Files(); len(got) != 0 {
				t.Errorf("a second start warns about %v", got)
			}
		})
	}
}

// TestSchedulerRestoreKeepsAWholeFile: a state file read whole is the
// record; a run container it does not list (of a run pruned, or of a
// CronJob removed, while tug was down) is not restored, and is an orphan.
func TestSchedulerRestoreKeepsAWholeFile(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	now := t0.Add(10 * time.Second)
	clk := func() time.Time { return now }
	state := filepath.Join(t.TempDir(), "state.json")
	sink := &fakeSink{}
	s := New(Config{Sink: sink, Status: fakeStatus{}, StateFile: state, Clock: clk})
	s.Set("file:/m", snapshot(t, "Allow"))
	now = t0.Add(time.Minute + time.Second)
	s.Sync()
	found := foundRuns(sink)
	found = append(found, FoundRun{CronJob: found[0].CronJob, Source: "file:/m", Namespace: "default", Slot: t0})

	sink = &fakeSink{}
	s = New(Config{Sink: sink, Status: fakeStatus{}, StateFile: state, Clock: clk})
	s.Restore(found)
	s.Set("file:/m", snapshot(t, "Allow"))
	if got := sink.pods("file:/m"); !slices.Equal(got, []string{runName(t0.Add(time.Minute)), "web-h"}) {
		t.Fatalf("runs %v, want only the file's", got)
	}
}

// TestSchedulerClockSteps: a CronJob that ran at 10:01 with a clock a day
// ahead runs no slot twice once the clock is stepped back a day (its slots
// wait for the clock to pass 10:01 again); one whose clock was a year
// ahead runs its next slot after the step, not a year later.
func TestSchedulerClockSteps(t *testing.T) {
	tests := []struct {
		name    string
		back    time.Duration
		wantRun bool
	}{
		{"a day back", 24 * time.Hour, false},
		{"a year back", 365 * 24 * time.Hour, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t0 := time.Date(2027, 3, 1, 10, 0, 0, 0, time.UTC)
			now := t0.Add(10 * time.Second)
			var mu sync.Mutex
			clk := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			set := func(t time.Time) { mu.Lock(); now = t; mu.Unlock() }
			sink := &fakeSink{}
			status := fakeStatus{}
			s := New(Config{Sink: sink, Status: status, StateFile: filepath.Join(t.TempDir(), "state.json"), Clock: clk})
			s.Set("file:/m", snapshot(t, "Allow"))
			s.Sync()
			set(t0.Add(time.Minute + time.Second))
			s.Sync()
			r1 := runName(t0.Add(time.Minute))
			status[r1] = pod.PhaseSucceeded
			if got := sink.pods("file:/m"); !slices.Equal(got, []string{r1, "web-h"}) {
				t.Fatalf("before the step: %v", got)
			}
			stepped := t0.Add(-tt.back)
			set(stepped.Add(10 * time.Second))
			s.Sync()
			set(stepped.Add(2*time.Minute + time.Second))
			s.Sync()
			got := sink.pods("file:/m")
			ran := len(got) > 2
			if ran != tt.wantRun {
				t.Fatalf("after a step %s and two minutes: pods %v, want a new run %v", tt.name, got, tt.wantRun)
			}
			if ran && !slices.Contains(got, runName(stepped.Add(2*time.Minute))) {
				t.Fatalf("after a step %s: pods %v, want the run of %v", tt.name, got, stepped.Add(2*time.Minute))
			}
		})
	}
}
