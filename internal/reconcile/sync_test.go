package reconcile

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"tug/internal/pod"
)

func TestSyncPod(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		inits    []string
		initExit map[string]int
		policy   pod.RestartPolicy
		before   func(f *fakeRuntime, s *podSyncer, p *pod.Pod) // state before the sync under test
		edit     func(p *pod.Pod)                               // change to the manifest
		wantErr  error
		wantLog  []string
		requeue  bool
	}{
		{
			name:    "init containers run in order before the apps",
			inits:   []string{"init1", "init2"},
			policy:  pod.RestartAlways,
			wantLog: []string{"start init1/0", "start init2/0", "start app/0", "start side/0"},
		},
		{
			name:     "failed init blocks the apps and asks to be synced again",
			inits:    []string{"init1"},
			initExit: map[string]int{"init1": 1},
			policy:   pod.RestartAlways,
			wantLog:  []string{"start init1/0"},
			requeue:  true,
		},
		{
			name:     "failed init is restarted by the next sync",
			inits:    []string{"init1"},
			initExit: map[string]int{"init1": 1},
			policy:   pod.RestartAlways,
			before: func(f *fakeRuntime, s *podSyncer, p *pod.Pod) {
				_, _ = s.syncPod(ctx, ctx, p)
				f.takeLog()
			},
			wantLog: []string{"start init1/1"},
			requeue: true,
		},
		{
			name:     "failed init under Never fails the pod for good",
			inits:    []string{"init1"},
			initExit: map[string]int{"init1": 1},
			policy:   pod.RestartNever,
			before: func(f *fakeRuntime, s *podSyncer, p *pod.Pod) {
				_, _ = s.syncPod(ctx, ctx, p)
				f.takeLog()
			},
			wantLog: nil,
		},
		{
			name:   "a synced pod is left alone",
			policy: pod.RestartAlways,
			before: func(f *fakeRuntime, s *podSyncer, p *pod.Pod) {
				_, _ = s.syncPod(ctx, ctx, p)
				f.takeLog()
			},
			wantLog: nil,
		},
		{
			name:   "edit of one container recreates only it",
			inits:  []string{"init1"},
			policy: pod.RestartAlways,
			before: func(f *fakeRuntime, s *podSyncer, p *pod.Pod) {
				_, _ = s.syncPod(ctx, ctx, p)
				f.takeLog()
			},
			edit:    func(p *pod.Pod) { p.Spec.Containers[0].Args = []string{"sleep", "2000"} },
			wantLog: []string{"stop app/0", "remove app/0", "start app/1"},
		},
		{
			name:   "edit of an init container reruns the sequence",
			inits:  []string{"init1"},
			policy: pod.RestartAlways,
			before: func(f *fakeRuntime, s *podSyncer, p *pod.Pod) {
				_, _ = s.syncPod(ctx, ctx, p)
				f.takeLog()
			},
			edit: func(p *pod.Pod) { p.Spec.InitContainers[0].Args = []string{"true"} },
			wantLog: []string{"stop app/0", "stop side/0", "remove app/0", "remove side/0",
				"remove init1/0", "start init1/1", "start app/0", "start side/0"},
		},
		{
			name:   "container gone from the manifest is removed",
			policy: pod.RestartAlways,
			before: func(f *fakeRuntime, s *podSyncer, p *pod.Pod) {
				_, _ = s.syncPod(ctx, ctx, p)
				f.takeLog()
			},
			edit:    func(p *pod.Pod) { p.Spec.Containers = p.Spec.Containers[:1] },
			wantLog: []string{"stop side/0", "remove side/0"},
		},
		{
			name:   "crashed app container restarts under Always",
			policy: pod.RestartAlways,
			before: func(f *fakeRuntime, s *podSyncer, p *pod.Pod) {
				_, _ = s.syncPod(ctx, ctx, p)
				f.exit("app", 0)
				f.takeLog()
			},
			wantLog: []string{"start app/1"},
		},
		{
			name:   "app that exited 0 stays down under OnFailure",
			policy: pod.RestartOnFailure,
			before: func(f *fakeRuntime, s *podSyncer, p *pod.Pod) {
				_, _ = s.syncPod(ctx, ctx, p)
				f.exit("app", 0)
				f.takeLog()
			},
			wantLog: nil,
		},
		{
			name:   "app that failed restarts under OnFailure, keeping one previous attempt",
			policy: pod.RestartOnFailure,
			before: func(f *fakeRuntime, s *podSyncer, p *pod.Pod) {
				_, _ = s.syncPod(ctx, ctx, p)
				f.exit("app", 2)
				_, _ = s.syncPod(ctx, ctx, p)
				f.exit("app", 2)
				f.takeLog()
			},
			wantLog: []string{"remove app/0", "start app/2"},
		},
		{
			name:   "app that failed stays down under Never",
			policy: pod.RestartNever,
			before: func(f *fakeRuntime, s *podSyncer, p *pod.Pod) {
				_, _ = s.syncPod(ctx, ctx, p)
				f.exit("app", 2)
				f.takeLog()
			},
			wantLog: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeRuntime{initExit: tt.initExit}
			s := newTestSyncer(f, &fakeSandbox{})
			p := testPod(tt.policy, tt.inits, []string{"app", "side"})
			if tt.before != nil {
				tt.before(f, s, p)
			}
			if tt.edit != nil {
				tt.edit(p)
			}
			res, err := s.syncPod(ctx, ctx, p)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("syncPod error = %v, want %v", err, tt.wantErr)
			}
			if (res.requeue > 0) != tt.requeue {
				t.Errorf("requeue = %v, want one: %v", res.requeue, tt.requeue)
			}
			got := f.takeLog()
			if !equalUnordered(got, tt.wantLog) {
				t.Errorf("runtime calls:\n got %q\nwant %q", got, tt.wantLog)
			}
		})
	}
}

