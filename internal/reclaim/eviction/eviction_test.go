package eviction

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"

	"tug/internal/pod"
	"tug/internal/testutil"
)

const mi = 1 << 20

// TestDefaultMemoryThreshold: the default memory.available threshold is
// the kubelet's 100Mi on a node with 1 GiB or more, 10% of a smaller
// node's memory, and not under 48Mi; a given one is what it says on any
// node.
func TestDefaultMemoryThreshold(t *testing.T) {
	def, err := ParseThresholds("", "", "")
	if err != nil {
		t.Fatal(err)
	}
	given, err := ParseThresholds("memory.available<100Mi", "", "")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		memTotal, want int64
	}{
		{memTotal: 24 << 30, want: 100 * mi},
		{memTotal: 1000 * mi, want: 100 * mi},
		{memTotal: 512 * mi, want: 512 * mi / 10},
		{memTotal: 600 * mi, want: 60 * mi},
		{memTotal: 205 * mi, want: 48 * mi},
	}
	for _, tt := range tests {
		if got := def[0].value(tt.memTotal); def[0].Signal != SignalMemoryAvailable || got != tt.want {
			t.Errorf("default on %d MiB: %s = %d, want %d", tt.memTotal/mi, def[0].Signal, got, tt.want)
		}
		if got := given[0].value(tt.memTotal); got != 100*mi {
			t.Errorf("given 100Mi on %d MiB: %d", tt.memTotal/mi, got)
		}
	}
}

