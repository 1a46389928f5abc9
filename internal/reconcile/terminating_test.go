package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"tug/internal/clock"
	"tug/internal/pod"
	"tug/internal/podconfig"
	"tug/internal/podstatus"
)

// TestComputeStatusUpdateBlocked: a container whose newest record ran from
// a previous spec reports that record's image, and the pod a False
// tug.io/UpdateReady condition while the current spec waits for a reason
// that fails it and the old container keeps running.
func TestComputeStatusUpdateBlocked(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	always := pod.RestartAlways
	tests := []struct {
		name      string
		sidecar   bool // the changed container is a sidecar init container
		state     pod.RunState
		waiting   string // the changed container's waiting reason ("" none)
		current   bool   // the record was made from the current spec
		wantImage string
		wantState string // "running", or the waiting reason
		wantCond  string // the UpdateReady condition's reason, "" for none
	}{
		{name: "pull fails: the old container runs", state: pod.RunRunning, waiting: pod.ReasonImagePullBackOff,
			wantImage: "registry.example/app:1", wantState: "running", wantCond: pod.ReasonImagePullBackOff},
		{name: "first pull failure", state: pod.RunRunning, waiting: pod.ReasonErrImagePull,
			wantImage: "registry.example/app:1", wantState: "running", wantCond: pod.ReasonErrImagePull},
		{name: "missing ConfigMap", state: pod.RunRunning, waiting: pod.ReasonCreateContainerConfigError,
			wantImage: "registry.example/app:1", wantState: "running", wantCond: pod.ReasonCreateContainerConfigError},
		{name: "sidecar update blocked", sidecar: true, state: pod.RunRunning, waiting: pod.ReasonImagePullBackOff,
			wantImage: "registry.example/app:1", wantState: "running", wantCond: pod.ReasonImagePullBackOff},
		{name: "update under way, nothing failed", state: pod.RunRunning,
			wantImage: "registry.example/app:1", wantState: "running"},
		{name: "old container crash looping while the update waits", state: pod.RunExited, waiting: pod.ReasonCrashLoopBackOff,
			wantImage: "registry.example/app:1", wantState: pod.ReasonCrashLoopBackOff},
		{name: "old container exited, pull failing: nothing runs, no update to block", state: pod.RunExited, waiting: pod.ReasonErrImagePull,
			wantImage: "registry.example/app:1", wantState: pod.ReasonErrImagePull},
		{name: "up to date", state: pod.RunRunning, current: true,
			wantImage: "registry.example/app:2", wantState: "running"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p *pod.Pod
			if tt.sidecar {
				p = testPod(pod.RestartAlways, []string{"app"}, []string{"main"})
				p.Spec.InitContainers[0].RestartPolicy = &always
			} else {
				p = testPod(pod.RestartAlways, nil, []string{"app"})
			}
			old := clonePod(p)
			containerNamed(old, "app").Image = "registry.example/app:1"
			containerNamed(p, "app").Image = "registry.example/app:2"
			made := old
			if tt.current {
				made = p
			}
			r := pod.RuntimeContainer{ID: "app-0", PodUID: p.Metadata.UID, Name: "app", Init: tt.sidecar, State: tt.state,
				SpecHash: pod.ContainerHash(made, containerNamed(made, "app")), Image: containerNamed(made, "app").Image,
				ImageID: "sha256:" + containerNamed(made, "app").Image, CreatedAt: t0, StartedAt: t0, ExitCode: 1}
			recs := []pod.RuntimeContainer{r}
			if tt.sidecar {
				recs = append(recs, pod.RuntimeContainer{ID: "main-0", PodUID: p.Metadata.UID, Name: "main", State: pod.RunRunning,
					SpecHash: pod.ContainerHash(p, &p.Spec.Containers[0]), Image: "busybox:1.35", CreatedAt: t0, StartedAt: t0})
			}
			n := podNotes{waiting: map[string]pod.StateWaiting{}, conditions: map[string]pod.Condition{}, firstSeen: t0}
			if tt.waiting != "" {
				n.waiting["app"] = pod.StateWaiting{Reason: tt.waiting, Message: "pull image \"registry.example/app:2\": not found"}
			}
			st := computeStatus(p, recs, n, t0.Add(time.Minute))

			cs := st.ContainerStatuses[0]
			if tt.sidecar {
				cs = st.InitContainerStatuses[0]
			}
			if cs.Image != tt.wantImage || cs.ImageID != "sha256:"+tt.wantImage {
				t.Errorf("image %q (%q), want %q: the container that runs", cs.Image, cs.ImageID, tt.wantImage)
			}
			got := "running"
			if cs.State.Waiting != nil {
				got = cs.State.Waiting.Reason
			} else if cs.State.Running == nil {
				got = "not running"
			}
			if got != tt.wantState {
				t.Errorf("state %s, want %s", got, tt.wantState)
			}
			c := findCondition(st, pod.ConditionUpdateReady)
			switch {
			case tt.wantCond == "" && c != nil:
				t.Errorf("condition %+v, want none", *c)
			case tt.wantCond == "":
			case c == nil:
				t.Errorf("no %s condition, want False with reason %s", pod.ConditionUpdateReady, tt.wantCond)
			case c.Status != "False" || c.Reason != tt.wantCond || !c.LastTransitionTime.Equal(t0.Add(time.Minute)):
				t.Errorf("condition %+v, want False with reason %s since now", *c, tt.wantCond)
			}
			if tt.wantCond != "" && c != nil && c.Message != `container app: the update to image registry.example/app:2 cannot start (`+
				tt.wantCond+`: pull image "registry.example/app:2": not found); the container of its previous spec keeps running` {
				t.Errorf("condition message %q", c.Message)
			}
		})
	}
}

