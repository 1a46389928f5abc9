package rollout

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"

	"tug/internal/clock"
	"tug/internal/pod"
	"tug/internal/podconfig"
	"tug/internal/reconcile"
	"tug/internal/testutil"
)

// fakeStore is the pod store: the wanted pods and the pins set.
type fakeStore struct {
	mu       sync.Mutex
	wanted   []podconfig.Desired
	files    []podconfig.FileState
	pins     map[string]podconfig.Pin
	filePins []podconfig.FilePin
}

func (f *fakeStore) Wanted() []podconfig.Desired {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]podconfig.Desired(nil), f.wanted...)
}

func (f *fakeStore) SetPins(pins map[string]podconfig.Pin, files []podconfig.FilePin) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pins, f.filePins = pins, files
}

func (f *fakeStore) Files() []podconfig.FileState {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]podconfig.FileState(nil), f.files...)
}

func (f *fakeStore) Owns(string, string) (bool, bool) { return true, false }

func (f *fakeStore) want(p *pod.Pod, hash string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.wanted = []podconfig.Desired{{Pod: p, Hash: hash, Origin: pod.Origin{Source: "file", File: "a.yaml"}}}
}

// fakePods answers Progress with what the test set: for a pod named in
// byName its own, else progress.
type fakePods struct {
	progress reconcile.Progress
	byName   map[string]reconcile.Progress
}

func (f *fakePods) Progress(p *pod.Pod) reconcile.Progress {
	if pr, ok := f.byName[p.Metadata.Name]; ok {
		return pr
	}
	return f.progress
}

func testPod(annotations map[string]string) *pod.Pod {
	return testutil.Pod("web", testutil.WithUID("0123abcd-0000-0000-0000-000000000001"), testutil.WithAnnotations(annotations),
		testutil.WithApps("main"), testutil.WithImage("busybox"))
}

func ready(since time.Time, attempt int) reconcile.Progress {
	return reconcile.Progress{Current: true, Attempts: map[string]int{"main": attempt},
		Status: pod.Status{Conditions: []pod.Condition{{Type: pod.ConditionReady, Status: "True", LastTransitionTime: since}}}}
}

type harness struct {
	t     *testing.T
	dir   string
	now   time.Time
	store *fakeStore
	pods  *fakePods
	reg   *prometheus.Registry
	c     *Controller
}

func newHarness(t *testing.T, dir, boot string) *harness {
	return newHarnessAt(t, dir, boot, time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC))
}

// newHarnessAt starts the controller at now.
func newHarnessAt(t *testing.T, dir, boot string, now time.Time) *harness {
	h := &harness{t: t, dir: dir, now: now, store: &fakeStore{}, pods: &fakePods{}, reg: prometheus.NewRegistry()}
	c, err := New(Config{Dir: dir, MinReady: 30 * time.Second, Timeout: 5 * time.Minute, Store: h.store, Pods: h.pods,
		Registerer: h.reg, Clock: clock.Clock(func() time.Time { return h.now }), BootID: boot})
	if err != nil {
		t.Fatal(err)
	}
	h.c = c
	return h
}

// step advances the clock by d and judges once, setting the pins as Run
// does.
func (h *harness) step(d time.Duration) {
	h.now = h.now.Add(d)
	if h.c.judge() {
		h.c.setPins(context.Background())
	}
}

// good makes spec A the last good spec of the pod.
func (h *harness) good(p *pod.Pod, hash string) {
	h.store.want(p, hash)
	h.pods.progress = ready(h.now, 0)
	h.step(0)
	h.step(31 * time.Second)
	if hist, _ := h.c.History(p.Metadata.UID); hist.GoodHash != hash {
		h.t.Fatalf("good hash %q, want %q", hist.GoodHash, hash)
	}
}

