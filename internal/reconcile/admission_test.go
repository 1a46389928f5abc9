package reconcile

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"tug/internal/pod"
)

// fakeAdmission refuses pods whose first app container runs image bad.
type fakeAdmission struct{ bad string }

func (a fakeAdmission) Admit(p *pod.Pod) error {
	if p.Spec.Containers[0].Image == a.bad {
		return errors.New(`spec.containers[0].image: "` + a.bad + `" is not allowed by the test policy`)
	}
	return nil
}

func TestAdmission(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	t.Run("a refused pod gets nothing and is Blocked", func(t *testing.T) {
		f := &fakeRuntime{}
		sb := &fakeSandbox{}
		s := newTestSyncer(f, sb)
		s.admit = fakeAdmission{bad: "evil"}
		p := testPod(pod.RestartAlways, []string{"init"}, []string{"app"})
		p.Spec.Containers[0].Image = "evil"
		if _, err := s.syncPod(ctx, ctx, p); err != nil {
			t.Fatalf("sync: %v", err)
		}
		if log := f.takeLog(); len(log) != 0 {
			t.Errorf("runtime calls %q, want none", log)
		}
		if sb.has(p.Metadata.UID) {
			t.Error("a sandbox was created for a refused pod")
		}
		var st pod.Status
		s.notes.with(p.Metadata.UID, now, func(n *podNotes) { st = computeStatus(p, nil, *n, now) })
		if st.Reason != pod.ReasonBlocked || st.Message == "" || st.Phase != pod.PhasePending {
			t.Errorf("status reason %q message %q phase %s, want Blocked with the violations, Pending", st.Reason, st.Message, st.Phase)
		}
		for _, cs := range append(st.InitContainerStatuses, st.ContainerStatuses...) {
			if w := cs.State.Waiting; w == nil || w.Reason != pod.ReasonBlocked {
				t.Errorf("container %s state %+v, want waiting Blocked", cs.Name, cs.State)
			}
		}
	})
	t.Run("a refused update keeps the admitted version running", func(t *testing.T) {
		f := &fakeRuntime{}
		s := newTestSyncer(f, &fakeSandbox{})
		s.admit = fakeAdmission{bad: "evil"}
		p := testPod(pod.RestartAlways, nil, []string{"app"})
		if _, err := s.syncPod(ctx, ctx, p); err != nil {
			t.Fatal(err)
		}
		f.takeLog()
		bad := testPod(pod.RestartAlways, nil, []string{"app"})
		bad.Spec.Containers[0].Image = "evil"
		if _, err := s.syncPod(ctx, ctx, bad); err != nil {
			t.Fatal(err)
		}
		if log := f.takeLog(); len(log) != 0 {
			t.Errorf("runtime calls %q after a refused update, want none", log)
		}
		if got := f.running(); len(got) != 1 {
			t.Errorf("running %v, want the admitted app", got)
		}
		recs, _ := f.PodContainers(ctx, p.Metadata.UID)
		var st pod.Status
		s.notes.with(p.Metadata.UID, now, func(n *podNotes) { st = computeStatus(bad, recs, *n, now) })
		if st.Reason != pod.ReasonBlocked {
			t.Errorf("status reason %q, want Blocked", st.Reason)
		}
		// The admitted version is still restarted when it exits.
		f.exit("app", 1)
		if _, err := s.syncPod(ctx, ctx, bad); err != nil {
			t.Fatal(err)
		}
		if log := f.takeLog(); !slices.Contains(log, "start app/1") {
			t.Errorf("runtime calls %q, want the admitted app restarted", log)
		}
		// A compliant update runs at once and clears Blocked.
		good := testPod(pod.RestartAlways, nil, []string{"app"})
		good.Spec.Containers[0].Image = "busybox:1.36"
		if _, err := s.syncPod(ctx, ctx, good); err != nil {
			t.Fatal(err)
		}
		if log := f.takeLog(); !slices.Contains(log, "start app/2") {
			t.Errorf("runtime calls %q, want the new version started", log)
		}
		s.notes.with(p.Metadata.UID, now, func(n *podNotes) { st = computeStatus(good, recs, *n, now) })
		if st.Reason == pod.ReasonBlocked {
			t.Error("still Blocked after a compliant update")
		}
	})
}
