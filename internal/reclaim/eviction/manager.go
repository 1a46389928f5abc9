package eviction

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"tug/internal/clock"
	"tug/internal/pod"
)

// Reason is the kubelet's status reason of an evicted pod (phase Failed).
const Reason = "Evicted"

// The kubelet's eviction messages (pkg/kubelet/eviction/helpers.go).
const (
	nodeLowMessageFmt       = "The node was low on resource: %v. Threshold quantity: %v, available: %v. "
	containerMessageFmt     = "Container %s was using %s, request is %s, has larger consumption of %v. "
	emptyDirMessageFmt      = "Usage of EmptyDir volume %q exceeds the limit %q. "
	containerEphemeralFmt   = "Container %s exceeded its local ephemeral storage limit %q. "
	podEphemeralFmt         = "Pod ephemeral local storage usage exceeds the total limit of containers %s. "
	nodeConditionMessageFmt = "The node had condition: %v. "
)

// SystemCriticalPriority is the priority at and above which a pod is never
// evicted (system-cluster-critical is 2000000000, system-node-critical
// 2000001000).
const SystemCriticalPriority = 2000000000

// Observation is what is available of a signal's resource, and its
// capacity (bytes, inodes or process IDs).
type Observation struct {
	Available, Capacity int64
}

// Observer reads the node's signals. A signal it cannot read is left out
// (its thresholds are then never met).
type Observer interface {
	Observe(ctx context.Context) (map[Signal]Observation, error)
}

// Usage is what a container (or a whole pod) uses.
type Usage struct {
	Memory int64 // working set, bytes
	Disk   int64 // writable layer and logs (for a pod: plus its disk-backed emptyDirs), bytes
	Inodes int64
	PIDs   int64
}

// PodStats is a pod's usage: the pod's total, per container, and per
// emptyDir volume (disk-backed ones, bytes).
type PodStats struct {
	Pod        Usage
	Containers map[string]Usage
	EmptyDirs  map[string]int64
}

// Pods lists the pods that run (or are wanted and not evicted) and their
// usage. A pod whose stats cannot be read has ok false.
type Pods interface {
	ActivePods() []*pod.Pod
	PodStats(ctx context.Context, p *pod.Pod) (st PodStats, ok bool)
}

// Evicter stops every container of p within grace and marks it Failed with
// reason Evicted and message; the pod stays wanted by its source and is
// started again once Admit lets it.
type Evicter interface {
	Evict(ctx context.Context, p *pod.Pod, message string, grace time.Duration) error
}

// eventRecorder is the shared event sink (internal/events); nil records
// nothing.
type eventRecorder interface {
	Event(p *pod.Pod, container, eventType, reason, message string)
}

// Config is what New needs. Thresholds come from ParseThresholds.
type Config struct {
	Thresholds []Threshold
	Observer   Observer
	Pods       Pods
	Evicter    Evicter
	// KillPod kills a pod's processes at once through its cgroup, not the
	// runtime (qos.Manager.KillPod); a hard eviction calls it right after
	// Evict. Under memory pressure containerd may be too slow to answer,
	// and the memory is what the eviction is for. nil leaves the kill to
	// the Evicter.
	KillPod func(*pod.Pod) error
	// ReclaimDisk runs, in order, before a pod is evicted for a disk
	// signal (image GC's DeleteUnusedImages, container GC).
	ReclaimDisk []func(ctx context.Context) error
	// Priority returns a pod's priority (pod.PodPriority); nil means 0
	// for every pod.
	Priority func(p *pod.Pod) int32
	// Period is how often Run evaluates; 0 means 10s (the kubelet's).
	Period time.Duration
	// NearPeriod is how often Run evaluates while a signal's available
	// amount is below twice its threshold; 0 means 1s. A pod that grows by
	// megabytes a second on a small device passes its threshold and
	// reaches the kernel's OOM killer within one 10 s period.
	NearPeriod time.Duration
	// PressureTransitionPeriod is how long a node condition stays true
	// after its threshold was last met; 0 means 5m (the kubelet's
	// --eviction-pressure-transition-period).
	PressureTransitionPeriod time.Duration
	// MaxPodGracePeriod bounds the grace of a pod evicted for a soft
	// threshold; 0 means the pod's own.
	MaxPodGracePeriod time.Duration
	Events            eventRecorder
	Log               *slog.Logger
	Clock             clock.Clock
	// Registerer, when set, gets kubelet_evictions{eviction_signal}.
	Registerer prometheus.Registerer
}

