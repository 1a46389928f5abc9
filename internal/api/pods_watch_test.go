package api

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"tug/internal/pod"
	"tug/internal/podview"
)

func TestPodWatchIntervalIsAtMostAQuarterSecond(t *testing.T) {
	// tug pods -w promises a change within a second; the poll is a
	// quarter of that at most, leaving the rest to the client and the
	// status computation.
	if PodWatchInterval <= 0 || PodWatchInterval > 250*time.Millisecond {
		t.Errorf("PodWatchInterval = %v, want at most 250ms", PodWatchInterval)
	}
}

func TestDiffPods(t *testing.T) {
	web := podView("default", "web-e", "web", "u-web", pod.PhaseRunning)
	db := podView("default", "db-e", "db", "u-db", pod.PhaseRunning)
	sys := podView("kube-system", "dns-e", "dns", "u-dns", pod.PhasePending)
	webFailed := web
	webFailed.Status.Phase = pod.PhaseFailed
	webRestarted := web
	webRestarted.Status.ContainerStatuses = []pod.ContainerStatus{{Name: "main", RestartCount: 1}}

	tests := []struct {
		name     string
		old, cur []podview.View
		want     []string // "TYPE name"
	}{
		{"nothing", nil, nil, nil},
		{"unchanged", []podview.View{web, db}, []podview.View{web, db}, nil},
		{"initial: every pod added, sorted", nil, []podview.View{sys, web, db}, []string{"ADDED db-e", "ADDED web-e", "ADDED dns-e"}},
		{"phase changed", []podview.View{web, db}, []podview.View{webFailed, db}, []string{"MODIFIED web-e"}},
		{"container status changed", []podview.View{web}, []podview.View{webRestarted}, []string{"MODIFIED web-e"}},
		{"removed, with its last view", []podview.View{web, db}, []podview.View{db}, []string{"DELETED web-e"}},
		{"added and removed at once", []podview.View{web}, []podview.View{sys}, []string{"DELETED web-e", "ADDED dns-e"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, cur := podSnapshot(tt.old, ""), podSnapshot(tt.cur, "")
			var got []string
			for _, e := range diffPods(old, cur) {
				got = append(got, e.Type+" "+e.Object.Metadata.Name)
				if e.Type == WatchDeleted && e.Object.Status.Phase != pod.PhaseRunning {
					t.Errorf("DELETED %s carries phase %q, want its last view's", e.Object.Metadata.Name, e.Object.Status.Phase)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("diffPods = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPodSnapshotNamespace(t *testing.T) {
	snap := podSnapshot([]podview.View{
		podView("default", "web-e", "web", "u-web", pod.PhaseRunning),
		podView("kube-system", "dns-e", "dns", "u-dns", pod.PhaseRunning),
	}, "kube-system")
	if len(snap) != 1 || snap["u-dns"].view.Metadata.Name != "dns-e" {
		t.Errorf("snapshot of kube-system = %v, want dns-e only", snap)
	}
}

// lockedStatus is a StatusSource whose pods a test changes while the
// server reads them.
type lockedStatus struct {
	mu   sync.Mutex
	pods []podview.View
}

func (l *lockedStatus) Pods() []podview.View {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.pods)
}

func (l *lockedStatus) Manifests() []podview.ManifestStatus { return nil }

func (l *lockedStatus) set(pods ...podview.View) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pods = pods
}

func TestWatchPods(t *testing.T) {
	web := podView("default", "web-e", "web", "u-web", pod.PhasePending)
	sys := podView("kube-system", "dns-e", "dns", "u-dns", pod.PhaseRunning)
	status := &lockedStatus{pods: []podview.View{web, sys}}
	sock := startServer(t, &Server{Status: status, Log: testLogger(t)}, "")
	c := &Client{SocketPath: sock}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	errDone := errors.New("done")
	running := web
	running.Status.Phase = pod.PhaseRunning
	db := podView("default", "db-e", "db", "u-db", pod.PhaseRunning)
	var got []string
	// Each step changes the pods once the previous event has arrived.
	steps := map[string]func(){
		"BOOKMARK ":      func() { status.set(running, sys) },
		"MODIFIED web-e": func() { status.set(running, sys, db) },
		"ADDED db-e":     func() { status.set(running, sys) },
		"DELETED db-e":   nil,
		"ADDED web-e":    func() {},
		"ADDED dns-e":    func() {},
	}
	err := c.WatchPods(ctx, "", func(e PodWatchEvent) error {
		key := e.Type + " " + e.Object.Metadata.Name
		got = append(got, key)
		if e.Type == WatchBookmark && e.Object.Metadata.Annotations[InitialEventsEnd] != "true" {
			t.Errorf("BOOKMARK without %s: %+v", InitialEventsEnd, e.Object.Metadata)
		}
		step, ok := steps[key]
		switch {
		case !ok:
			return errors.New("unexpected event " + key)
		case step == nil:
			return errDone
		}
		step()
		return nil
	})
	if !errors.Is(err, errDone) {
		t.Fatalf("WatchPods = %v after %q", err, got)
	}
	want := []string{"ADDED web-e", "ADDED dns-e", "BOOKMARK ", "MODIFIED web-e", "ADDED db-e", "DELETED db-e"}
	if !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
}

func TestWatchPodsNamespace(t *testing.T) {
	status := &lockedStatus{pods: []podview.View{
		podView("default", "web-e", "web", "u-web", pod.PhaseRunning),
		podView("kube-system", "dns-e", "dns", "u-dns", pod.PhaseRunning),
	}}
	sock := startServer(t, &Server{Status: status, Log: testLogger(t)}, "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []string
	errDone := errors.New("done")
	err := (&Client{SocketPath: sock}).WatchPods(ctx, "kube-system", func(e PodWatchEvent) error {
		got = append(got, e.Type+" "+e.Object.Metadata.Name)
		if e.Type == WatchBookmark {
			return errDone
		}
		return nil
	})
	if !errors.Is(err, errDone) || !slices.Equal(got, []string{"ADDED dns-e", "BOOKMARK "}) {
		t.Errorf("WatchPods(kube-system) = %v, events %q; want dns-e then the bookmark", err, got)
	}
}

// fakeStats is a StatsSource with settable pods.
type fakeStats []PodStats

func (f fakeStats) PodStats() []PodStats { return slices.Clone(f) }

func TestStatsSummary(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	stats := fakeStats{
		{PodRef: PodReference{Name: "web-e", Namespace: "default", UID: "u-web"}, Containers: []ContainerStats{
			{Name: "side", CPU: CPUStats{Time: now, UsageCoreNanoSeconds: 5}},
			{Name: "main", CPU: CPUStats{Time: now, UsageCoreNanoSeconds: 7}, Memory: MemoryStats{Time: now, WorkingSetBytes: 1 << 20}},
		}},
		{PodRef: PodReference{Name: "api-e", Namespace: "default", UID: "u-api"}},
	}
	sock := startServer(t, &Server{Stats: stats, Log: testLogger(t)}, "")
	got, err := (&Client{SocketPath: sock}).StatsSummary(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Pods) != 2 || got.Pods[0].PodRef.Name != "api-e" || got.Pods[1].Containers[0].Name != "main" ||
		got.Pods[1].Containers[0].CPU.UsageCoreNanoSeconds != 7 || got.Pods[1].Containers[0].Memory.WorkingSetBytes != 1<<20 {
		t.Errorf("StatsSummary = %+v, want api-e then web-e with main before side", got)
	}
	empty, err := (&Client{SocketPath: startServer(t, &Server{Log: testLogger(t)}, "")}).StatsSummary(context.Background())
	if err != nil || empty.Pods == nil || len(empty.Pods) != 0 {
		t.Errorf("StatsSummary without a StatsSource = %+v, %v; want no pods", empty, err)
	}
}