// updated returns a harness (on boot-1, state in dir) whose pod has the
// good spec A and runs B with progress pr for d.
func updated(t *testing.T, dir string, pr reconcile.Progress, d time.Duration) (*harness, *pod.Pod) {
	h := newHarness(t, dir, "boot-1")
	p := testPod(nil)
	h.good(p, "A")
	h.store.want(p, "B")
	h.pods.progress = pr
	h.step(d)
	return h, p
}

func (h *harness) pinned(uid, failed string) bool {
	pin, ok := h.store.pins[uid]
	return ok && pin.Failed == failed && pin.Good != nil
}

func TestRollback(t *testing.T) {
	tests := []struct {
		name       string
		annotation map[string]string
		progress   func(h *harness) reconcile.Progress
		wait       time.Duration
		rolledBack bool
	}{
		{"image cannot be pulled", nil, func(*harness) reconcile.Progress {
			return reconcile.Progress{Failure: pod.ReasonErrImagePull, Message: "main: not found"}
		}, time.Second, true},
		{"restarts beyond the limit", nil, func(h *harness) reconcile.Progress {
			p := ready(h.now, 3)
			p.Status.Conditions[0].Status = "False"
			return p
		}, time.Second, true},
		{"never ready", nil, func(h *harness) reconcile.Progress {
			p := ready(h.now, 0)
			p.Status.Conditions[0].Status = "False"
			return p
		}, 6 * time.Minute, true},
		{"ready in time", nil, func(h *harness) reconcile.Progress { return ready(h.now, 0) }, 31 * time.Second, false},
		{"rollback off", map[string]string{AnnotationTimeout: "0"}, func(*harness) reconcile.Progress {
			return reconcile.Progress{Failure: pod.ReasonErrImagePull}
		}, 10 * time.Minute, false},
		{"own timeout", map[string]string{AnnotationTimeout: "20s"}, func(h *harness) reconcile.Progress {
			return reconcile.Progress{Current: false}
		}, 21 * time.Second, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, t.TempDir(), "boot-1")
			p := testPod(tt.annotation)
			h.good(p, "A")
			h.store.want(p, "B")
			h.step(time.Second) // the watch of B starts
			// The first attempt of B is attempt 0: the base of its restarts.
			h.pods.progress = ready(h.now, 0)
			h.pods.progress.Status.Conditions[0].Status = "False"
			h.step(0)
			h.pods.progress = tt.progress(h)
			h.step(tt.wait)
			h.step(0)
			if got := h.pinned(p.Metadata.UID, "B"); got != tt.rolledBack {
				t.Fatalf("pinned = %v, want %v (pins %v)", got, tt.rolledBack, h.store.pins)
			}
			cond := h.c.Condition(p.Metadata.UID)
			hist, _ := h.c.History(p.Metadata.UID)
			if tt.rolledBack {
				if cond == nil || cond.Type != ConditionRolloutFailed || cond.Reason != ReasonRolledBack {
					t.Errorf("condition %+v, want RolloutFailed/RolledBack", cond)
				}
				if last := hist.Entries[len(hist.Entries)-1]; last.Hash != "B" || last.Outcome != OutcomeRolledBack || last.Reason == "" {
					t.Errorf("history ends with %+v", last)
				}
				if n := promtest.ToFloat64(h.c.total.WithLabelValues("rolled_back")); n != 1 {
					t.Errorf("rolled_back = %v", n)
				}
			} else if cond != nil {
				t.Errorf("condition %+v, want none", cond)
			}
		})
	}
}

func TestRollbackKeptAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	h, p := updated(t, dir, reconcile.Progress{Failure: pod.ReasonErrImagePull}, time.Second)
	if !h.pinned(p.Metadata.UID, "B") {
		t.Fatal("B not held back")
	}

	// A new tug: the pin is there before any source reports.
	h2 := newHarness(t, dir, "boot-1")
	pins, _ := h2.c.Pins()
	if pin, ok := pins[p.Metadata.UID]; !ok || pin.Failed != "B" || pin.GoodHash != "A" || pin.Good.Metadata.Name != "web" {
		t.Fatalf("pins after a restart: %+v", pins)
	}
	// The source's content changes: the pin goes and C is watched.
	h2.store.want(p, "C")
	h2.pods.progress = ready(h2.now, 0)
	h2.step(time.Second)
	if _, ok := h2.store.pins[p.Metadata.UID]; ok {
		t.Fatal("the pin stayed after the content changed")
	}
}

