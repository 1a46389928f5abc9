package rollout

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"tug/internal/clock"
	"tug/internal/pod"
	"tug/internal/podconfig"
	"tug/internal/reconcile"
)

// fakeStore is the pod store: the wanted pods and the pins set.
type fakeStore struct {
	mu     sync.Mutex
	wanted []podconfig.Desired
	pins   map[string]podconfig.Pin
}

func (f *fakeStore) Wanted() []podconfig.Desired {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]podconfig.Desired(nil), f.wanted...)
}

func (f *fakeStore) SetPins(_ context.Context, pins map[string]podconfig.Pin) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pins = pins
}

func (f *fakeStore) Owns(string, string) (bool, bool) { return true, false }

func (f *fakeStore) want(p *pod.Pod, hash string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.wanted = []podconfig.Desired{{Pod: p, Hash: hash, Origin: pod.Origin{Source: "file", File: "a.yaml"}}}
}

// fakePods answers Progress with what the test set.
type fakePods struct{ progress reconcile.Progress }

func (f *fakePods) Progress(*pod.Pod) reconcile.Progress { return f.progress }

func testPod(annotations map[string]string) *pod.Pod {
	return &pod.Pod{Metadata: pod.ObjectMeta{Name: "web", Namespace: "default", UID: "0123abcd-0000-0000-0000-000000000001", Annotations: annotations},
		Spec: pod.PodSpec{Containers: []pod.Container{{Name: "main", Image: "busybox"}}}}
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
	h := &harness{t: t, dir: dir, now: time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC), store: &fakeStore{}, pods: &fakePods{}, reg: prometheus.NewRegistry()}
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
		h.store.SetPins(context.Background(), h.c.Pins())
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
				if n := testutil.ToFloat64(h.c.total.WithLabelValues("rolled_back")); n != 1 {
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
	h := newHarness(t, dir, "boot-1")
	p := testPod(nil)
	h.good(p, "A")
	h.store.want(p, "B")
	h.pods.progress = reconcile.Progress{Failure: pod.ReasonErrImagePull}
	h.step(time.Second)
	if !h.pinned(p.Metadata.UID, "B") {
		t.Fatal("B not held back")
	}

	// A new tug: the pin is there before any source reports.
	h2 := newHarness(t, dir, "boot-1")
	pins := h2.c.Pins()
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

func TestRolloutCutByReboot(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, dir, "boot-1")
	p := testPod(nil)
	h.good(p, "A")
	h.store.want(p, "B")
	h.pods.progress = reconcile.Progress{}
	h.step(time.Second) // B is watched, not good yet

	same := newHarness(t, dir, "boot-1") // tug restarted: the rollout goes on
	if len(same.c.Pins()) != 0 {
		t.Fatal("a restart of tug rolled back")
	}
	rebooted := newHarness(t, dir, "boot-2") // the node rebooted: back to A
	if pin, ok := rebooted.c.Pins()[p.Metadata.UID]; !ok || pin.Failed != "B" {
		t.Fatalf("after a reboot: pins %+v", rebooted.c.Pins())
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
