package reconcile

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"tug/internal/clock"
	"tug/internal/pleg"
	"tug/internal/pod"
	"tug/internal/podconfig"
	"tug/internal/podplan"
	"tug/internal/podstatus"
	"tug/internal/podview"
)

// Config holds what the sync loop needs.
type Config struct {
	Runtime Runtime
	Sandbox Sandbox
	Network Network
	Cgroups Cgroups
	// Cache is the PLEG's view of the containers, for status and
	// housekeeping.
	Cache ContainerCache
	// Desired says which pods the sources want, for housekeeping.
	Desired Ownership
	// Sources names every source (as in pod.Origin.Source): a sandbox with
	// no container is removed only once all of them have reported.
	Sources []string
	// Updates delivers the pod store's ordered changes.
	Updates <-chan []podconfig.Change
	// Events delivers the PLEG's container events; each wakes its pod's
	// worker.
	Events <-chan pleg.Event
	// ResyncPeriod is how often every pod is synced again (--sync-frequency).
	ResyncPeriod time.Duration
	// HousekeepingPeriod is how often containers and namespaces of pods no
	// source has are looked for (default 2 s).
	HousekeepingPeriod time.Duration
	// Admission, when set, is asked before anything of a pod (or of an
	// update of it) is created: a refused pod is Blocked and never started,
	// and a refused update leaves the last admitted version running.
	Admission Admission
	// Backoff times the restarts of exited containers.
	Backoff *podplan.CrashBackoff
	// MaxPods is how many pods tug runs at most (--max-pods; 0: no limit).
	// Pods beyond it are not started and report OutOfpods until others are
	// removed. Which pods run is deterministic: pods that already have
	// containers (adopted after a restart) first, then by namespace/name.
	MaxPods int
	// RetryMin and RetryMax bound the delay before a failed sync is retried
	// (defaults 1 s and 1 min).
	RetryMin, RetryMax time.Duration
	// Clock tells the time of status changes, back-off and housekeeping;
	// nil: the system clock.
	Clock clock.Clock
	// Log is where the loop and its workers log; nil: nowhere.
	Log *slog.Logger
	// Claims and ClaimDirs, when both set, let housekeeping remove the
	// directory of a PersistentVolumeClaim no source defines any more and
	// no pod uses.
	Claims    ClaimSet
	ClaimDirs ClaimRemover
	// Hooks are the optional parts of every pod's sync (hook.go): the
	// probes, the lifecycle handlers, the devices, the image pre-pull and
	// repair, the eviction manager's admission, the in-place resize. They
	// run in this order at each stage. None: a running container is
	// ready, a changed image is pulled as its container starts, an evicted
	// pod starts again once evictionRetry is over, a change of resources
	// recreates the container.
	Hooks []Hook
	// PodDirs, when set, lets housekeeping remove the pod and log
	// directories of pods that are gone and left nothing else.
	PodDirs PodDirs
	// Registerer gets kubelet_pod_worker_duration_seconds; nil: not
	// registered.
	Registerer prometheus.Registerer
	// Recorder receives the pods' events (Created, Started, Killing,
	// BackOff, Failed, FailedMount, ...); nil: none.
	Recorder eventRecorder
	// DeviceChanges, when set, delivers a value when the node's devices
	// changed; every pod is synced then (a refused pod may fit, a pod's
	// device may be gone or back: a FactsHook says which).
	DeviceChanges <-chan struct{}
}

// Loop is the sync loop. Its zero value is not usable; build it with New.
type Loop struct {
	cfg   Config
	ops   podOps
	hooks hooks
	notes *statusNotes
	now   clock.Clock

	workers   map[string]*worker   // by pod UID; only touched by Run
	afterKill map[string]*pod.Pod  // pods re-added while their old worker is killing
	killed    map[string]time.Time // orphans housekeeping removed lately
	// scanned is when housekeeping last looked for sandboxes, pod
	// directories and claims; rescan asks it to look at its next turn.
	scanned   time.Time
	rescan    bool
	held      map[string]*pod.Pod // pods beyond MaxPods, by UID; only touched by Run
	done      chan string         // UIDs of workers that ended
	evictions chan string         // UIDs of pods Evict marked, to sync now
	wakes     chan string         // UIDs of pods Resync asked for
	beat      atomic.Int64        // Unix nanoseconds of Run's last turn

	// terminating holds the pods being removed, by UID, from the kill
	// asked of their worker until the worker ended: Terminating shows
	// them. Guarded by terminatingMu (Run writes it, the API reads it).
	terminatingMu sync.Mutex
	terminating   map[string]removal
}