// TestRolloutCutByReboot: a restart of tug goes on with a watch; a reboot
// starts it over (timeout and restarts counted afresh), and the second
// reboot during the same update rolls it back.
func TestRolloutCutByReboot(t *testing.T) {
	dir := t.TempDir()
	_, p := updated(t, dir, reconcile.Progress{}, time.Second) // B is watched, not good yet

	same := newHarness(t, dir, "boot-1") // tug restarted: the rollout goes on
	if pins, _ := same.c.Pins(); len(pins) != 0 {
		t.Fatal("a restart of tug rolled back")
	}
	once := newHarness(t, dir, "boot-2") // a power cut: B is tried again
	if pins, _ := once.c.Pins(); len(pins) != 0 {
		t.Fatalf("after one reboot: pins %+v, want B tried again", pins)
	}
	if hist, _ := once.c.History(p.Metadata.UID); hist.Entries[len(hist.Entries)-1].Outcome != OutcomeProgressing {
		t.Fatalf("after one reboot: history %+v, want B progressing", hist.Entries)
	}
	twice := newHarness(t, dir, "boot-3") // again before B was good: back to A
	if pins, _ := twice.c.Pins(); pins[p.Metadata.UID].Failed != "B" || pins[p.Metadata.UID].GoodHash != "A" {
		t.Fatalf("after a second reboot: pins %+v, want B held back for A", pins)
	}
	if cond := twice.c.Condition(p.Metadata.UID); cond == nil || cond.Reason != ReasonRolledBack || !strings.Contains(cond.Message, "rebooted twice") {
		t.Fatalf("after a second reboot: condition %+v", cond)
	}
}

// TestRebootRestartsTheRestartCount: the containers a boot starts again
// do not count against the update's restart budget, and the timeout
// counts from the boot.
func TestRebootRestartsTheRestartCount(t *testing.T) {
	dir := t.TempDir()
	h, p := updated(t, dir, reconcile.Progress{Current: true, Attempts: map[string]int{"main": 4}}, 4*time.Minute) // B runs (attempt 4), not Ready yet

	b := newHarnessAt(t, dir, "boot-2", h.now.Add(2*time.Minute)) // past B's first timeout, counted from boot-1
	b.store.want(p, "B")
	b.pods.progress = reconcile.Progress{Current: true, Attempts: map[string]int{"main": 7}}
	b.step(0) // the boot restarted main: attempt 7 is its base
	b.pods.progress = ready(b.now, 7)
	b.step(time.Second)
	b.step(31 * time.Second)
	if hist, _ := b.c.History(p.Metadata.UID); hist.GoodHash != "B" || hist.Failed != "" {
		t.Fatalf("after a reboot: good %q failed %q (%s), want B good", hist.GoodHash, hist.Failed, hist.Reason)
	}
}

func TestManualRollback(t *testing.T) {
	h := newHarness(t, t.TempDir(), "boot-1")
	p := testPod(nil)
	if err := h.c.Rollback(p.Metadata.UID); err != ErrUnknownPod {
		t.Fatalf("Rollback of an unknown pod: %v", err)
	}
	h.good(p, "A")
	h.store.want(p, "B")
	h.pods.progress = ready(h.now, 0)
	h.step(time.Second)
	if err := h.c.Rollback(p.Metadata.UID); err != nil {
		t.Fatal(err)
	}
	h.step(0)
	if !h.pinned(p.Metadata.UID, "B") {
		t.Fatal("B not held back after tug rollback")
	}
}