func TestParseThresholds(t *testing.T) {
	tests := []struct {
		name             string
		hard, soft, grac string
		want             []string // Threshold.String, then "soft:<grace>" for soft ones
		wantErr          bool
	}{
		{name: "kubelet defaults, memory bounded by the node's", want: []string{"memory.available<min(100Mi,max(48Mi,10%))", "nodefs.available<10%", "nodefs.inodesFree<5%", "imagefs.available<15%", "pid.available<10%"}},
		{name: "given hard replaces the defaults", hard: "pid.available<100,memory.available<1Gi", want: []string{"memory.available<1Gi", "pid.available<100"}},
		{name: "none", hard: "none"},
		{name: "soft with grace", hard: "none", soft: "memory.available<1.5Gi", grac: "memory.available=1m30s", want: []string{"memory.available<1536Mi soft:1m30s"}},
		{name: "soft without grace", hard: "none", soft: "memory.available<1Gi", wantErr: true},
		{name: "grace without soft", hard: "none", grac: "memory.available=1m", wantErr: true},
		{name: "unknown signal", hard: "cpu.available<1", wantErr: true},
		{name: "other operator", hard: "memory.available>1Gi", wantErr: true},
		{name: "bad percentage", hard: "nodefs.available<120%", wantErr: true},
		{name: "twice", hard: "nodefs.available<10%,nodefs.available<5%", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseThresholds(tt.hard, tt.soft, tt.grac)
			if tt.wantErr {
				if !errors.Is(err, ErrInvalidThreshold) {
					t.Fatalf("ParseThresholds() = %v, want ErrInvalidThreshold", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var s []string
			for _, th := range got {
				if th.Hard {
					s = append(s, th.String())
				} else {
					s = append(s, th.String()+" soft:"+th.GracePeriod.String())
				}
			}
			if !slices.Equal(s, tt.want) {
				t.Errorf("ParseThresholds() = %q, want %q", s, tt.want)
			}
		})
	}
}

// fakes: a node with settable observations, pods with settable stats, an
// evicter and an event recorder that record.
type fakeNode struct {
	obs      map[Signal]Observation
	reclaim  func() // what a reclaim frees (changes obs)
	reclaims int
	observes int
}

func (f *fakeNode) Observe(context.Context) (map[Signal]Observation, error) {
	f.observes++
	return f.obs, nil
}

type fakePods struct {
	pods  []*pod.Pod
	stats map[string]PodStats
	read  []string // the pods whose stats were read
}

func (f *fakePods) ActivePods() []*pod.Pod { return f.pods }
func (f *fakePods) PodStats(_ context.Context, p *pod.Pod) (PodStats, bool) {
	f.read = append(f.read, p.Metadata.UID)
	st, ok := f.stats[p.Metadata.UID]
	return st, ok
}

type eviction struct {
	uid, msg string
	grace    time.Duration
}

type fakeEvicter struct{ got []eviction }

func (f *fakeEvicter) Evict(_ context.Context, p *pod.Pod, msg string, grace time.Duration) error {
	f.got = append(f.got, eviction{p.Metadata.UID, msg, grace})
	return nil
}

type fakeEvents struct{ reasons []string }

func (f *fakeEvents) Event(p *pod.Pod, _, typ, reason, _ string) {
	f.reasons = append(f.reasons, p.Metadata.UID+":"+typ+":"+reason)
}

// mkPod makes a pod of one container "c" with the given memory request
// (bytes, 0 for none) and volumes.
func mkPod(uid string, memRequest int64, vols ...pod.Volume) *pod.Pod {
	p := testutil.Pod(uid, testutil.WithUID(uid), testutil.WithApps("c"))
	if memRequest > 0 {
		q := pod.MustParseQuantity(formatQuantity(SignalMemoryAvailable, memRequest))
		p.Spec.Containers[0].Resources.Requests = pod.ResourceList{pod.ResourceMemory: q}
		p.Spec.Containers[0].Resources.Limits = pod.ResourceList{pod.ResourceMemory: q}
	}
	p.Spec.Volumes = vols
	return p
}

func memStats(used int64) PodStats {
	return PodStats{Pod: Usage{Memory: used}, Containers: map[string]Usage{"c": {Memory: used}}}
}

func TestSynchronize(t *testing.T) {
	hard, _ := ParseThresholds("memory.available<100Mi,nodefs.available<10%", "", "")
	lowMem := map[Signal]Observation{SignalMemoryAvailable: {Available: 50 * mi, Capacity: 1000 * mi}, SignalNodeFsAvailable: {Available: 500, Capacity: 1000}}
	lowDisk := map[Signal]Observation{SignalMemoryAvailable: {Available: 500 * mi, Capacity: 1000 * mi}, SignalNodeFsAvailable: {Available: 50, Capacity: 1000}}
	fine := map[Signal]Observation{SignalMemoryAvailable: {Available: 500 * mi, Capacity: 1000 * mi}, SignalNodeFsAvailable: {Available: 500, Capacity: 1000}}
	size := pod.MustParseQuantity("1Mi")
	scratch := pod.Volume{Name: "scratch", EmptyDir: &pod.EmptyDirVolumeSource{SizeLimit: &size}}
	tests := []struct {
		name       string
		none       bool // --eviction-hard=none: no threshold
		obs        map[Signal]Observation
		reclaim    map[Signal]Observation // what the node looks like after a reclaim
		pods       []*pod.Pod
		stats      map[string]PodStats
		priority   map[string]int32
		wantUID    string
		wantMsg    string
		wantSignal Signal
		wantRecl   int
	}{
		{
			name:  "no pressure, no eviction",
			obs:   fine,
			pods:  []*pod.Pod{mkPod("be", 0)},
			stats: map[string]PodStats{"be": memStats(10 * mi)},
		},
		{
			name: "memory: the BestEffort pod (over its zero request) goes before a bigger Guaranteed pod within its request",
			obs:  lowMem,
			pods: []*pod.Pod{mkPod("guaranteed", 400*mi), mkPod("be", 0)},
			stats: map[string]PodStats{
				"guaranteed": memStats(300 * mi),
				"be":         memStats(20 * mi),
			},
			wantUID:    "be",
			wantMsg:    "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container c was using 20Mi, request is 0, has larger consumption of memory. ",
			wantSignal: SignalMemoryAvailable,
		},
		{
			name:     "memory: among pods over their requests, lower priority first",
			obs:      lowMem,
			pods:     []*pod.Pod{mkPod("low", 0), mkPod("high", 0)},
			stats:    map[string]PodStats{"low": memStats(1 * mi), "high": memStats(200 * mi)},
			priority: map[string]int32{"high": 1000},
			wantUID:  "low", wantSignal: SignalMemoryAvailable,
		},
		{
			name:    "memory: same priority, larger usage above requests first",
			obs:     lowMem,
			pods:    []*pod.Pod{mkPod("small", 0), mkPod("big", 0)},
			stats:   map[string]PodStats{"small": memStats(1 * mi), "big": memStats(200 * mi)},
			wantUID: "big", wantSignal: SignalMemoryAvailable,
		},
		{
			name:     "a system-critical pod is never evicted",
			obs:      lowMem,
			pods:     []*pod.Pod{mkPod("critical", 0), mkPod("other", 0)},
			stats:    map[string]PodStats{"critical": memStats(500 * mi), "other": memStats(1 * mi)},
			priority: map[string]int32{"critical": 2000001000},
			wantUID:  "other", wantSignal: SignalMemoryAvailable,
		},
		{
			name:     "disk: reclaim first, and no eviction when it was enough",
			obs:      lowDisk,
			reclaim:  fine,
			pods:     []*pod.Pod{mkPod("be", 0)},
			stats:    map[string]PodStats{"be": {Pod: Usage{Disk: 100}}},
			wantRecl: 1,
		},
		{
			name:       "disk: reclaim was not enough, evict the largest user",
			obs:        lowDisk,
			reclaim:    lowDisk,
			pods:       []*pod.Pod{mkPod("a", 0), mkPod("b", 0)},
			stats:      map[string]PodStats{"a": {Pod: Usage{Disk: 10}}, "b": {Pod: Usage{Disk: 300}, Containers: map[string]Usage{"c": {Disk: 300}}}},
			wantRecl:   1,
			wantUID:    "b",
			wantMsg:    "The node was low on resource: ephemeral-storage. Threshold quantity: 100, available: 50. Container c was using 300, request is 0, has larger consumption of ephemeral-storage. ",
			wantSignal: SignalNodeFsAvailable,
		},
		{
			name:       "emptyDir past its sizeLimit is evicted with no node pressure",
			obs:        fine,
			pods:       []*pod.Pod{mkPod("ok", 0), mkPod("writer", 0, scratch)},
			stats:      map[string]PodStats{"ok": {}, "writer": {EmptyDirs: map[string]int64{"scratch": 2 * mi}}},
			wantUID:    "writer",
			wantMsg:    `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". `,
			wantSignal: SignalEmptyDirFsLimit,
		},
		{
			name:       "no threshold: the node is not observed, only pods with a local storage limit are read, and enforced",
			none:       true,
			obs:        lowMem,
			pods:       []*pod.Pod{mkPod("be", 0), mkPod("writer", 0, scratch)},
			stats:      map[string]PodStats{"be": memStats(500 * mi), "writer": {EmptyDirs: map[string]int64{"scratch": 2 * mi}}},
			wantUID:    "writer",
			wantMsg:    `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". `,
			wantSignal: SignalEmptyDirFsLimit,
		},
		{
			name:  "no threshold and no local storage limit: nothing is read",
			none:  true,
			obs:   lowMem,
			pods:  []*pod.Pod{mkPod("be", 0)},
			stats: map[string]PodStats{"be": memStats(500 * mi)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := &fakeNode{obs: tt.obs}
			pods := &fakePods{pods: tt.pods, stats: tt.stats}
			ev := &fakeEvicter{}
			events := &fakeEvents{}
			reg := prometheus.NewRegistry()
			th := hard
			if tt.none {
				th = nil
			}
			m, err := New(Config{
				Thresholds: th, Observer: node, Pods: pods, Evicter: ev, Events: events, Registerer: reg,
				ReclaimDisk: []func(context.Context) error{func(context.Context) error { node.reclaims++; node.obs = tt.reclaim; return nil }},
				Priority:    func(p *pod.Pod) int32 { return tt.priority[p.Metadata.UID] },
			})
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.Synchronize(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if tt.none {
				var want []string
				if tt.wantUID != "" {
					want = []string{tt.wantUID}
				}
				if node.observes != 0 || !slices.Equal(pods.read, want) {
					t.Errorf("with no threshold: %d observations, stats read for %q, want 0 and %q", node.observes, pods.read, want)
				}
			}
			if node.reclaims != tt.wantRecl {
				t.Errorf("reclaims = %d, want %d", node.reclaims, tt.wantRecl)
			}
			if tt.wantUID == "" {
				if got != nil || len(ev.got) != 0 {
					t.Fatalf("evicted %v, want none", ev.got)
				}
				return
			}
			if got == nil || got.Metadata.UID != tt.wantUID || len(ev.got) != 1 || ev.got[0].uid != tt.wantUID {
				t.Fatalf("evicted %v, want %s", ev.got, tt.wantUID)
			}
			if tt.wantMsg != "" && ev.got[0].msg != tt.wantMsg {
				t.Errorf("message %q, want %q", ev.got[0].msg, tt.wantMsg)
			}
			if ev.got[0].grace != 0 {
				t.Errorf("grace %v, want 0 (hard threshold or local storage limit)", ev.got[0].grace)
			}
			if want := []string{tt.wantUID + ":Warning:Evicted"}; !slices.Equal(events.reasons, want) {
				t.Errorf("events %q, want %q", events.reasons, want)
			}
			if n := promtest.ToFloat64(m.evictions.WithLabelValues(string(tt.wantSignal))); n != 1 {
				t.Errorf("kubelet_evictions{eviction_signal=%q} = %v, want 1", tt.wantSignal, n)
			}
		})
	}
}

// TestSoftThresholdAndConditions: a soft threshold evicts only after its
// grace period, the condition is true as soon as it is met and stays true
// for the transition period after, and admission follows the conditions.
func TestSoftThresholdAndConditions(t *testing.T) {
	th, err := ParseThresholds("none", "memory.available<100Mi", "memory.available=30s")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	node := &fakeNode{obs: map[Signal]Observation{SignalMemoryAvailable: {Available: 50 * mi, Capacity: 1000 * mi}}}
	be := mkPod("be", 0)
	grace := int64(20)
	be.Spec.TerminationGracePeriodSeconds = &grace
	ev := &fakeEvicter{}
	m, err := New(Config{Thresholds: th, Observer: node, Pods: &fakePods{pods: []*pod.Pod{be}, stats: map[string]PodStats{"be": memStats(mi)}},
		Evicter: ev, Clock: func() time.Time { return now }, PressureTransitionPeriod: time.Minute, MaxPodGracePeriod: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	status := func() string {
		var s []string
		for _, c := range m.Conditions() {
			s = append(s, c.Type+"="+c.Status)
		}
		return strings.Join(s, ",")
	}
	steps := []struct {
		after      time.Duration
		available  int64
		wantEvicts int
		wantConds  string
		wantAdmit  [2]bool // BestEffort, Burstable
	}{
		{0, 50 * mi, 0, "MemoryPressure=True,DiskPressure=False,PIDPressure=False", [2]bool{false, true}},
		{20 * time.Second, 50 * mi, 0, "MemoryPressure=True,DiskPressure=False,PIDPressure=False", [2]bool{false, true}},
		{15 * time.Second, 50 * mi, 1, "MemoryPressure=True,DiskPressure=False,PIDPressure=False", [2]bool{false, true}},
		{10 * time.Second, 500 * mi, 1, "MemoryPressure=True,DiskPressure=False,PIDPressure=False", [2]bool{false, true}},
		{time.Minute, 500 * mi, 1, "MemoryPressure=False,DiskPressure=False,PIDPressure=False", [2]bool{true, true}},
	}
	for i, s := range steps {
		now = now.Add(s.after)
		node.obs = map[Signal]Observation{SignalMemoryAvailable: {Available: s.available, Capacity: 1000 * mi}}
		if _, err := m.Synchronize(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(ev.got) != s.wantEvicts {
			t.Errorf("step %d: %d evictions, want %d", i, len(ev.got), s.wantEvicts)
		}
		if got := status(); got != s.wantConds {
			t.Errorf("step %d: conditions %s, want %s", i, got, s.wantConds)
		}
		for j, bestEffort := range []bool{true, false} {
			ok, msg := m.Admit(be, bestEffort)
			if ok != s.wantAdmit[j] {
				t.Errorf("step %d: Admit(bestEffort=%v) = %v %q, want %v", i, bestEffort, ok, msg, s.wantAdmit[j])
			}
			if !ok && msg != "The node had condition: [MemoryPressure]. " {
				t.Errorf("step %d: Admit message %q", i, msg)
			}
		}
	}
	if len(ev.got) == 1 && ev.got[0].grace != 5*time.Second {
		t.Errorf("soft eviction grace %v, want 5s (the pod's 20s bounded by MaxPodGracePeriod)", ev.got[0].grace)
	}
}

func TestLocalStorageMessage(t *testing.T) {
	lim := func(s string) pod.ResourceList {
		return pod.ResourceList{pod.ResourceEphemeralStorage: pod.MustParseQuantity(s)}
	}
	p := &pod.Pod{}
	p.Spec.Containers = []pod.Container{{Name: "a", Resources: pod.Resources{Limits: lim("1Mi")}}, {Name: "b", Resources: pod.Resources{Limits: lim("1Mi")}}}
	tests := []struct {
		name    string
		st      PodStats
		wantSig Signal
		wantMsg string
	}{
		{"within", PodStats{Pod: Usage{Disk: mi}, Containers: map[string]Usage{"a": {Disk: mi / 2}, "b": {Disk: mi / 2}}}, "", ""},
		{"a container over its limit", PodStats{Containers: map[string]Usage{"a": {Disk: 2 * mi}}}, SignalEphemeralContainerFsLimit, `Container a exceeded its local ephemeral storage limit "1Mi". `},
		{"the pod over the sum", PodStats{Pod: Usage{Disk: 3 * mi}, Containers: map[string]Usage{"a": {Disk: mi / 2}}}, SignalEphemeralPodFsLimit, "Pod ephemeral local storage usage exceeds the total limit of containers 2Mi. "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sig, msg := localStorageMessage(p, tt.st)
			if sig != tt.wantSig || msg != tt.wantMsg {
				t.Errorf("localStorageMessage() = %q, %q; want %q, %q", sig, msg, tt.wantSig, tt.wantMsg)
			}
		})
	}
}

func TestNodeObserver(t *testing.T) {
	proc := t.TempDir()
	files := map[string]string{
		"meminfo":                "MemTotal:        2048000 kB\nMemFree:  10 kB\nMemAvailable:    1024000 kB\n",
		"loadavg":                "0.10 0.20 0.30 2/345 6789\n",
		"sys/kernel/pid_max":     "32768\n",
		"sys/kernel/threads-max": "15000\n",
	}
	for name, data := range files {
		path := filepath.Join(proc, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	obs, err := NodeObserver{NodeFS: t.TempDir(), Proc: proc}.Observe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := obs[SignalMemoryAvailable], (Observation{Available: 1024000 * 1024, Capacity: 2048000 * 1024}); got != want {
		t.Errorf("memory.available = %+v, want %+v", got, want)
	}
	if got, want := obs[SignalPIDAvailable], (Observation{Available: 15000 - 345, Capacity: 15000}); got != want {
		t.Errorf("pid.available = %+v, want %+v", got, want)
	}
	for _, sig := range []Signal{SignalNodeFsAvailable, SignalImageFsAvailable} {
		if o := obs[sig]; o.Capacity <= 0 || o.Available < 0 || o.Available > o.Capacity {
			t.Errorf("%s = %+v, want a real statfs", sig, o)
		}
	}
}

// TestNearThresholdShortensThePeriod: while a signal's available amount is
// below twice its threshold the next pass comes after NearPeriod, else
// after Period.
func TestNearThresholdShortensThePeriod(t *testing.T) {
	hard, _ := ParseThresholds("memory.available<100Mi", "", "")
	tests := []struct {
		name      string
		available int64
		want      time.Duration
	}{
		{name: "far", available: 500 * mi, want: 10 * time.Second},
		{name: "at twice the threshold", available: 200 * mi, want: 10 * time.Second},
		{name: "near", available: 150 * mi, want: time.Second},
		{name: "met", available: 50 * mi, want: time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := &fakeNode{obs: map[Signal]Observation{SignalMemoryAvailable: {Available: tt.available, Capacity: 1 << 30}}}
			m, err := New(Config{Thresholds: hard, Observer: node, Pods: &fakePods{}, Evicter: &fakeEvicter{}})
			if err != nil {
				t.Fatal(err)
			}
			if got := m.wait(); got != 10*time.Second {
				t.Fatalf("before any pass: wait %v, want the period", got)
			}
			if _, err := m.Synchronize(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := m.wait(); got != tt.want {
				t.Errorf("wait %v, want %v", got, tt.want)
			}
		})
	}
}

// TestOneEvictionAtATime: a hard eviction kills the pod through KillPod at
// once; after it, no other pod is evicted while the evicted one still has
// processes, up to 30 s; then the next one is.
func TestOneEvictionAtATime(t *testing.T) {
	hard, _ := ParseThresholds("memory.available<100Mi", "", "")
	now := time.Unix(1000, 0)
	grow, other := mkPod("grow", 0), mkPod("other", 0)
	withPIDs := func(used, pids int64) PodStats {
		st := memStats(used)
		st.Pod.PIDs = pids
		return st
	}
	pods := &fakePods{pods: []*pod.Pod{grow, other}, stats: map[string]PodStats{"grow": withPIDs(300*mi, 3), "other": withPIDs(10*mi, 1)}}
	ev := &fakeEvicter{}
	node := &fakeNode{obs: map[Signal]Observation{SignalMemoryAvailable: {Available: 50 * mi, Capacity: 1 << 30}}}
	var killed []string
	kill := func(p *pod.Pod) error { killed = append(killed, p.Metadata.UID); return nil }
	m, err := New(Config{Thresholds: hard, Observer: node, Pods: pods, Evicter: ev, KillPod: kill, Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	pass := func() string {
		t.Helper()
		p, err := m.Synchronize(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if p == nil {
			return ""
		}
		return p.Metadata.UID
	}
	if got := pass(); got != "grow" || !slices.Equal(killed, []string{"grow"}) {
		t.Fatalf("the first Synchronize evicted %q and killed %q, want grow and grow", got, killed)
	}
	// The evicted pod leaves the active ones, but its processes remain.
	pods.pods = []*pod.Pod{other}
	now = now.Add(5 * time.Second)
	if got := pass(); got != "" {
		t.Errorf("evicted %q while grow still had processes", got)
	}
	now = now.Add(cleanupTimeout)
	if got := pass(); got != "other" {
		t.Errorf("after the cleanup timeout evicted %q, want other", got)
	}
	// A pod whose processes are gone lets the next eviction go at once.
	pods.pods = []*pod.Pod{grow, other}
	m.evicting = other
	pods.stats["other"] = withPIDs(0, 0)
	pods.stats["grow"] = withPIDs(300*mi, 3)
	if got := pass(); got != "grow" {
		t.Errorf("with the last evicted pod gone, evicted %q, want grow", got)
	}
}