// removal is a pod being removed and when its removal began.
type removal struct {
	pod   *pod.Pod
	since time.Time
}

// New returns a sync loop that drives pods through cfg.Runtime and
// cfg.Sandbox.
func New(cfg Config) *Loop {
	if cfg.RetryMin == 0 {
		cfg.RetryMin = time.Second
	}
	if cfg.RetryMax == 0 {
		cfg.RetryMax = time.Minute
	}
	if cfg.HousekeepingPeriod == 0 {
		cfg.HousekeepingPeriod = 2 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Backoff == nil {
		cfg.Backoff = &podplan.CrashBackoff{Initial: 10 * time.Second, Max: 5 * time.Minute, Reset: 10 * time.Minute}
	}
	if cfg.Backoff.Clock == nil {
		cfg.Backoff.Clock = cfg.Clock
	}
	n := &statusNotes{now: cfg.Clock}
	s := &podSyncer{rt: cfg.Runtime, sb: cfg.Sandbox, net: cfg.Network, cg: cfg.Cgroups, admit: cfg.Admission, notes: n, backoff: cfg.Backoff, now: cfg.Clock, log: cfg.Log, rec: cfg.Recorder, hooks: sortHooks(cfg.Hooks)}
	workerDuration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kubelet_pod_worker_duration_seconds",
		Help:    "Duration in seconds to sync a single pod, by operation type: create, sync or kill.",
		Buckets: prometheus.DefBuckets,
	}, []string{"operation_type"})
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(workerDuration)
	}
	observe := func(op string, d time.Duration) { workerDuration.WithLabelValues(op).Observe(d.Seconds()) }
	l := newLoop(cfg, podOps{sync: s.syncPod, kill: s.killPod, removeSandbox: s.removeSandbox, observe: observe})
	l.notes = n
	return l
}

// Resync asks for a sync of pod uid soon (a probe failed). It never
// blocks: when many are pending, the pod waits for its next resync. Safe
// for concurrent use.
func (l *Loop) Resync(uid string) {
	select {
	case l.wakes <- uid:
	default:
	}
}

func newLoop(cfg Config, ops podOps) *Loop {
	return &Loop{
		cfg:       cfg,
		ops:       ops,
		hooks:     sortHooks(cfg.Hooks),
		notes:     &statusNotes{now: cfg.Clock},
		now:       cfg.Clock,
		workers:   map[string]*worker{},
		afterKill: map[string]*pod.Pod{},
		killed:    map[string]time.Time{},
		rescan:    true,
		held:      map[string]*pod.Pod{},
		done:      make(chan string),
		evictions: make(chan string, 16),
		wakes:     make(chan string, 256),

		terminating: map[string]removal{},
	}
}

// Run handles changes, resync ticks and ended workers in one select until
// ctx ends, then waits for its workers. Pods keep running when tug stops.
// It always returns nil.
func (l *Loop) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	resync := time.NewTicker(l.cfg.ResyncPeriod)
	defer resync.Stop()
	var housekeeping <-chan time.Time
	if l.cfg.HousekeepingPeriod > 0 && l.cfg.Cache != nil && l.cfg.Desired != nil {
		t := time.NewTicker(l.cfg.HousekeepingPeriod)
		defer t.Stop()
		housekeeping = t.C
	}
	updates, events := l.cfg.Updates, l.cfg.Events
	for {
		l.beat.Store(time.Now().UnixNano())
		select {
		case <-ctx.Done():
			return nil
		case changes, ok := <-updates:
			if !ok {
				updates = nil
				continue
			}
			for _, c := range l.admitOrder(changes) {
				l.apply(ctx, &wg, c)
			}
			l.admitHeld(ctx, &wg)
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if w := l.workers[ev.PodUID]; w != nil {
				w.resync()
			}
		case <-resync.C:
			for _, w := range l.workers {
				w.resync()
			}
		case <-l.cfg.DeviceChanges:
			for _, w := range l.workers {
				w.resync()
			}
		case uid := <-l.evictions:
			if w := l.workers[uid]; w != nil {
				w.resync()
			}
		case uid := <-l.wakes:
			if w := l.workers[uid]; w != nil {
				w.resync()
			}
		case <-housekeeping:
			l.housekeeping(ctx, &wg)
		case uid := <-l.done:
			delete(l.workers, uid)
			l.removed(uid)
			l.rescan = true
			if p, ok := l.afterKill[uid]; ok {
				delete(l.afterKill, uid)
				l.start(ctx, &wg, p).update(p)
			}
			l.admitHeld(ctx, &wg)
		}
	}
}