func TestParseAnnotations(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{{"0", 0, true}, {"90s", 90 * time.Second, true}, {"5m", 5 * time.Minute, true}, {"-1s", 0, false}, {"ten", 0, false}} {
		got, err := ParseTimeout(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseTimeout(%q) = %v, %v", tt.in, got, err)
		}
	}
	if n, err := ParseMaxRestarts("3"); err != nil || n != 3 {
		t.Errorf("ParseMaxRestarts(3) = %v, %v", n, err)
	}
	if _, err := ParseMaxRestarts("-1"); err == nil {
		t.Error("ParseMaxRestarts(-1) accepted")
	}
}

// TestAtomicBundle: when one pod of an atomic file fails, the whole file
// returns to the last content in which all its pods were good (a file
// pin), every changed pod shows RolledBack, and the next content is tried.
func TestAtomicBundle(t *testing.T) {
	h := newHarness(t, t.TempDir(), "boot-1")
	origin := pod.Origin{Source: "http://bundle", File: "http://bundle"}
	atomic := map[string]string{AnnotationRollout: RolloutAtomic}
	a, b := testPod(atomic), testPod(atomic)
	b.Metadata.Name, b.Metadata.UID = "db", "0123abcd-0000-0000-0000-000000000002"
	content := func(hash string, version uint64, hashes ...string) {
		h.store.mu.Lock()
		defer h.store.mu.Unlock()
		h.store.files = []podconfig.FileState{{Origin: origin, AppliedHash: hash, Hash: hash, Version: version}}
		h.store.wanted = []podconfig.Desired{{Pod: a, Hash: hashes[0], Origin: origin}, {Pod: b, Hash: hashes[1], Origin: origin}}
	}
	content("C1", 1, "A1", "B1")
	h.pods.progress = ready(h.now, 0)
	h.step(0)
	h.step(31 * time.Second)
	h.step(0)
	if fr := h.c.File(origin); fr == nil || fr.GoodHash != "C1" || fr.GoodVersion != 1 || !fr.Atomic {
		t.Fatalf("file after a good content: %+v", fr)
	}
	// Version 2 changes both pods; one cannot pull its image.
	content("C2", 2, "A2", "B2")
	h.pods.progress = reconcile.Progress{Failure: pod.ReasonErrImagePull, Message: "main: not found"}
	h.step(time.Second)
	fr := h.c.File(origin)
	if fr == nil || fr.FailedHash != "C2" || fr.FailedVersion != 2 || !fr.HeldBack {
		t.Fatalf("file after a failed content: %+v", fr)
	}
	if len(h.store.filePins) != 1 || h.store.filePins[0].Failed != "C2" || len(h.store.filePins[0].Pods) != 2 || h.store.filePins[0].Hashes[1] != "B1" {
		t.Fatalf("file pins %+v", h.store.filePins)
	}
	for _, p := range []*pod.Pod{a, b} {
		if cond := h.c.Condition(p.Metadata.UID); cond == nil || cond.Reason != ReasonRolledBack {
			t.Errorf("pod %s: condition %+v", p.Metadata.Name, cond)
		}
	}
	// The store now reports the pods pinned: they are not judged.
	h.store.mu.Lock()
	h.store.files[0].Pinned = true
	for i := range h.store.wanted {
		h.store.wanted[i].Pinned = true
	}
	h.store.mu.Unlock()
	h.step(10 * time.Minute)
	if n := promtest.ToFloat64(h.c.total.WithLabelValues("rolled_back")); n != 2 {
		t.Errorf("rolled_back = %v, want 2 (one per pod)", n)
	}
	// Version 3 is tried.
	content("C3", 3, "A3", "B3")
	h.pods.progress = ready(h.now, 0)
	h.step(time.Second)
	if len(h.store.filePins) != 0 {
		t.Fatalf("file pins after a new content: %+v", h.store.filePins)
	}
	h.step(31 * time.Second)
	h.step(0)
	if fr := h.c.File(origin); fr.GoodHash != "C3" || fr.FailedHash != "" {
		t.Errorf("file after version 3: %+v", fr)
	}
}