// Manager is the eviction manager. Run drives it; Conditions and Admit are
// safe for concurrent use.
type Manager struct {
	cfg       Config
	evictions *prometheus.CounterVec

	mu            sync.Mutex
	firstObserved map[Signal]time.Time // soft thresholds met, since when
	lastObserved  map[string]time.Time // node condition type, last seen met
	conditions    []NodeCondition
	near          bool // a signal below twice its threshold at the last pass

	// evicting is the pod of the last eviction for a node signal until
	// its processes are gone (or cleanupTimeout has passed): until then no
	// other pod is evicted for a node signal, whose reading cannot yet show
	// what the eviction freed.
	evicting  *pod.Pod
	evictedAt time.Time
}

// cleanupTimeout bounds the wait for an evicted pod's processes to go (the
// kubelet's podCleanupTimeout).
const cleanupTimeout = 30 * time.Second

// New returns a Manager.
func New(cfg Config) (*Manager, error) {
	if cfg.Period == 0 {
		cfg.Period = 10 * time.Second
	}
	if cfg.NearPeriod == 0 {
		cfg.NearPeriod = time.Second
	}
	if cfg.PressureTransitionPeriod == 0 {
		cfg.PressureTransitionPeriod = 5 * time.Minute
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	m := &Manager{cfg: cfg, firstObserved: map[Signal]time.Time{}, lastObserved: map[string]time.Time{}}
	m.evictions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "kubelet",
		Name:      "evictions",
		Help:      "Cumulative number of pod evictions by eviction signal",
	}, []string{"eviction_signal"})
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(m.evictions); err != nil {
			return nil, fmt.Errorf("register eviction metric: %w", err)
		}
	}
	m.conditions = m.computeConditions(m.cfg.Clock.Now(), nil)
	return m, nil
}

// Run evaluates every Period (NearPeriod while a signal nears its
// threshold) until ctx is done and returns ctx's error. A failed pass is
// logged when it starts failing and retried next period.
func (m *Manager) Run(ctx context.Context) error {
	t := time.NewTimer(m.cfg.Period)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		start := time.Now()
		_, err := m.Synchronize(ctx)
		m.cfg.Log.Debug("eviction pass", "duration", time.Since(start))
		switch {
		case err != nil && !failing:
			m.cfg.Log.Warn("eviction manager: pass failed", "err", err)
		case err == nil && failing:
			m.cfg.Log.Info("eviction manager: works again")
		}
		failing = err != nil
		t.Reset(m.wait())
	}
}

// wait is the time to the next pass: NearPeriod while the last pass saw a
// signal below twice its threshold, else Period.
func (m *Manager) wait() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.near {
		return min(m.cfg.NearPeriod, m.cfg.Period)
	}
	return m.cfg.Period
}