// LastIteration is when Run last began a turn of its loop (zero before
// Run): with housekeeping on, a loop that is not wedged turns at least
// every HousekeepingPeriod. Safe for concurrent use.
func (l *Loop) LastIteration() time.Time {
	ns := l.beat.Load()
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

func (l *Loop) apply(ctx context.Context, wg *sync.WaitGroup, c podconfig.Change) {
	uid := c.Pod.Metadata.UID
	w := l.workers[uid]
	switch c.Op {
	case podconfig.Remove:
		delete(l.afterKill, uid)
		if _, ok := l.held[uid]; ok && w == nil {
			delete(l.held, uid)
			l.notes.forget(uid)
			return
		}
		if w == nil {
			w = l.start(ctx, wg, c.Pod)
		}
		l.kill(w, c.Pod)
	default: // Add, Update
		if _, ok := l.held[uid]; ok || (w == nil && l.full()) {
			l.hold(c.Pod)
		} else if w == nil {
			l.start(ctx, wg, c.Pod).update(c.Pod)
		} else if !w.update(c.Pod) {
			// Wanted again while its old version is removed: an update
			// of the pod (started once the kill is over), not a pod
			// that goes.
			l.afterKill[uid] = c.Pod
			l.removed(uid)
		}
	}
}

// kill asks worker w to remove p, and shows p as terminating until the
// worker ends.
func (l *Loop) kill(w *worker, p *pod.Pod) {
	w.kill(p)
	l.terminatingMu.Lock()
	defer l.terminatingMu.Unlock()
	if _, ok := l.terminating[p.Metadata.UID]; !ok {
		l.terminating[p.Metadata.UID] = removal{pod: p, since: l.now.Now()}
	}
}

// removed forgets that pod uid is being removed.
func (l *Loop) removed(uid string) {
	l.terminatingMu.Lock()
	defer l.terminatingMu.Unlock()
	delete(l.terminating, uid)
}

// Terminating returns the pods being removed (their manifest no longer
// lists them, or no source has them) whose containers are still being
// stopped, sorted by namespace/name: each with metadata.deletionTimestamp
// (when the removal began) and deletionGracePeriodSeconds, its Ready
// condition False, and its containers as the PLEG last saw them. A pod
// leaves the list when its worker has removed its containers and
// sandbox; a pod wanted again meanwhile (the same UID re-added) is an
// update and is not listed. Safe for concurrent use.
func (l *Loop) Terminating() []podview.View {
	l.terminatingMu.Lock()
	pods := slices.Collect(maps.Values(l.terminating))
	l.terminatingMu.Unlock()
	now := l.now.Now()
	out := make([]podview.View, 0, len(pods))
	for _, r := range pods {
		uid := r.pod.Metadata.UID
		var recs []pod.RuntimeContainer
		if l.cfg.Cache != nil {
			recs = l.cfg.Cache.PodContainers(uid)
		}
		p := withRecorded(r.pod, recs)
		var st pod.Status
		l.notes.peek(uid, func(n *podNotes) {
			nn := *n
			nn.probes = l.hooks.status()
			st = computeStatus(p, recs, nn, now)
		})
		st = podstatus.Terminating(st, r.since)
		if l.cfg.Network != nil {
			if ip := l.cfg.Network.HostIP(); ip.IsValid() {
				st.HostIP = ip.String()
			}
		}
		if l.cfg.Cgroups != nil {
			st.QOSClass = l.cfg.Cgroups.QOSClass(podplan.Allocated(p, recs))
		}
		out = append(out, podview.View{APIVersion: "v1", Kind: "Pod", Metadata: podstatus.TerminatingMeta(p, r.since), Spec: p.Spec, Status: st})
	}
	sortViews(out)
	return out
}

// isTerminating reports whether pod uid is being removed.
func (l *Loop) isTerminating(uid string) bool {
	l.terminatingMu.Lock()
	defer l.terminatingMu.Unlock()
	_, ok := l.terminating[uid]
	return ok
}

// start runs a new, idle worker for p's UID.
func (l *Loop) start(ctx context.Context, wg *sync.WaitGroup, p *pod.Pod) *worker {
	uid := p.Metadata.UID
	log := l.cfg.Log.With("pod", p.FullName(), "uid", uid)
	w := newWorker(uid, l.ops, log, backoff{min: l.cfg.RetryMin, max: l.cfg.RetryMax})
	l.workers[uid] = w
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.run(ctx)
		select {
		case l.done <- w.uid:
		case <-ctx.Done():
		}
	}()
	return w
}