// TestCorruptStateSkipped: a record that does not read is skipped (the
// pod starts with no rollout state); the others load.
func TestCorruptStateSkipped(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, dir, "boot-1")
	p := testPod(nil)
	h.good(p, "A")
	for _, name := range []string{"ffffffff-0000-0000-0000-000000000000.json", "files/0000.json"} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	h2 := newHarness(t, dir, "boot-1")
	if hist, err := h2.c.History(p.Metadata.UID); err != nil || hist.GoodHash != "A" {
		t.Errorf("after a corrupt neighbour: %+v, %v", hist, err)
	}
}

// TestTimeoutBoundsReachingReady: the rollout timeout bounds the time an
// update takes to become Ready; once Ready, the min-ready window decides,
// even when it is longer than the timeout. Each row is a timeline of
// steps with the pod's state during them, and the reason expected at its
// end ("" for a spec that became the last good one).
func TestTimeoutBoundsReachingReady(t *testing.T) {
	type step struct {
		d        time.Duration
		ready    bool
		attempt  int
		flipped  bool // the Ready condition changed at the start of this step
		wantGood bool // the spec is the last good one after this step
	}
	tests := []struct {
		name   string
		steps  []step
		reason string
	}{
		{"ready in 1s, timeout 15s, min-ready 30s", []step{
			{d: time.Second, ready: true, flipped: true},
			{d: 15 * time.Second, ready: true},
			{d: 16 * time.Second, ready: true, wantGood: true},
		}, ""},
		{"never ready", []step{
			{d: 10 * time.Second},
			{d: 6 * time.Second},
		}, "not ready within 15s"},
		{"ready, then out of Ready longer than the timeout", []step{
			{d: time.Second, ready: true, flipped: true},
			{d: 5 * time.Second, flipped: true},
			{d: 16 * time.Second},
		}, "ready, then not ready again for over 15s"},
		{"ready again after a restart, the timeout passed", []step{
			{d: time.Second, ready: true, flipped: true},
			{d: 5 * time.Second, ready: true, attempt: 1, flipped: true},
			{d: 16 * time.Second, ready: true, attempt: 1},
		}, "containers restarted 1 times: not ready for 30s with no restart within 15s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, t.TempDir(), "boot-1")
			p := testPod(map[string]string{AnnotationTimeout: "15s"})
			h.good(p, "A")
			h.store.want(p, "B")
			h.pods.progress = ready(h.now, 0)
			h.pods.progress.Status.Conditions[0].Status = "False"
			h.step(0) // the watch of B starts; attempt 0 is the base
			for i, s := range tt.steps {
				if s.flipped {
					h.pods.progress = ready(h.now, s.attempt)
					if !s.ready {
						h.pods.progress.Status.Conditions[0].Status = "False"
					}
				}
				h.pods.progress.Attempts["main"] = s.attempt
				h.step(s.d)
				hist, _ := h.c.History(p.Metadata.UID)
				if got := hist.GoodHash == "B"; got != s.wantGood {
					t.Fatalf("step %d: last good spec %q", i, hist.GoodHash)
				}
			}
			hist, _ := h.c.History(p.Metadata.UID)
			last := hist.Entries[len(hist.Entries)-1]
			if tt.reason == "" {
				if h.pinned(p.Metadata.UID, "B") || last.Reason != "" {
					t.Fatalf("update failed: %+v", last)
				}
				return
			}
			if !h.pinned(p.Metadata.UID, "B") || last.Reason != tt.reason {
				t.Fatalf("last history entry %+v, pinned %v; want rolled back with reason %q", last, h.pinned(p.Metadata.UID, "B"), tt.reason)
			}
		})
	}
}