// equalUnordered compares call logs, allowing stops and removes of one
// batch (done concurrently) to come in any order while starts keep theirs.
func equalUnordered(got, want []string) bool {
	norm := func(l []string) []string {
		out := slices.Clone(l)
		for i := 0; i < len(out); {
			j := i
			for j < len(out) && out[j][:5] != "start" {
				j++
			}
			slices.Sort(out[i:j])
			if j == i {
				j++
			}
			i = j
		}
		return out
	}
	return slices.Equal(norm(got), norm(want))
}

func TestSyncPodKeepsUnchangedContainerPID(t *testing.T) {
	ctx := context.Background()
	f := &fakeRuntime{}
	s := newTestSyncer(f, &fakeSandbox{})
	p := testPod(pod.RestartAlways, nil, []string{"app", "side"})
	if _, err := s.syncPod(ctx, ctx, p); err != nil {
		t.Fatal(err)
	}
	before := f.running()
	p.Spec.Containers[0].Args = []string{"sleep", "5"}
	if _, err := s.syncPod(ctx, ctx, p); err != nil {
		t.Fatal(err)
	}
	after := f.running()
	if after["side"] != before["side"] || after["app"] == before["app"] || after["app"] == 0 {
		t.Errorf("PIDs before %v after %v: want side unchanged, app replaced", before, after)
	}
}

func TestKillPod(t *testing.T) {
	ctx := context.Background()
	f := &fakeRuntime{}
	sb := &fakeSandbox{}
	s := newTestSyncer(f, sb)
	p := testPod(pod.RestartAlways, []string{"init1"}, []string{"app", "side"})
	if _, err := s.syncPod(ctx, ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := s.killPod(ctx, p); err != nil {
		t.Fatal(err)
	}
	if left, _ := f.PodContainers(ctx, p.Metadata.UID); len(left) != 0 {
		t.Errorf("containers left: %v", left)
	}
	if sb.has(p.Metadata.UID) {
		t.Error("namespaces left")
	}
	if l := f.takeLog(); l[len(l)-1] != "cleanup" {
		t.Errorf("last call %q, want cleanup", l[len(l)-1])
	}
}

func TestSyncSandbox(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name        string
		hostNetwork bool
		limit       int // addresses the fake network has
		wantIP      string
		wantErr     bool
	}{
		{name: "pod network", wantIP: "10.0.0.3"},
		{name: "host network", hostNetwork: true, limit: 1, wantIP: "192.0.2.10"},
		{name: "no free address", limit: 1, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeRuntime{}
			net := &fakeNetwork{limit: tt.limit}
			s := newTestSyncer(f, &fakeSandbox{})
			s.net = net
			// Another pod holds the first address.
			other := testPod(pod.RestartAlways, nil, []string{"app"})
			other.Metadata.UID = "uid-other"
			if _, err := s.syncPod(ctx, ctx, other); err != nil {
				t.Fatal(err)
			}
			p := testPod(pod.RestartAlways, nil, []string{"app"})
			p.Spec.HostNetwork = tt.hostNetwork
			_, err := s.syncPod(ctx, ctx, p)
			if (err != nil) != tt.wantErr {
				t.Fatalf("syncPod: %v, want error %v", err, tt.wantErr)
			}
			n := s.notes.pods[p.Metadata.UID]
			if n.ip != tt.wantIP {
				t.Errorf("noted IP %q, want %q", n.ip, tt.wantIP)
			}
			recs, _ := f.PodContainers(ctx, p.Metadata.UID)
			if tt.wantErr {
				if len(recs) != 0 || !strings.Contains(n.syncErr, "set up network of pod") {
					t.Errorf("after a network error: containers %v, sync error %q", recs, n.syncErr)
				}
				if others, _ := f.PodContainers(ctx, other.Metadata.UID); len(others) != 1 {
					t.Errorf("the other pod has %d containers, want 1", len(others))
				}
				return
			}
			if len(recs) != 1 {
				t.Errorf("%d containers, want 1", len(recs))
			}
			if err := s.killPod(ctx, p); err != nil {
				t.Fatal(err)
			}
			if _, ok := net.leases[p.Metadata.UID]; ok {
				t.Error("lease left after killPod")
			}
			if cg := s.cg.(*fakeCgroups); cg.pods[p.Metadata.UID] {
				t.Error("cgroup left after killPod")
			}
		})
	}
}

// TestSyncClassChangeMovesContainers: when an edit changes the pod's QoS
// class, the containers whose spec did not change still run in the old
// class's cgroup; the sync recreates them in the new one.
func TestSyncClassChangeMovesContainers(t *testing.T) {
	ctx := context.Background()
	f := &fakeRuntime{}
	s := newTestSyncer(f, &fakeSandbox{})
	p := testPod(pod.RestartAlways, nil, []string{"app", "side"})
	if _, err := s.syncPod(ctx, ctx, p); err != nil {
		t.Fatal(err)
	}
	before := f.running()
	if _, err := s.syncPod(ctx, ctx, p); err != nil {
		t.Fatal(err)
	}
	if again := f.running(); again["app"] != before["app"] || again["side"] != before["side"] {
		t.Fatalf("a sync with nothing changed restarted containers: %v, then %v", before, again)
	}
	s.cg.(*fakeCgroups).class = "burstable/"
	if _, err := s.syncPod(ctx, ctx, p); err != nil {
		t.Fatal(err)
	}
	after := f.running()
	if after["app"] == before["app"] || after["side"] == before["side"] {
		t.Errorf("PIDs before %v after %v: want both containers moved to the new class", before, after)
	}
}
