package reconcile

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"tug/internal/pod"
	"tug/internal/podconfig"
)

// fakeDesired is an Ownership whose ready sources and wanted UIDs are set by
// the test.
type fakeDesired struct {
	mu     sync.Mutex
	ready  map[string]bool
	wanted map[string]bool
}

func (d *fakeDesired) Owns(source, uid string) (bool, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ready[source], d.wanted[uid]
}

func (d *fakeDesired) setReady(source string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ready[source] = true
}

func TestSyncHostPortInUse(t *testing.T) {
	ctx := context.Background()
	f := &fakeRuntime{}
	s := newTestSyncer(f, &fakeSandbox{})
	p := testPod(pod.RestartAlways, nil, []string{"app"})
	inUse := &pod.HostPortInUseError{Port: "hostPort 8088/TCP", By: "another pod"}
	s.net = &fakeNetwork{refuse: map[string]error{p.Metadata.UID: inUse}}
	var logs bytes.Buffer
	s.log = slog.New(slog.NewTextHandler(&logs, nil))

	res, err := s.syncPod(ctx, ctx, p)
	if err != nil {
		t.Fatalf("syncPod: %v; a port in use is a wait, not a sync error", err)
	}
	if _, err := s.syncPod(ctx, ctx, p); err != nil { // still refused: logged once
		t.Fatal(err)
	}
	if res.requeue != portRetry {
		t.Errorf("requeue %v, want %v", res.requeue, portRetry)
	}
	if recs, _ := f.PodContainers(ctx, p.Metadata.UID); len(recs) != 0 {
		t.Fatalf("containers started for a pod whose hostPort is in use: %v", recs)
	}
	st := computeStatus(p, nil, *s.notes.pods[p.Metadata.UID], time.Now())
	if st.Phase != pod.PhasePending || st.Reason != pod.ReasonHostPortInUse || st.Message != "hostPort 8088/TCP is in use by another pod" {
		t.Errorf("status %s/%s %q, want Pending/HostPortInUse with the port", st.Phase, st.Reason, st.Message)
	}
	if w := st.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != pod.ReasonHostPortInUse {
		t.Errorf("container state %+v, want waiting HostPortInUse", st.ContainerStatuses[0].State)
	}

	// The port is free again: the pod starts and the note goes.
	s.net = &fakeNetwork{}
	if _, err := s.syncPod(ctx, ctx, p); err != nil {
		t.Fatal(err)
	}
	if n := s.notes.pods[p.Metadata.UID]; n.refused.Reason != "" {
		t.Errorf("still refused after the port was free: %+v", n.refused)
	}
	if recs, _ := f.PodContainers(ctx, p.Metadata.UID); len(recs) != 1 {
		t.Errorf("%d containers once the port is free, want 1", len(recs))
	}
	// The log says so when the refusal starts and ends, not on every sync,
	// in the words of the status (docs/decisions.md, "Vocabulary").
	if n := strings.Count(logs.String(), `msg="pod refused: HostPortInUse`); n != 1 {
		t.Errorf("%d 'pod refused: HostPortInUse' lines, want 1:\n%s", n, logs.String())
	}
	if n := strings.Count(logs.String(), `msg="pod no longer refused"`); n != 1 {
		t.Errorf("%d 'pod no longer refused' lines, want 1:\n%s", n, logs.String())
	}
}