// TestBlockedUpdateInHistory: with rollback off, an update whose container
// cannot start stays Progressing, its history entry saying why (saved
// when the reason changes), and the reason goes once the update runs.
func TestBlockedUpdateInHistory(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, dir, "boot-1")
	p := testPod(map[string]string{AnnotationTimeout: "0"})
	h.good(p, "A")
	h.store.want(p, "B")
	h.step(time.Second)
	steps := []struct {
		progress   reconcile.Progress
		wantReason string
	}{
		{reconcile.Progress{Failure: pod.ReasonErrImagePull, Message: "main: not found"}, "ErrImagePull: main: not found"},
		{reconcile.Progress{Failure: pod.ReasonImagePullBackOff, Message: "main: not found"}, "ImagePullBackOff: main: not found"},
		// Another text, the same reason: kept as saved.
		{reconcile.Progress{Failure: pod.ReasonImagePullBackOff, Message: "main: timeout"}, "ImagePullBackOff: main: not found"},
		{reconcile.Progress{Current: true, Attempts: map[string]int{"main": 1}}, ""},
	}
	for i, s := range steps {
		h.pods.progress = s.progress
		h.step(time.Minute)
		hist, err := h.c.History(p.Metadata.UID)
		if err != nil {
			t.Fatal(err)
		}
		last := hist.Entries[len(hist.Entries)-1]
		if last.Hash != "B" || last.Outcome != OutcomeProgressing || last.Reason != s.wantReason || hist.Failed != "" {
			t.Errorf("step %d: history ends with %+v (failed %q), want B Progressing with reason %q", i, last, hist.Failed, s.wantReason)
		}
		// What is saved agrees.
		again := newHarness(t, dir, "boot-1")
		if saved, _ := again.c.History(p.Metadata.UID); saved.Entries[len(saved.Entries)-1].Reason != s.wantReason {
			t.Errorf("step %d: saved history ends with %+v", i, saved.Entries[len(saved.Entries)-1])
		}
	}
	if cond := h.c.Condition(p.Metadata.UID); cond != nil {
		t.Errorf("condition %+v, want none: rollback is off", cond)
	}
}