// Synchronize is one pass: it observes the node and updates the
// conditions (before it reads the pods' stats, which may depend on them),
// then enforces local storage limits, then the node thresholds. It returns
// the pod it evicted, if any.
//
// With no threshold at all (--eviction-hard=none), the node is not
// observed (its conditions stay False) and only the pods that declare a
// local storage limit are read: with none, a pass costs nothing.
func (m *Manager) Synchronize(ctx context.Context) (*pod.Pod, error) {
	var obs map[Signal]Observation
	if len(m.cfg.Thresholds) > 0 {
		var err error
		if obs, err = m.cfg.Observer.Observe(ctx); err != nil {
			return nil, fmt.Errorf("observe node: %w", err)
		}
	}
	met := m.update(m.cfg.Clock.Now(), obs)
	pods := m.cfg.Pods.ActivePods()
	// Only pods with a local storage limit are read on every pass; the
	// others only when a threshold is met and they are to be ranked.
	stats := make(map[string]PodStats, len(pods))
	m.readStats(ctx, stats, slices.DeleteFunc(slices.Clone(pods), func(p *pod.Pod) bool { return !hasLocalStorageLimit(p) }))
	if p, err := m.localStorageEviction(ctx, pods, stats); p != nil || err != nil {
		return p, err
	}
	if len(met) == 0 {
		return nil, nil
	}
	if m.cleaningUp(ctx) {
		return nil, nil
	}
	m.readStats(ctx, stats, pods)
	t := met[0]
	o := obs[t.Signal]
	m.cfg.Log.Info("eviction threshold met", "signal", string(t.Signal), "threshold", t.String(), "available", formatQuantity(t.Signal, o.Available))
	if diskSignal(t.Signal) && len(m.cfg.ReclaimDisk) > 0 {
		for _, reclaim := range m.cfg.ReclaimDisk {
			if err := reclaim(ctx); err != nil {
				m.cfg.Log.Warn("eviction manager: reclaim", "signal", string(t.Signal), "err", err)
			}
		}
		obs, err := m.cfg.Observer.Observe(ctx)
		if err != nil {
			return nil, fmt.Errorf("observe node: %w", err)
		}
		if o = obs[t.Signal]; o.Capacity == 0 || o.Available >= t.value(o.Capacity) {
			m.cfg.Log.Info("eviction manager: reclaimed enough without evicting", "signal", string(t.Signal))
			return nil, nil
		}
	}
	ranked := m.rank(t.Signal, pods, stats)
	for _, p := range ranked {
		if m.priority(p) >= SystemCriticalPriority {
			continue
		}
		grace := time.Duration(0)
		if !t.Hard {
			grace = p.GracePeriod()
			if m.cfg.MaxPodGracePeriod > 0 {
				grace = min(grace, m.cfg.MaxPodGracePeriod)
			}
		}
		msg := thresholdMessage(t, o, p, stats[p.Metadata.UID])
		m.evicting, m.evictedAt = p, m.cfg.Clock.Now()
		if err := m.evict(ctx, p, t.Signal, msg, grace); err != nil {
			return p, err
		}
		if t.Hard && m.cfg.KillPod != nil {
			if err := m.cfg.KillPod(p); err != nil {
				m.cfg.Log.Warn("eviction manager: kill through the pod's cgroup; the runtime stops it", "pod", p.FullName(), "err", err)
			}
		}
		return p, nil
	}
	m.cfg.Log.Error("eviction manager: under pressure and no pod may be evicted", "signal", string(t.Signal))
	return nil, nil
}

// cleaningUp reports whether the last pod evicted for a node signal still
// has processes (its cgroup's pids), for at most cleanupTimeout.
func (m *Manager) cleaningUp(ctx context.Context) bool {
	if m.evicting == nil {
		return false
	}
	if m.cfg.Clock.Now().Sub(m.evictedAt) < cleanupTimeout {
		if st, ok := m.cfg.Pods.PodStats(ctx, m.evicting); ok && st.Pod.PIDs > 0 {
			m.cfg.Log.Info("eviction manager: waiting for the evicted pod to go", "pod", m.evicting.FullName(), "pids", st.Pod.PIDs)
			return true
		}
	}
	m.evicting = nil
	return false
}

func (m *Manager) priority(p *pod.Pod) int32 {
	if m.cfg.Priority == nil {
		return 0
	}
	return m.cfg.Priority(p)
}

func (m *Manager) evict(ctx context.Context, p *pod.Pod, sig Signal, msg string, grace time.Duration) error {
	m.cfg.Log.Warn("evicting pod", "pod", p.FullName(), "uid", p.Metadata.UID, "signal", string(sig), "message", msg)
	if m.cfg.Events != nil {
		m.cfg.Events.Event(p, "", "Warning", Reason, msg)
	}
	m.evictions.WithLabelValues(string(sig)).Inc()
	if err := m.cfg.Evicter.Evict(ctx, p, msg, grace); err != nil {
		return fmt.Errorf("evict pod %s: %w", p.FullName(), err)
	}
	return nil
}

