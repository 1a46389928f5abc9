package reconcile

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"tug/internal/pleg"
	"tug/internal/pod"
	"tug/internal/podconfig"
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
	Desired Desired
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
	Backoff *CrashBackoff
	// RetryMin and RetryMax bound the delay before a failed sync is retried
	// (defaults 1 s and 1 min).
	RetryMin, RetryMax time.Duration
	Log                *slog.Logger
}

// Loop is the sync loop. Its zero value is not usable; build it with New.
type Loop struct {
	cfg   Config
	fns   syncFuncs
	notes *notes
	now   func() time.Time

	workers   map[string]*worker   // by pod UID; only touched by Run
	afterKill map[string]*pod.Pod  // pods re-added while their old worker is killing
	killed    map[string]time.Time // orphans housekeeping removed lately
	done      chan string          // UIDs of workers that ended
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
	if cfg.Backoff == nil {
		cfg.Backoff = &CrashBackoff{Initial: 10 * time.Second, Max: 5 * time.Minute, Reset: 10 * time.Minute}
	}
	n := &notes{}
	s := &podSyncer{rt: cfg.Runtime, sb: cfg.Sandbox, net: cfg.Network, cg: cfg.Cgroups, admit: cfg.Admission, notes: n, backoff: cfg.Backoff, now: time.Now, log: cfg.Log}
	l := newLoop(cfg, syncFuncs{sync: s.syncPod, kill: s.killPod, removeSandbox: s.removeSandbox})
	l.notes = n
	return l
}

func newLoop(cfg Config, fns syncFuncs) *Loop {
	return &Loop{
		cfg:       cfg,
		fns:       fns,
		notes:     &notes{},
		now:       time.Now,
		workers:   map[string]*worker{},
		afterKill: map[string]*pod.Pod{},
		killed:    map[string]time.Time{},
		done:      make(chan string),
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
		select {
		case <-ctx.Done():
			return nil
		case changes, ok := <-updates:
			if !ok {
				updates = nil
				continue
			}
			for _, c := range changes {
				l.apply(ctx, &wg, c)
			}
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
		case <-housekeeping:
			l.housekeeping(ctx, &wg)
		case uid := <-l.done:
			delete(l.workers, uid)
			if p, ok := l.afterKill[uid]; ok {
				delete(l.afterKill, uid)
				l.start(ctx, &wg, p).update(p)
			}
		}
	}
}

func (l *Loop) apply(ctx context.Context, wg *sync.WaitGroup, c podconfig.Change) {
	uid := c.Pod.Metadata.UID
	w := l.workers[uid]
	switch c.Op {
	case podconfig.Remove:
		delete(l.afterKill, uid)
		if w == nil {
			w = l.start(ctx, wg, c.Pod)
		}
		w.kill(c.Pod)
	default: // Add, Update
		if w == nil {
			l.start(ctx, wg, c.Pod).update(c.Pod)
		} else if !w.update(c.Pod) {
			l.afterKill[uid] = c.Pod
		}
	}
}

// start runs a new, idle worker for p's UID.
func (l *Loop) start(ctx context.Context, wg *sync.WaitGroup, p *pod.Pod) *worker {
	uid := p.Metadata.UID
	log := l.cfg.Log.With("pod", p.FullName(), "uid", uid)
	w := newWorker(uid, l.fns, log, backoff{min: l.cfg.RetryMin, max: l.cfg.RetryMax})
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