// TestAtomicBundleStaysWhole: an atomic file's pods stay on one content.
// When the file has no good content yet (its first content never had
// every pod good at once), a failing pod fails where it is rather than
// returning to a spec of its own; a reboot during an update starts it over
// for every pod of the file, and the second reboot returns the file as a
// unit to its good content, or, with none, lets the update go on.
func TestAtomicBundleStaysWhole(t *testing.T) {
	origin := pod.Origin{Source: "http://bundle", File: "http://bundle"}
	atomic := map[string]string{AnnotationRollout: RolloutAtomic}
	a, b := testPod(atomic), testPod(atomic)
	b.Metadata.Name, b.Metadata.UID = "db", "0123abcd-0000-0000-0000-000000000002"
	content := func(h *harness, hash string, version uint64, hashes ...string) {
		h.store.mu.Lock()
		defer h.store.mu.Unlock()
		h.store.files = []podconfig.FileState{{Origin: origin, AppliedHash: hash, Hash: hash, Version: version}}
		h.store.wanted = []podconfig.Desired{{Pod: a, Hash: hashes[0], Origin: origin}, {Pod: b, Hash: hashes[1], Origin: origin}}
	}
	for _, tt := range []struct {
		name string
		// dbFirst: db is Ready in the file's first content, which so
		// becomes its good content.
		dbFirst bool
		// afterTwo are the pins after the second reboot.
		wantFilePin bool
	}{
		{name: "good content", dbFirst: true, wantFilePin: true},
		{name: "no good content", dbFirst: false, wantFilePin: false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			h := newHarness(t, dir, "boot-1")
			content(h, "C1", 1, "A1", "B1")
			h.pods.progress = ready(h.now, 0)
			if !tt.dbFirst {
				h.pods.byName = map[string]reconcile.Progress{"db": {Current: true, Attempts: map[string]int{"main": 0}}}
			}
			h.step(0)
			h.step(31 * time.Second)
			h.step(6 * time.Minute)
			h.step(0)
			fr := h.c.File(origin)
			if tt.dbFirst != (fr != nil && fr.GoodHash == "C1") {
				t.Fatalf("file after its first content: %+v", fr)
			}
			if !tt.dbFirst {
				if hist, _ := h.c.History(b.Metadata.UID); hist.Failed != "B1" || hist.GoodHash != "" {
					t.Fatalf("db after its first content: %+v", hist)
				}
			}

			// Version 2: web fails to pull. With a good content the
			// file goes back whole; without, web fails where it is
			// (its own good spec A1 would split the file).
			content(h, "C2", 2, "A2", "B2")
			h.pods.byName = map[string]reconcile.Progress{"web": {Failure: pod.ReasonErrImagePull, Message: "main: not found"}}
			h.step(time.Second)
			if got := len(h.store.filePins) == 1; got != tt.wantFilePin || len(h.store.pins) != len(h.store.filePins)*2 {
				t.Fatalf("after web failed: pod pins %+v, file pins %+v", h.store.pins, h.store.filePins)
			}
			if cond := h.c.Condition(a.Metadata.UID); cond == nil || (cond.Reason == ReasonRolledBack) != tt.wantFilePin {
				t.Fatalf("web after it failed: %+v", cond)
			}

			// Version 3 is watched when the power goes, twice.
			content(h, "C3", 3, "A3", "B3")
			h.pods.byName = nil
			h.pods.progress = reconcile.Progress{}
			h.step(time.Second)
			once := newHarness(t, dir, "boot-2")
			if pins, files := once.c.Pins(); len(pins) != 0 || len(files) != 0 {
				t.Fatalf("after one reboot: pins %+v, file pins %+v; want version 3 tried again", pins, files)
			}
			twice := newHarness(t, dir, "boot-3")
			pins, files := twice.c.Pins()
			if !tt.wantFilePin {
				if len(pins) != 0 || len(files) != 0 {
					t.Fatalf("after two reboots, no good content: pins %+v, file pins %+v; want the file whole on version 3", pins, files)
				}
				return
			}
			if len(files) != 1 || files[0].Failed != "C3" || len(files[0].Pods) != 2 || files[0].Hashes[0] != "A1" || files[0].Hashes[1] != "B1" {
				t.Fatalf("after two reboots: file pins %+v, want C3 held back for C1", files)
			}
			if fr := twice.c.File(origin); fr == nil || !fr.HeldBack || fr.FailedVersion != 3 {
				t.Fatalf("file after two reboots: %+v", fr)
			}
		})
	}
}

// TestRestartAfterClockStepBack: tug restarts (same boot) after the clock
// stepped back a day: the watch's persisted start, a day in the future, is
// unknown and counts from the restart, so the timeout fires after its own
// length, not a day late.
func TestRestartAfterClockStepBack(t *testing.T) {
	dir := t.TempDir()
	never := ready(time.Time{}, 0)
	never.Status.Conditions[0].Status = "False"
	h, p := updated(t, dir, never, time.Minute)
	h2 := newHarnessAt(t, dir, "boot-1", h.now.Add(-24*time.Hour))
	h2.store.want(p, "B")
	h2.pods.progress = never
	h2.step(4 * time.Minute)
	if h2.pinned(p.Metadata.UID, "B") {
		t.Fatal("rolled back 4 minutes after the restart, within the 5-minute timeout")
	}
	h2.step(2 * time.Minute)
	if !h2.pinned(p.Metadata.UID, "B") {
		t.Errorf("not rolled back 6 minutes after the restart (timeout 5m): the watch counts from a day ahead; pins %v", h2.store.pins)
	}
}

// TestRolloutCounterStartsAtZero: each result's series is gathered at 0
// before any update is judged, so that a rule's increase() sees the first
// rollback.
func TestRolloutCounterStartsAtZero(t *testing.T) {
	h := newHarness(t, t.TempDir(), "boot-1")
	mfs, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "tug_rollouts_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			got[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	if want := map[string]float64{"succeeded": 0, "rolled_back": 0, "failed": 0}; !maps.Equal(got, want) {
		t.Errorf("tug_rollouts_total = %v, want %v", got, want)
	}
}