// TestUpdateReadyTransitions: the condition keeps its transition time from
// ErrImagePull to ImagePullBackOff, and goes once the update went through
// (a later block starts a new transition).
func TestUpdateReadyTransitions(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := testPod(pod.RestartAlways, nil, []string{"app"})
	old := clonePod(p)
	old.Spec.Containers[0].Image = "registry.example/app:1"
	running := []pod.RuntimeContainer{{ID: "a", PodUID: p.Metadata.UID, Name: "app", State: pod.RunRunning,
		SpecHash: pod.ContainerHash(old, &old.Spec.Containers[0]), Image: "registry.example/app:1"}}
	updated := []pod.RuntimeContainer{{ID: "b", PodUID: p.Metadata.UID, Name: "app", State: pod.RunRunning, Attempt: 1,
		SpecHash: pod.ContainerHash(p, &p.Spec.Containers[0]), Image: p.Spec.Containers[0].Image}}
	n := podNotes{waiting: map[string]pod.StateWaiting{}, conditions: map[string]pod.Condition{}}
	steps := []struct {
		recs     []pod.RuntimeContainer
		waiting  string
		wantCond string
		wantAt   time.Duration // of the condition's transition, after t0
	}{
		{running, pod.ReasonErrImagePull, pod.ReasonErrImagePull, 0},
		{running, pod.ReasonImagePullBackOff, pod.ReasonImagePullBackOff, 0},
		{updated, "", "", 0},
		{running, pod.ReasonImagePullBackOff, pod.ReasonImagePullBackOff, 3 * time.Second},
	}
	for i, s := range steps {
		n.waiting["app"] = pod.StateWaiting{Reason: s.waiting}
		st := computeStatus(p, s.recs, n, t0.Add(time.Duration(i)*time.Second))
		c := findCondition(st, pod.ConditionUpdateReady)
		switch {
		case s.wantCond == "" && c != nil:
			t.Errorf("step %d: condition %+v, want none", i, *c)
		case s.wantCond != "" && (c == nil || c.Reason != s.wantCond || !c.LastTransitionTime.Equal(t0.Add(s.wantAt))):
			t.Errorf("step %d: condition %+v, want reason %s since t0+%v", i, c, s.wantCond, s.wantAt)
		}
	}
}