func TestHousekeepingRemovesPodsOfUnconfiguredSources(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cache := fakeCache{&fakeRuntime{containers: []pod.RuntimeContainer{
		{ID: "a", PodUID: "uid-url", PodName: "web-node", Namespace: "default", PodSource: "https://old.example/pods.yaml", Name: "app", Image: "busybox", State: pod.RunRunning},
		{ID: "b", PodUID: "uid-file", PodName: "db-node", Namespace: "default", PodSource: "file:/etc/tug/manifests", Name: "app", State: pod.RunRunning},
		{ID: "c", PodUID: "uid-slow", PodName: "slow-node", Namespace: "default", PodSource: "https://new.example/pods.yaml", Name: "app", State: pod.RunRunning},
	}}}
	desired := &fakeDesired{ready: map[string]bool{}, wanted: map[string]bool{"uid-file": true}}
	killed := make(chan string, 10)
	ops := podOps{
		sync:          func(context.Context, context.Context, *pod.Pod) (syncResult, error) { return syncResult{}, nil },
		kill:          func(_ context.Context, p *pod.Pod) error { killed <- p.Metadata.UID; return nil },
		removeSandbox: func(context.Context, string) error { return nil },
	}
	l := newLoop(Config{Cache: cache, Desired: desired, Log: discard(), RetryMin: time.Hour, RetryMax: time.Hour,
		Sources: []string{"file:/etc/tug/manifests", "https://new.example/pods.yaml"}}, ops)
	l.cfg.Sandbox, l.cfg.Network, l.cfg.Cgroups = &fakeSandbox{}, &fakeNetwork{}, &fakeCgroups{}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	orphans := l.Orphans()
	if len(orphans) != 1 || orphans[0].Metadata.UID != "uid-url" || orphans[0].Status.Reason != pod.ReasonOrphaned ||
		!strings.Contains(orphans[0].Status.Message, "no longer configured") || len(orphans[0].Spec.Containers) != 1 {
		t.Fatalf("Orphans() = %+v, want the old URL's pod, reason Orphaned", orphans)
	}

	// Only the file source has reported: nothing is removed yet.
	desired.setReady("file:/etc/tug/manifests")
	l.housekeeping(ctx, &wg)
	select {
	case uid := <-killed:
		t.Fatalf("removed %s before every configured source reported", uid)
	case <-time.After(50 * time.Millisecond):
	}
	// Every configured source has reported: the old URL's pod goes, the
	// new URL's pod it does not list goes too, the file's pod stays.
	desired.setReady("https://new.example/pods.yaml")
	l.housekeeping(ctx, &wg)
	got := map[string]bool{}
	for range 2 {
		select {
		case uid := <-killed:
			got[uid] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("removed only %v", got)
		}
	}
	if !got["uid-url"] || !got["uid-slow"] {
		t.Errorf("removed %v, want uid-url and uid-slow", got)
	}
}

func TestLoopMaxPods(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := newRecorder()
	close(r.gate)
	updates := make(chan []podconfig.Change)
	// Pod "c" has containers already (adopted after a restart): it is
	// admitted before "a" and "b".
	cache := fakeCache{&fakeRuntime{containers: []pod.RuntimeContainer{{ID: "x", PodUID: "uid-c", Name: "app", State: pod.RunRunning}}}}
	l := newLoop(Config{Updates: updates, Cache: cache, MaxPods: 2, ResyncPeriod: time.Hour, RetryMin: time.Hour, RetryMax: time.Hour, Log: discard()}, r.ops())
	done := make(chan error)
	go func() { done <- l.Run(ctx) }()

	named := func(name string) *pod.Pod {
		p := podWithArg(name)
		p.Metadata.Name, p.Metadata.UID = name, "uid-"+name
		return p
	}
	updates <- []podconfig.Change{{Op: podconfig.Add, Pod: named("a")}, {Op: podconfig.Add, Pod: named("b")}, {Op: podconfig.Add, Pod: named("c")}}
	got := map[string]bool{}
	for range 2 {
		select {
		case s := <-r.did:
			got[s] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("only %v", got)
		}
	}
	if !got["sync a"] || !got["sync c"] {
		t.Fatalf("started %v, want a and c (c has containers, then by name)", got)
	}
	r.expectNothing(t)
	var refused pod.StateWaiting
	l.notes.with("uid-b", time.Now(), func(n *podNotes) { refused = n.refused })
	if refused.Reason != pod.ReasonOutOfPods || !strings.Contains(refused.Message, "--max-pods") {
		t.Errorf("pod b noted %+v, want OutOfpods", refused)
	}
	st := computeStatus(named("b"), nil, podNotes{refused: refused}, time.Now())
	if st.Phase != pod.PhasePending || st.Reason != pod.ReasonOutOfPods {
		t.Errorf("status of b: %s/%s, want Pending/OutOfpods", st.Phase, st.Reason)
	}

	// Removing a makes room: b starts.
	updates <- []podconfig.Change{{Op: podconfig.Remove, Pod: named("a")}}
	r.expect(t, "kill")
	r.expect(t, "sync b")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
