package reconcile

import (
	"context"
	"slices"
	"strings"
	"testing"

	"tug/internal/pod"
)

// fakeProber reports the containers in bad unhealthy and those in
// notReady not ready.
type fakeProber struct {
	bad      map[string]string // container name -> message
	notReady map[string]bool
	synced   int
	removed  []string
	byID     map[string]string // container ID -> name, from Sync
}

func (f *fakeProber) Name() string { return "probes" }
func (f *fakeProber) Listed(_ *pod.Pod, recs []pod.RuntimeContainer, _ pod.Sandbox) {
	f.synced++
	if f.byID == nil {
		f.byID = map[string]string{}
	}
	for _, r := range recs {
		f.byID[r.ID] = r.Name
	}
}
func (f *fakeProber) Removed(uid string) { f.removed = append(f.removed, uid) }
func (f *fakeProber) Ready(id string, _ *pod.Container) bool {
	return !f.notReady[f.byID[id]]
}
func (f *fakeProber) Started(string, *pod.Container) bool { return true }
func (f *fakeProber) Unhealthy(id string) (string, *int64, bool) {
	msg, bad := f.bad[f.byID[id]]
	return msg, nil, bad
}

// TestSyncKillsUnhealthy: a container a liveness probe failed is stopped
// and restarted, the other is left alone, the status shows the probe's
// message, and readiness sets ready and the Ready condition.
func TestSyncKillsUnhealthy(t *testing.T) {
	ctx := context.Background()
	f := &fakeRuntime{}
	s := newTestSyncer(f, &fakeSandbox{})
	probes := &fakeProber{}
	s.hooks = sortHooks([]Hook{probes})
	p := testPod(pod.RestartAlways, nil, []string{"app", "side"})
	for range 2 { // the second sync arms the probes of the running containers
		if _, err := s.syncPod(ctx, ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	f.takeLog()
	probes.bad = map[string]string{"app": "Liveness probe failed: HTTP probe failed with statuscode: 500"}
	if _, err := s.syncPod(ctx, ctx, p); err != nil {
		t.Fatal(err)
	}
	if l := f.takeLog(); !slices.Contains(l, "stop app/0") || slices.Contains(l, "stop side/0") {
		t.Errorf("calls %v: want app stopped, side not", l)
	}
	probes.bad = nil
	probes.notReady = map[string]bool{"side": true}
	recs, _ := f.PodContainers(ctx, p.Metadata.UID)
	n := s.notes.pods[p.Metadata.UID]
	nn := *n
	nn.probes = probes
	st := computeStatus(p, recs, nn, s.now())
	var app, side pod.ContainerStatus
	for _, cs := range st.ContainerStatuses {
		switch cs.Name {
		case "app":
			app = cs
		case "side":
			side = cs
		}
	}
	term := app.State.Terminated
	if term == nil || !strings.HasPrefix(term.Message, "Liveness probe failed") {
		t.Errorf("app state %+v: want terminated with the liveness message", app.State)
	}
	if side.Ready || side.State.Running == nil {
		t.Errorf("side ready %v running %v: want running, not ready", side.Ready, side.State.Running != nil)
	}
	for _, c := range st.Conditions {
		if c.Type == pod.ConditionReady && (c.Status != "False" || !strings.HasPrefix(c.Message, "containers with unready status: [")) {
			t.Errorf("Ready %s %q, want False naming the unready containers", c.Status, c.Message)
		}
	}
	if err := s.killPod(ctx, p); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(probes.removed, p.Metadata.UID) {
		t.Error("killPod did not stop the pod's probes")
	}
}