// TestTerminatingStatus: a pod being removed is not Ready from when its
// removal began (or from earlier, when it was not Ready before), and its
// metadata says when the removal began and with what grace period.
func TestTerminatingStatus(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	since := t0.Add(time.Hour)
	tests := []struct {
		name   string
		ready  pod.Condition
		wantAt time.Time
	}{
		{"was ready", pod.Condition{Type: pod.ConditionReady, Status: "True", LastTransitionTime: t0}, since},
		{"was not ready", pod.Condition{Type: pod.ConditionReady, Status: "False", Reason: "ContainersNotReady", LastTransitionTime: t0}, t0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := pod.Status{Phase: pod.PhaseRunning, Conditions: []pod.Condition{
				{Type: pod.ConditionInitialized, Status: "True", LastTransitionTime: t0}, tt.ready}}
			st := podstatus.Terminating(in, since)
			c := findCondition(st, pod.ConditionReady)
			if c.Status != "False" || c.Reason != pod.ReasonTerminating || !c.LastTransitionTime.Equal(tt.wantAt) || c.Message == "" {
				t.Errorf("Ready = %+v, want False, %s, since %v", *c, pod.ReasonTerminating, tt.wantAt)
			}
			if in.Conditions[1] != tt.ready {
				t.Errorf("the input's conditions changed: %+v", in.Conditions)
			}
			if init := findCondition(st, pod.ConditionInitialized); init.Status != "True" || !init.LastTransitionTime.Equal(t0) {
				t.Errorf("Initialized = %+v, want it unchanged", *init)
			}
		})
	}
	p := testPod(pod.RestartAlways, nil, []string{"app"})
	grace := int64(8)
	p.Spec.TerminationGracePeriodSeconds = &grace
	m := podstatus.TerminatingMeta(p, since.In(time.FixedZone("CET", 3600)))
	if m.DeletionTimestamp == nil || !m.DeletionTimestamp.Equal(since) || m.DeletionTimestamp.Location() != time.UTC ||
		m.DeletionGracePeriodSeconds == nil || *m.DeletionGracePeriodSeconds != 8 || p.Metadata.DeletionTimestamp != nil {
		t.Errorf("metadata %+v, want deleted at %v (UTC) with 8 s of grace, the pod's own unchanged", m, since)
	}
}