// update records the observation: soft thresholds' first-met times and the
// node conditions. It returns the thresholds to act on (hard ones met,
// soft ones met for their grace period), in signal order.
func (m *Manager) update(now time.Time, obs map[Signal]Observation) []Threshold {
	m.mu.Lock()
	defer m.mu.Unlock()
	var met, act []Threshold
	softMet := map[Signal]bool{}
	m.near = false
	for _, t := range m.cfg.Thresholds {
		o, ok := obs[t.Signal]
		if ok && o.Capacity > 0 && o.Available < 2*t.value(o.Capacity) {
			m.near = true
		}
		if !ok || o.Capacity == 0 || o.Available >= t.value(o.Capacity) {
			continue
		}
		met = append(met, t)
		if t.Hard {
			act = append(act, t)
			continue
		}
		softMet[t.Signal] = true
		first, seen := m.firstObserved[t.Signal]
		if !seen {
			first = now
			m.firstObserved[t.Signal] = now
		}
		if now.Sub(first) >= t.GracePeriod {
			act = append(act, t)
		}
	}
	for sig := range m.firstObserved {
		if !softMet[sig] {
			delete(m.firstObserved, sig)
		}
	}
	m.conditions = m.computeConditions(now, met)
	slices.SortStableFunc(act, func(a, b Threshold) int {
		return cmp.Compare(slices.Index(signalOrder, a.Signal), slices.Index(signalOrder, b.Signal))
	})
	return act
}

func diskSignal(s Signal) bool {
	return s != SignalMemoryAvailable && s != SignalPIDAvailable
}

// thresholdMessage is the kubelet's message for a pod evicted for t.
func thresholdMessage(t Threshold, o Observation, p *pod.Pod, st PodStats) string {
	res := resource[t.Signal]
	var b strings.Builder
	fmt.Fprintf(&b, nodeLowMessageFmt, res, formatQuantity(t.Signal, t.value(o.Capacity)), formatQuantity(t.Signal, o.Available))
	if res != "memory" && res != "ephemeral-storage" {
		return b.String()
	}
	for _, c := range p.Spec.Containers {
		u, ok := st.Containers[c.Name]
		if !ok {
			continue
		}
		used, req := u.Memory, request(c, pod.ResourceMemory)
		if res == "ephemeral-storage" {
			used, req = u.Disk, request(c, pod.ResourceEphemeralStorage)
		}
		if used > req {
			fmt.Fprintf(&b, containerMessageFmt, c.Name, formatQuantity(t.Signal, used), formatQuantity(t.Signal, req), res)
		}
	}
	return b.String()
}

func request(c pod.Container, name pod.ResourceName) int64 {
	if q, ok := c.Resources.Requests[name]; ok {
		return q.Value()
	}
	return 0
}

func limit(c pod.Container, name pod.ResourceName) (int64, bool) {
	q, ok := c.Resources.Limits[name]
	return q.Value(), ok
}

// podRequest sums the pod's containers' requests of name.
func podRequest(p *pod.Pod, name pod.ResourceName) int64 {
	var sum int64
	for _, c := range p.Spec.Containers {
		sum += request(c, name)
	}
	return sum
}

// rank orders pods for eviction for sig, the kubelet's way: memory and
// disk by (usage above requests, priority, usage minus requests), inodes
// by (priority, inodes), pids by (priority, pids). Pods with no stats
// come first. The result is a new slice.
func (m *Manager) rank(sig Signal, pods []*pod.Pod, stats map[string]PodStats) []*pod.Pod {
	type key struct {
		found    bool
		exceeds  bool
		priority int32
		usage    int64
	}
	keys := make(map[*pod.Pod]key, len(pods))
	for _, p := range pods {
		st, found := stats[p.Metadata.UID]
		k := key{found: found, priority: m.priority(p)}
		switch resource[sig] {
		case "memory":
			req := podRequest(p, pod.ResourceMemory)
			k.exceeds, k.usage = st.Pod.Memory > req, st.Pod.Memory-req
		case "ephemeral-storage":
			req := podRequest(p, pod.ResourceEphemeralStorage)
			k.exceeds, k.usage = st.Pod.Disk > req, st.Pod.Disk-req
		case "inodes":
			k.usage = st.Pod.Inodes
		case "pids":
			k.usage = st.Pod.PIDs
		}
		keys[p] = k
	}
	out := slices.Clone(pods)
	slices.SortStableFunc(out, func(a, b *pod.Pod) int {
		ka, kb := keys[a], keys[b]
		if ka.found != kb.found {
			return cmpTrueFirst(!ka.found, !kb.found)
		}
		return cmp.Or(cmpTrueFirst(ka.exceeds, kb.exceeds), cmp.Compare(ka.priority, kb.priority), cmp.Compare(kb.usage, ka.usage))
	})
	return out
}

