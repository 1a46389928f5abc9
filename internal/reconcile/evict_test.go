package reconcile

import (
	"context"
	"slices"
	"testing"
	"time"

	"tug/internal/pod"
	"tug/internal/podstatus"
)

type fakePressure struct{ ok bool }

func (f *fakePressure) Name() string { return "eviction" }

func (f *fakePressure) Readmit(*pod.Pod, bool) (bool, string) {
	return f.ok, "The node had condition: [MemoryPressure]. "
}

// TestSyncEvicted: an evicted pod loses its containers, sandbox and
// volumes, shows Failed/Evicted with the eviction manager's message, stays
// down for evictionRetry and while its ReadmitHook refuses it, then starts again
// from attempt 0.
func TestSyncEvicted(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := func() time.Time { return now }
	f := &fakeRuntime{}
	sb := &fakeSandbox{}
	s := newTestSyncer(f, sb)
	s.now = clk
	s.notes.now = clk
	pressure := &fakePressure{}
	s.hooks = sortHooks([]Hook{pressure})
	l := newLoop(Config{Clock: clk}, podOps{})
	l.notes = s.notes
	p := testPod(pod.RestartAlways, nil, []string{"app"})
	uid := p.Metadata.UID
	if _, err := s.syncPod(ctx, ctx, p); err != nil {
		t.Fatal(err)
	}
	const msg = `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". `
	if err := l.Evict(ctx, p, msg, 0); err != nil {
		t.Fatal(err)
	}
	if got := <-l.evictions; got != uid {
		t.Errorf("evictions channel got %q", got)
	}
	status := func() pod.Status {
		var st pod.Status
		recs, _ := f.PodContainers(ctx, uid)
		s.notes.with(uid, now, func(n *podNotes) { st = computeStatus(p, recs, *n, now) })
		return st
	}
	steps := []struct {
		name       string
		after      time.Duration
		admit      bool
		wantUp     bool
		wantReason string
		wantMsg    string
	}{
		{"evicted: everything removed", 0, true, false, podstatus.ReasonEvicted, msg},
		{"still within the retry time", 5 * time.Second, true, false, podstatus.ReasonEvicted, msg},
		{"node pressure holds it", 6 * time.Second, false, false, podstatus.ReasonEvicted, "The node had condition: [MemoryPressure]. "},
		{"pressure gone: started again", 10 * time.Second, true, true, "", ""},
	}
	for _, st := range steps {
		now = now.Add(st.after)
		pressure.ok = st.admit
		res, err := s.syncPod(ctx, ctx, p)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		recs, _ := f.PodContainers(ctx, uid)
		if up := len(recs) > 0; up != st.wantUp {
			t.Errorf("%s: containers %v, want up=%v", st.name, recs, st.wantUp)
		}
		if !st.wantUp && (sb.has(uid) || res.requeue == 0) {
			t.Errorf("%s: sandbox left %v or no retry scheduled (%v)", st.name, sb.has(uid), res.requeue)
		}
		if st.wantUp && recs[0].Attempt != 0 {
			t.Errorf("%s: attempt %d, want 0", st.name, recs[0].Attempt)
		}
		got := status()
		if got.Reason != st.wantReason || got.Message != st.wantMsg || (st.wantReason != "" && got.Phase != pod.PhaseFailed) {
			t.Errorf("%s: status %s/%s %q, want Failed/%s %q", st.name, got.Phase, got.Reason, got.Message, st.wantReason, st.wantMsg)
		}
		if l.Evicted(uid) == st.wantUp {
			t.Errorf("%s: Evicted() = %v", st.name, !st.wantUp)
		}
	}
	if log := f.takeLog(); !slices.Contains(log, "cleanup") {
		t.Errorf("the evicted pod's volumes were not cleaned up: %v", log)
	}
}