// TestLoopTerminating: a removed pod is listed by Terminating, with its
// deletion fields and its containers, while its worker kills it, and no
// longer once the kill is over; a pod re-added while its old version is
// killed is an update, not a pod that goes.
func TestLoopTerminating(t *testing.T) {
	for _, readd := range []bool{false, true} {
		name := "removed"
		if readd {
			name = "re-added while killed"
		}
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			rt := &fakeRuntime{}
			release, killing := make(chan struct{}), make(chan struct{}, 1)
			synced := make(chan string, 10)
			ops := podOps{
				sync: func(_, _ context.Context, p *pod.Pod) (syncResult, error) {
					synced <- p.Spec.Containers[0].Args[0]
					return syncResult{}, nil
				},
				kill: func(context.Context, *pod.Pod) error {
					killing <- struct{}{}
					<-release
					rt.mu.Lock()
					rt.containers = nil
					rt.mu.Unlock()
					return nil
				},
			}
			updates := make(chan []podconfig.Change)
			l := newLoop(Config{Updates: updates, Cache: fakeCache{rt}, ResyncPeriod: time.Hour, RetryMin: time.Hour, RetryMax: time.Hour,
				Clock: clock.Clock(func() time.Time { return t0 }), Log: discard()}, ops)
			done := make(chan error)
			go func() { done <- l.Run(ctx) }()

			p := podWithArg("v1")
			grace := int64(8)
			p.Spec.TerminationGracePeriodSeconds = &grace
			rt.containers = []pod.RuntimeContainer{{ID: "app-0", PodUID: p.Metadata.UID, Name: "app", State: pod.RunRunning,
				SpecHash: pod.ContainerHash(p, &p.Spec.Containers[0]), Image: "busybox:1.35", StartedAt: t0}}
			updates <- []podconfig.Change{{Op: podconfig.Add, Pod: p}}
			waitChan(t, synced, "the first sync")
			if got := l.Terminating(); len(got) != 0 {
				t.Fatalf("Terminating() = %+v before any removal", got)
			}
			updates <- []podconfig.Change{{Op: podconfig.Remove, Pod: p}}
			waitChan(t, killing, "the kill")

			got := l.Terminating()
			if len(got) != 1 {
				t.Fatalf("Terminating() = %+v during the kill, want the pod", got)
			}
			v := got[0]
			if m := v.Metadata; m.UID != p.Metadata.UID || m.DeletionTimestamp == nil || !m.DeletionTimestamp.Equal(t0) ||
				m.DeletionGracePeriodSeconds == nil || *m.DeletionGracePeriodSeconds != 8 {
				t.Errorf("metadata %+v, want the pod deleted at t0 with 8 s of grace", m)
			}
			if c := findCondition(v.Status, pod.ConditionReady); c == nil || c.Status != "False" || c.Reason != pod.ReasonTerminating {
				t.Errorf("Ready condition %+v, want False (%s)", c, pod.ReasonTerminating)
			}
			if cs := v.Status.ContainerStatuses; len(cs) != 1 || cs[0].State.Running == nil {
				t.Errorf("container statuses %+v, want app still running", cs)
			}
			view := podstatus.Served{Store: fakeSnapshot{}, Loop: l}
			if readd {
				updates <- []podconfig.Change{{Op: podconfig.Add, Pod: podWithArg("v2")}}
				// The loop applies changes in order: once a later one is
				// taken, the re-add was applied.
				updates <- nil
				if got := l.Terminating(); len(got) != 0 {
					t.Errorf("Terminating() = %+v after the re-add, want none: an update", got)
				}
				close(release)
				if got := waitChan(t, synced, "the sync of the re-added pod"); got != "v2" {
					t.Errorf("synced %s, want v2", got)
				}
			} else {
				if pods := view.Pods(); len(pods) != 1 || pods[0].Metadata.DeletionTimestamp == nil {
					t.Errorf("Served.Pods() = %+v, want the pod being removed", pods)
				}
				close(release)
				deadline := time.Now().Add(5 * time.Second)
				for len(l.Terminating()) != 0 {
					if time.Now().After(deadline) {
						t.Fatalf("Terminating() = %+v after the kill, want none", l.Terminating())
					}
					time.Sleep(time.Millisecond)
				}
				if pods := view.Pods(); len(pods) != 0 {
					t.Errorf("Served.Pods() = %+v after the kill, want none", pods)
				}
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// waitChan returns the next value of c, failing the test after 5 s.
func waitChan[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

func findCondition(st pod.Status, typ string) *pod.Condition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == typ {
			return &st.Conditions[i]
		}
	}
	return nil
}

// clonePod copies p's containers, so that a test may change one.
func clonePod(p *pod.Pod) *pod.Pod {
	cp := *p
	cp.Spec.InitContainers = append([]pod.Container(nil), p.Spec.InitContainers...)
	cp.Spec.Containers = append([]pod.Container(nil), p.Spec.Containers...)
	return &cp
}

func containerNamed(p *pod.Pod, name string) *pod.Container {
	for _, list := range [][]pod.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// fakePuller fails the pull of every image that replaces a running
// container of another image with err.
type fakePuller struct{ err error }

func (fakePuller) Name() string { return "image pre-pull" }

func (f fakePuller) Prestart(_ context.Context, _ *pod.Pod, c *pod.Container, replaced []pod.RuntimeContainer) error {
	for _, r := range replaced {
		if r.State == pod.RunRunning && r.Image != c.Image {
			return f.err
		}
	}
	return nil
}

// TestSyncUpdateBlockedOnPull: an update whose image cannot be pulled
// leaves the old container running, says so once (UpdateBlocked) while
// every try is a Failed event, and the pod's status has the False
// UpdateReady condition until the manifest goes back to what runs.
func TestSyncUpdateBlockedOnPull(t *testing.T) {
	ctx := context.Background()
	f := &fakeRuntime{}
	s := newTestSyncer(f, &fakeSandbox{})
	events := &eventLog{}
	s.rec, s.hooks = events, sortHooks([]Hook{fakePuller{err: fmt.Errorf("pull image: %w: not found", pod.ErrImagePull)}})
	good := testPod(pod.RestartAlways, nil, []string{"app"})
	if _, err := s.syncPod(ctx, ctx, good); err != nil {
		t.Fatal(err)
	}
	before := f.running()
	bad := clonePod(good)
	bad.Spec.Containers[0].Image = "registry.example/missing:1"
	for range 3 {
		if _, err := s.syncPod(ctx, ctx, bad); !errors.Is(err, pod.ErrImagePull) {
			t.Fatalf("sync of the update: %v, want ErrImagePull", err)
		}
	}
	if after := f.running(); after["app"] != before["app"] {
		t.Errorf("running %v, was %v: want the old container kept", after, before)
	}
	want := []string{"Normal app Created", "Normal app Started",
		"Warning app Failed", "Warning app UpdateBlocked", "Warning app Failed", "Warning app Failed"}
	if got := events.reasons(); !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
	status := func(p *pod.Pod) pod.Status {
		recs, _ := f.PodContainers(ctx, p.Metadata.UID)
		var st pod.Status
		s.notes.with(p.Metadata.UID, time.Now(), func(n *podNotes) { st = computeStatus(p, recs, *n, time.Now()) })
		return st
	}
	if c := findCondition(status(bad), pod.ConditionUpdateReady); c == nil || c.Status != "False" || c.Reason != pod.ReasonImagePullBackOff {
		t.Errorf("UpdateReady %+v, want False (ImagePullBackOff)", c)
	}
	if _, err := s.syncPod(ctx, ctx, good); err != nil {
		t.Fatal(err)
	}
	if c := findCondition(status(good), pod.ConditionUpdateReady); c != nil {
		t.Errorf("UpdateReady %+v after the manifest went back, want none", *c)
	}
}

// TestSyncUpdateDeferredOnRoom: an update whose image does not fit on the
// image filesystem leaves the old container running, says so once
// (UpdateBlocked; the image manager records the ImagePullDeferred event),
// with no Failed warning on each try, and the UpdateReady condition's
// reason is ImagePullDeferred.
func TestSyncUpdateDeferredOnRoom(t *testing.T) {
	ctx := context.Background()
	f := &fakeRuntime{}
	s := newTestSyncer(f, &fakeSandbox{})
	events := &eventLog{}
	deferred := fmt.Errorf("pull image: %w", pod.ErrImagePullDeferred)
	s.rec, s.hooks = events, sortHooks([]Hook{fakePuller{err: deferred}})
	good := testPod(pod.RestartAlways, nil, []string{"app"})
	if _, err := s.syncPod(ctx, ctx, good); err != nil {
		t.Fatal(err)
	}
	before := f.running()
	big := clonePod(good)
	big.Spec.Containers[0].Image = "registry.example/big:1"
	for range 3 {
		if _, err := s.syncPod(ctx, ctx, big); !errors.Is(err, pod.ErrImagePullDeferred) {
			t.Fatalf("sync of the update: %v, want ErrImagePullDeferred", err)
		}
	}
	if after := f.running(); after["app"] != before["app"] {
		t.Errorf("running %v, was %v: want the old container kept", after, before)
	}
	want := []string{"Normal app Created", "Normal app Started", "Warning app UpdateBlocked"}
	if got := events.reasons(); !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
	recs, _ := f.PodContainers(ctx, big.Metadata.UID)
	var st pod.Status
	s.notes.with(big.Metadata.UID, time.Now(), func(n *podNotes) { st = computeStatus(big, recs, *n, time.Now()) })
	if c := findCondition(st, pod.ConditionUpdateReady); c == nil || c.Status != "False" || c.Reason != pod.ReasonImagePullDeferred {
		t.Errorf("UpdateReady %+v, want False (ImagePullDeferred)", c)
	}
}

// fakeSnapshot is a pod store with the given pods and files.
type fakeSnapshot struct {
	pods  []*pod.Pod
	files []podconfig.FileState
}

func (s fakeSnapshot) Pods() []*pod.Pod             { return s.pods }
func (s fakeSnapshot) Files() []podconfig.FileState { return s.files }