func cmpTrueFirst(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

// readStats adds the usage of the pods not in stats yet.
func (m *Manager) readStats(ctx context.Context, stats map[string]PodStats, pods []*pod.Pod) {
	for _, p := range pods {
		if _, done := stats[p.Metadata.UID]; done {
			continue
		}
		if st, ok := m.cfg.Pods.PodStats(ctx, p); ok {
			stats[p.Metadata.UID] = st
		}
	}
}

// localStorageEviction evicts the first pod (in the given order) that
// outgrows an emptyDir sizeLimit, a container's ephemeral-storage limit,
// or the sum of its containers' limits, as the kubelet's
// localStorageEviction does; grace is 0.
func (m *Manager) localStorageEviction(ctx context.Context, pods []*pod.Pod, stats map[string]PodStats) (*pod.Pod, error) {
	for _, p := range pods {
		st, ok := stats[p.Metadata.UID]
		if !ok || m.priority(p) >= SystemCriticalPriority {
			continue
		}
		if sig, msg := localStorageMessage(p, st); msg != "" {
			return p, m.evict(ctx, p, sig, msg, 0)
		}
	}
	return nil, nil
}

// hasLocalStorageLimit reports whether p has a disk emptyDir with a
// sizeLimit or a container with an ephemeral-storage limit.
func hasLocalStorageLimit(p *pod.Pod) bool {
	for _, v := range p.Spec.Volumes {
		if v.EmptyDir != nil && v.EmptyDir.SizeLimit != nil && v.EmptyDir.Medium != pod.StorageMediumMemory {
			return true
		}
	}
	for _, c := range p.Spec.Containers {
		if _, ok := limit(c, pod.ResourceEphemeralStorage); ok {
			return true
		}
	}
	return false
}

// The kubelet's kubelet_evictions labels for local storage limits.
const (
	SignalEmptyDirFsLimit           Signal = "emptydirfs.limit"
	SignalEphemeralContainerFsLimit Signal = "ephemeralcontainerfs.limit"
	SignalEphemeralPodFsLimit       Signal = "ephemeralpodfs.limit"
)

// localStorageMessage returns which limit p outgrew and the kubelet's
// message, or "" for both.
func localStorageMessage(p *pod.Pod, st PodStats) (Signal, string) {
	for _, v := range p.Spec.Volumes {
		if v.EmptyDir == nil || v.EmptyDir.SizeLimit == nil || v.EmptyDir.Medium == pod.StorageMediumMemory {
			continue // tmpfs sizeLimit is enforced by the mount itself
		}
		if used, ok := st.EmptyDirs[v.Name]; ok && used > v.EmptyDir.SizeLimit.Value() {
			return SignalEmptyDirFsLimit, fmt.Sprintf(emptyDirMessageFmt, v.Name, v.EmptyDir.SizeLimit.String())
		}
	}
	var total int64
	all := len(p.Spec.Containers) > 0
	for _, c := range p.Spec.Containers {
		lim, ok := limit(c, pod.ResourceEphemeralStorage)
		if !ok {
			all = false
			continue
		}
		total += lim
		if u, ok := st.Containers[c.Name]; ok && u.Disk > lim {
			return SignalEphemeralContainerFsLimit, fmt.Sprintf(containerEphemeralFmt, c.Name, c.Resources.Limits[pod.ResourceEphemeralStorage].String())
		}
	}
	if all && st.Pod.Disk > total {
		return SignalEphemeralPodFsLimit, fmt.Sprintf(podEphemeralFmt, formatQuantity(SignalNodeFsAvailable, total))
	}
	return "", ""
}
