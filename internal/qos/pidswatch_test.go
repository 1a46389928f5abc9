package qos

import (
	"log/slog"
	"strings"
	"testing"

	"tug/internal/pod"
)

type fakePodList []*pod.Pod

func (f fakePodList) Pods() []*pod.Pod { return f }

type fakePidsCgroups map[string]PidsLimit

func (f fakePidsCgroups) PodPidsLimit(p *pod.Pod) (PidsLimit, error) {
	l, ok := f[p.Metadata.UID]
	if !ok {
		return PidsLimit{}, ErrBusy // any error: no cgroup
	}
	return l, nil
}

type fakeRecorder struct{ reasons []string }

func (r *fakeRecorder) Event(p *pod.Pod, _, typ, reason, _ string) {
	r.reasons = append(r.reasons, p.Metadata.UID+" "+typ+" "+reason)
}

func TestPidsLimits(t *testing.T) {
	a := &pod.Pod{Metadata: pod.ObjectMeta{Name: "a", Namespace: "default", UID: "a"}}
	b := &pod.Pod{Metadata: pod.ObjectMeta{Name: "b", Namespace: "default", UID: "b"}}
	cg := fakePidsCgroups{}
	rec := &fakeRecorder{}
	w := &PidsWatch{pods: fakePodList{a, b}, cgroups: cg, rec: rec, log: slog.New(slog.DiscardHandler), state: map[string]pidsState{}}
	steps := []struct {
		name       string
		a, b       PidsLimit
		wantEvents int    // events recorded in this step
		wantA      string // in a's condition message ("": no condition)
	}{
		{name: "below the limit", a: PidsLimit{Max: 300}, b: PidsLimit{Max: -1}},
		{name: "a reaches its limit", a: PidsLimit{Max: 300, Refused: 2}, b: PidsLimit{Max: -1}, wantEvents: 1, wantA: "refused 2 forks or clones: the pod holds its process limit of 300"},
		{name: "no new refusal", a: PidsLimit{Max: 300, Refused: 2}, b: PidsLimit{Max: -1}, wantA: "refused 2"},
		{name: "more refusals", a: PidsLimit{Max: 300, Refused: 9}, b: PidsLimit{Max: -1}, wantEvents: 1, wantA: "refused 9"},
		{name: "a new cgroup, below its limit", a: PidsLimit{Max: 300}, b: PidsLimit{Max: -1}},
		{name: "a new cgroup at its limit", a: PidsLimit{Max: 300, Refused: 1}, b: PidsLimit{Max: -1}, wantEvents: 1, wantA: "refused 1"},
	}
	for _, s := range steps {
		cg["a"], cg["b"] = s.a, s.b
		before := len(rec.reasons)
		w.check()
		if got := len(rec.reasons) - before; got != s.wantEvents {
			t.Errorf("%s: %d events, want %d (%v)", s.name, got, s.wantEvents, rec.reasons)
		}
		c := w.Condition(a)
		switch {
		case s.wantA == "" && c != nil:
			t.Errorf("%s: a has condition %+v", s.name, c)
		case s.wantA != "" && (c == nil || c.Type != pod.ConditionPIDLimitReached || c.Status != "True" || c.Reason != pod.ReasonPIDLimitReached || !strings.Contains(c.Message, s.wantA)):
			t.Errorf("%s: a's condition %+v, want one saying %q", s.name, c, s.wantA)
		}
		if c := w.Condition(b); c != nil {
			t.Errorf("%s: b (no limit) has condition %+v", s.name, c)
		}
	}
	for _, r := range rec.reasons {
		if r != "a Warning PIDLimitReached" {
			t.Errorf("event %q, want a Warning PIDLimitReached", r)
		}
	}
	// A pod that is no longer desired is forgotten.
	w.pods = fakePodList{b}
	w.check()
	if c := w.Condition(a); c != nil {
		t.Errorf("removed pod keeps condition %+v", c)
	}
}
