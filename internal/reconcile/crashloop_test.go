package reconcile

import (
	"testing"
	"time"

	"tug/internal/pod"
	"tug/internal/podplan"
)

// TestSyncCrashLoopBackOff checks that a crashing app container waits for
// its back-off with reason CrashLoopBackOff and a requeue for when it ends.
func TestSyncCrashLoopBackOff(t *testing.T) {
	ctx := t.Context()
	f := &fakeRuntime{}
	s := newTestSyncer(f, &fakeSandbox{})
	now := time.Now()
	s.now = func() time.Time { return now }
	s.backoff = &podplan.CrashBackoff{Initial: 10 * time.Second, Max: time.Minute, Reset: time.Hour, Clock: s.now}
	p := testPod(pod.RestartAlways, nil, []string{"app"})
	crash := func() {
		f.mu.Lock()
		for i := range f.containers {
			if c := &f.containers[i]; c.State == pod.RunRunning {
				c.State, c.ExitCode, c.StartedAt, c.FinishedAt = pod.RunExited, 1, now.Add(-time.Second), now
			}
		}
		f.mu.Unlock()
	}
	if _, err := s.syncPod(ctx, ctx, p); err != nil {
		t.Fatal(err)
	}
	crash()
	res, _ := s.syncPod(ctx, ctx, p) // first crash: restarted at once
	if got := f.takeLog(); len(got) != 2 || got[1] != "start app/1" {
		t.Fatalf("first crash: %q", got)
	}
	crash()
	res, _ = s.syncPod(ctx, ctx, p) // second crash: 10 s back-off
	if got := f.takeLog(); len(got) != 0 {
		t.Fatalf("second crash restarted at once: %q", got)
	}
	if res.requeue != 10*time.Second {
		t.Errorf("requeue = %v, want 10s", res.requeue)
	}
	st := (&Loop{notes: s.notes, cfg: Config{Cache: fakeCache{f}}, now: s.now}).Status(p)
	cs := st.ContainerStatuses[0]
	if cs.State.Waiting == nil || cs.State.Waiting.Reason != pod.ReasonCrashLoopBackOff || cs.LastTerminationState.Terminated == nil || cs.RestartCount != 1 {
		t.Errorf("status = %+v, want waiting CrashLoopBackOff with last state terminated, restartCount 1", cs)
	}
	if st.Phase != pod.PhaseRunning {
		t.Errorf("phase %s, want Running (restarting)", st.Phase)
	}
	now = now.Add(10 * time.Second)
	if _, err := s.syncPod(ctx, ctx, p); err != nil {
		t.Fatal(err)
	}
	if got := f.takeLog(); len(got) == 0 || got[len(got)-1] != "start app/2" {
		t.Errorf("after the back-off: %q, want a start of app/2", got)
	}
}

// fakeCache serves the fake runtime's containers as the PLEG would.
type fakeCache struct{ f *fakeRuntime }

func (c fakeCache) PodContainers(uid string) []pod.RuntimeContainer {
	recs, _ := c.f.PodContainers(nil, uid)
	return recs
}

func (c fakeCache) All() []pod.RuntimeContainer {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	return append([]pod.RuntimeContainer(nil), c.f.containers...)
}