// full reports whether MaxPods pods have a worker (a pod being removed
// still counts, until its containers are gone).
func (l *Loop) full() bool {
	return l.cfg.MaxPods > 0 && len(l.workers) >= l.cfg.MaxPods
}

// hold keeps p out of the node until there is room for it.
func (l *Loop) hold(p *pod.Pod) {
	uid := p.Metadata.UID
	if _, ok := l.held[uid]; !ok {
		l.cfg.Log.Warn("pod refused: "+pod.ReasonOutOfPods+"; the node runs --max-pods pods already", "pod", p.FullName(), "uid", uid, "max_pods", l.cfg.MaxPods)
	}
	l.held[uid] = p
	l.notes.refuse(uid, pod.StateWaiting{Reason: pod.ReasonOutOfPods,
		Message: fmt.Sprintf("the node runs its maximum of %d pods (--max-pods); the pod starts when another is removed", l.cfg.MaxPods)})
}

// admitHeld starts held pods while there is room, in admission order.
func (l *Loop) admitHeld(ctx context.Context, wg *sync.WaitGroup) {
	if len(l.held) == 0 {
		return
	}
	pending := make([]podconfig.Change, 0, len(l.held))
	for _, p := range l.held {
		pending = append(pending, podconfig.Change{Op: podconfig.Add, Pod: p})
	}
	for _, c := range l.admitOrder(pending) {
		if l.full() {
			return
		}
		uid := c.Pod.Metadata.UID
		delete(l.held, uid)
		l.notes.refuse(uid, pod.StateWaiting{})
		l.cfg.Log.Info("pod no longer refused: there is room for it (--max-pods)", "pod", c.Pod.FullName(), "uid", uid)
		l.start(ctx, wg, c.Pod).update(c.Pod)
	}
}

// admitOrder returns changes with the Adds in the order pods are admitted
// under MaxPods: pods that have containers already (a restart adopts them)
// first, then by namespace/name. Removes and Updates keep their place
// before the Adds.
func (l *Loop) admitOrder(changes []podconfig.Change) []podconfig.Change {
	if l.cfg.MaxPods <= 0 {
		return changes
	}
	var out, adds []podconfig.Change
	for _, c := range changes {
		if c.Op == podconfig.Add {
			adds = append(adds, c)
		} else {
			out = append(out, c)
		}
	}
	running := func(p *pod.Pod) int {
		if l.cfg.Cache != nil && len(l.cfg.Cache.PodContainers(p.Metadata.UID)) > 0 {
			return 0
		}
		return 1
	}
	slices.SortFunc(adds, func(a, b podconfig.Change) int {
		return cmp.Or(cmp.Compare(running(a.Pod), running(b.Pod)),
			cmp.Compare(a.Pod.FullName(), b.Pod.FullName()), cmp.Compare(a.Pod.Metadata.UID, b.Pod.Metadata.UID))
	})
	return append(out, adds...)
}
