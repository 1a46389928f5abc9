package reconcile

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"tug/internal/pod"
)

// The sources of TestHousekeeping's loop: tug's configuration.
const (
	srcFile = "file:/etc/tug/manifests"
	srcURL  = "https://fleet.example/pods.yaml"
	srcGone = "https://old.example/pods.yaml" // no longer configured
)

// hkContainer is a running container of pod uid from source, as the PLEG's
// cache lists it after a tug restart.
func hkContainer(uid, source string) pod.RuntimeContainer {
	return pod.RuntimeContainer{
		ID: uid + "-app", PodUID: uid, PodName: uid + "-node", Namespace: "default", PodSource: source,
		PodGrace: 7 * time.Second, Name: "app", Image: "busybox:1.35", State: pod.RunRunning,
	}
}

// TestHousekeeping runs one housekeeping pass on a loop whose state the
// case sets up, and checks which pods it removed (a kill worker started
// for them) and which sandboxes without containers it removed.
func TestHousekeeping(t *testing.T) {
	tests := []struct {
		name       string
		containers []pod.RuntimeContainer
		// UIDs that have namespaces, network pieces, a pod cgroup.
		namespaces, network, cgroups []string
		ready                        []string // the sources that have reported
		wanted                       []string // the UIDs a source lists
		killedAgo                    map[string]time.Duration
		workers                      []string // UIDs with a worker already
		podDirs                      []string // UIDs with a pod or log directory
		wantKilled, wantSandboxes    []string
		wantDirs                     []string // UIDs whose directories were removed
	}{
		{
			name:       "orphan of a source that reported is removed",
			containers: []pod.RuntimeContainer{hkContainer("uid-a", srcFile)},
			ready:      []string{srcFile},
			wantKilled: []string{"uid-a"},
		},
		{
			name:       "orphan of a source that has not reported stays",
			containers: []pod.RuntimeContainer{hkContainer("uid-a", srcURL)},
			ready:      []string{srcFile},
		},
		{
			name:       "wanted pods are never touched, nor their sandboxes",
			containers: []pod.RuntimeContainer{hkContainer("uid-a", srcFile), hkContainer("uid-b", srcURL)},
			namespaces: []string{"uid-a", "uid-c"}, network: []string{"uid-b", "uid-c"}, cgroups: []string{"uid-c"},
			ready:  []string{srcFile, srcURL},
			wanted: []string{"uid-a", "uid-b", "uid-c"},
		},
		{
			name:       "pod of an unconfigured source stays until every configured source reported",
			containers: []pod.RuntimeContainer{hkContainer("uid-old", srcGone)},
			ready:      []string{srcFile},
		},
		{
			name:       "pod of an unconfigured source is removed once every configured source reported",
			containers: []pod.RuntimeContainer{hkContainer("uid-old", srcGone), hkContainer("uid-a", srcFile)},
			ready:      []string{srcFile, srcURL},
			wanted:     []string{"uid-a"},
			wantKilled: []string{"uid-old"},
		},
		{
			name:       "a pod killed less than a minute ago is not killed again",
			containers: []pod.RuntimeContainer{hkContainer("uid-a", srcFile)},
			ready:      []string{srcFile, srcURL},
			killedAgo:  map[string]time.Duration{"uid-a": 30 * time.Second},
		},
		{
			name:       "a pod killed over a minute ago that still has containers is killed again",
			containers: []pod.RuntimeContainer{hkContainer("uid-a", srcFile)},
			ready:      []string{srcFile, srcURL},
			killedAgo:  map[string]time.Duration{"uid-a": 2 * time.Minute},
			wantKilled: []string{"uid-a"},
		},
		{
			name:       "a pod with a worker is left to it",
			containers: []pod.RuntimeContainer{hkContainer("uid-a", srcFile)},
			ready:      []string{srcFile, srcURL},
			workers:    []string{"uid-a"},
		},
		{
			name:          "sandboxes without containers are removed once every source reported and none wants them",
			namespaces:    []string{"uid-ns"},
			network:       []string{"uid-net", "uid-ns"},
			cgroups:       []string{"uid-cg"},
			ready:         []string{srcFile, srcURL},
			wantSandboxes: []string{"uid-cg", "uid-net", "uid-ns"},
		},
		{
			name:       "sandboxes without containers stay while a source has not reported",
			namespaces: []string{"uid-ns"}, network: []string{"uid-net"}, cgroups: []string{"uid-cg"},
			ready: []string{srcFile},
		},
		{
			name:       "the sandbox of a pod with containers goes with the pod, not on its own",
			containers: []pod.RuntimeContainer{hkContainer("uid-a", srcFile)},
			namespaces: []string{"uid-a"}, network: []string{"uid-a"},
			ready:      []string{srcFile, srcURL},
			wantKilled: []string{"uid-a"},
		},
		{
			name:     "the directories of a gone pod that left nothing else are removed once every source reported",
			podDirs:  []string{"uid-dirs", "uid-logs"},
			ready:    []string{srcFile, srcURL},
			wantDirs: []string{"uid-dirs", "uid-logs"},
		},
		{
			name:    "the directories of a gone pod stay while a source has not reported",
			podDirs: []string{"uid-dirs"},
			ready:   []string{srcFile},
		},
		{
			name:       "directories of a wanted pod, a pod with containers, a worker, a sandbox or a recent kill are not touched",
			containers: []pod.RuntimeContainer{hkContainer("uid-a", srcFile), hkContainer("uid-w", srcFile)},
			namespaces: []string{"uid-ns"},
			podDirs:    []string{"uid-a", "uid-w", "uid-ns", "uid-worker", "uid-killed", "uid-wanted", "uid-gone"},
			ready:      []string{srcFile, srcURL},
			wanted:     []string{"uid-w", "uid-wanted"},
			workers:    []string{"uid-worker"},
			killedAgo:  map[string]time.Duration{"uid-killed": 30 * time.Second},
			wantKilled: []string{"uid-a"}, wantSandboxes: []string{"uid-ns"},
			wantDirs: []string{"uid-gone"},
		},
		{
			name:       "the sandbox of a pod with a worker is left to it",
			namespaces: []string{"uid-a"},
			ready:      []string{srcFile, srcURL},
			workers:    []string{"uid-a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			defer wg.Wait()
			defer cancel()

			desired := &fakeDesired{ready: map[string]bool{}, wanted: map[string]bool{}}
			for _, s := range tt.ready {
				desired.ready[s] = true
			}
			for _, uid := range tt.wanted {
				desired.wanted[uid] = true
			}
			killed := make(chan *pod.Pod, len(tt.containers))
			var mu sync.Mutex
			var sandboxes []string
			ops := podOps{
				sync: func(context.Context, context.Context, *pod.Pod) (syncResult, error) { return syncResult{}, nil },
				kill: func(_ context.Context, p *pod.Pod) error { killed <- p; return nil },
				removeSandbox: func(_ context.Context, uid string) error {
					mu.Lock()
					defer mu.Unlock()
					sandboxes = append(sandboxes, uid)
					return nil
				},
			}
			cache := fakeCache{&fakeRuntime{containers: tt.containers}}
			l := newLoop(Config{Cache: cache, Desired: desired, Log: discard(), RetryMin: time.Hour, RetryMax: time.Hour,
				Sources: []string{srcFile, srcURL}}, ops)
			sb, nw, cg := &fakeSandbox{pods: map[string]bool{}}, &fakeNetwork{}, &fakeCgroups{pods: map[string]bool{}}
			for _, uid := range tt.namespaces {
				sb.pods[uid] = true
			}
			for _, uid := range tt.network {
				if _, err := nw.SetUp(ctx, &pod.Pod{Metadata: pod.ObjectMeta{UID: uid}}, ""); err != nil {
					t.Fatal(err)
				}
			}
			for _, uid := range tt.cgroups {
				cg.pods[uid] = true
			}
			l.cfg.Sandbox, l.cfg.Network, l.cfg.Cgroups = sb, nw, cg
			dirs := &fakePodDirs{uids: tt.podDirs}
			l.cfg.PodDirs = dirs
			now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
			l.now = func() time.Time { return now }
			for uid, ago := range tt.killedAgo {
				l.killed[uid] = now.Add(-ago)
			}
			before := map[string]*worker{}
			for _, uid := range tt.workers {
				w := &worker{uid: uid}
				l.workers[uid], before[uid] = w, w
			}

			l.housekeeping(ctx, &wg)

			// Housekeeping starts a kill worker for each pod it removes.
			var gotKilled []string
			for uid, w := range l.workers {
				if before[uid] != w {
					gotKilled = append(gotKilled, uid)
				}
			}
			slices.Sort(gotKilled)
			if !slices.Equal(gotKilled, tt.wantKilled) {
				t.Errorf("removed pods %v, want %v", gotKilled, tt.wantKilled)
			}
			for range gotKilled {
				select {
				case p := <-killed:
					// The pod is rebuilt from the labels, with its grace period.
					if g := p.Spec.TerminationGracePeriodSeconds; g == nil || *g != 7 || p.Metadata.Name != p.Metadata.UID+"-node" {
						t.Errorf("killed pod %s/%s grace %v, want the labels' name and 7 s", p.Metadata.Name, p.Metadata.UID, g)
					}
					if at := l.killed[p.Metadata.UID]; !at.Equal(now) {
						t.Errorf("pod %s noted killed at %v, want now", p.Metadata.UID, at)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("a kill worker did not kill its pod")
				}
			}
			mu.Lock()
			got := slices.Sorted(slices.Values(sandboxes))
			mu.Unlock()
			if !slices.Equal(got, tt.wantSandboxes) {
				t.Errorf("removed sandboxes %v, want %v", got, tt.wantSandboxes)
			}
			if !slices.Equal(dirs.removed, tt.wantDirs) {
				t.Errorf("removed the directories of %v, want %v", dirs.removed, tt.wantDirs)
			}
		})
	}
}

// TestHousekeepingForgetsOldKills: a kill noted over a minute ago is
// forgotten, one within the minute is kept.
func TestHousekeepingForgetsOldKills(t *testing.T) {
	l := newLoop(Config{Cache: fakeCache{&fakeRuntime{}}, Desired: &fakeDesired{}, Log: discard()}, podOps{})
	l.cfg.Sandbox, l.cfg.Network, l.cfg.Cgroups = &fakeSandbox{}, &fakeNetwork{}, &fakeCgroups{}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return now }
	l.killed["uid-old"] = now.Add(-61 * time.Second)
	l.killed["uid-new"] = now.Add(-59 * time.Second)
	l.housekeeping(context.Background(), &sync.WaitGroup{})
	if _, ok := l.killed["uid-old"]; ok {
		t.Error("a kill of 61 s ago is still noted")
	}
	if _, ok := l.killed["uid-new"]; !ok {
		t.Error("a kill of 59 s ago was forgotten")
	}
}

// fakePodDirs lists the UIDs that have directories and records removals.
type fakePodDirs struct {
	uids    []string
	removed []string
}

func (f *fakePodDirs) PodDirUIDs() ([]string, error) {
	return slices.Sorted(slices.Values(f.uids)), nil
}
func (f *fakePodDirs) RemovePodDirs(uid string) error {
	f.removed = append(f.removed, uid)
	return nil
}
