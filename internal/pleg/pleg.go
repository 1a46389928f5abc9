package pleg

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"tug/internal/clock"
	"tug/internal/pod"
)

// Defaults for the Config fields left zero.
const (
	DefaultPeriod       = time.Second
	DefaultHealthyAfter = 3 * time.Minute
	DefaultChannelSize  = 1000
)

// listTimeout bounds one ListContainers call, so that a wedged containerd
// delays the next relist instead of stopping the generator for good.
const listTimeout = time.Minute

// Lister lists tug's containers with their current state.
// podruntime.Runtime implements it. The returned slice becomes the PLEG's:
// the Lister must not use it again.
type Lister interface {
	ListContainers(ctx context.Context) ([]pod.RuntimeContainer, error)
}

// Config configures a PLEG. Every zero field gets the default its comment
// gives; Lister is required.
type Config struct {
	// Lister lists the containers (required).
	Lister Lister
	// Period is the relist period (--pleg-relist-period); default 1 s.
	Period time.Duration
	// HealthyAfter is how long Healthy tolerates no successful relist;
	// default 3 minutes.
	HealthyAfter time.Duration
	// ChannelSize is the capacity of the Events channel; default 1000.
	ChannelSize int
	// Clock tells the time of events, relists and Healthy; nil: the
	// system clock. Run's period and wake-ups use the time package's
	// timers; tests that need those to be deterministic run in a
	// testing/synctest bubble.
	Clock clock.Clock
	// Log receives the generator's logs; default: discarded.
	Log *slog.Logger
	// Registerer gets the relist metrics (kubelet_pleg_relist_duration_seconds
	// and kubelet_pleg_relist_interval_seconds); nil: not registered.
	Registerer prometheus.Registerer
}

// PLEG is the relist-based pod lifecycle event generator. Run relists
// periodically and when woken; each successful relist replaces the cache and
// sends the events of the difference on the Events channel, dropping (and
// counting) those that do not fit rather than blocking.
//
// The first successful relist compares with an empty cache: every running
// container is reported ContainerStarted and every exited one ContainerDied
// (what an agent adopting its containers after a restart needs to see).
//
// Blind spot: a container created and removed between two relists is never
// reported (see the package doc); reconcile's periodic resync is the safety
// net. All methods are safe for concurrent use; Run is meant to be called
// once.
type PLEG struct {
	lister       Lister
	period       time.Duration
	healthyAfter time.Duration
	clock        clock.Clock
	log          *slog.Logger

	events  chan Event
	wake    chan struct{} // capacity 1: pending wake-ups coalesce
	dropped atomic.Uint64

	relistMu sync.Mutex // serialises Relist
	failing  bool       // the last relist failed; guarded by relistMu
	failedAt time.Time  // when relists started failing; guarded by relistMu
	dropping bool       // the last send was dropped; guarded by relistMu
	started  time.Time  // when the previous relist started; guarded by relistMu

	relistDuration, relistInterval prometheus.Histogram

	mu         sync.RWMutex // guards the cache below; written with relistMu held too
	byID       map[string]pod.RuntimeContainer
	list       []pod.RuntimeContainer // the last good listing, in the Lister's order
	lastRelist time.Time              // when the last successful relist saw it
}

// New returns a PLEG configured by cfg (see Config for the defaults). It
// panics when cfg.Lister is nil, a programming error.
func New(cfg Config) *PLEG {
	if cfg.Lister == nil {
		panic("pleg: New without a Lister")
	}
	if cfg.Period <= 0 {
		cfg.Period = DefaultPeriod
	}
	if cfg.HealthyAfter <= 0 {
		cfg.HealthyAfter = DefaultHealthyAfter
	}
	if cfg.ChannelSize <= 0 {
		cfg.ChannelSize = DefaultChannelSize
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	p := &PLEG{
		relistDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kubelet_pleg_relist_duration_seconds",
			Help:    "Duration in seconds for relisting pods in PLEG.",
			Buckets: prometheus.DefBuckets,
		}),
		relistInterval: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kubelet_pleg_relist_interval_seconds",
			Help:    "Interval in seconds between relisting in PLEG.",
			Buckets: prometheus.DefBuckets,
		}),
		lister:       cfg.Lister,
		period:       cfg.Period,
		healthyAfter: cfg.HealthyAfter,
		clock:        cfg.Clock,
		log:          cfg.Log,
		events:       make(chan Event, cfg.ChannelSize),
		wake:         make(chan struct{}, 1),
	}
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(p.relistDuration, p.relistInterval)
	}
	return p
}

// Run relists at once, then every Period after the previous relist ended,
// and as soon as possible after Wake. A failed relist is logged (when
// relists start failing, and when they recover) and retried at the next
// period. Run returns nil when ctx is done; it starts no goroutine that
// outlives it.
func (p *PLEG) Run(ctx context.Context) error {
	timer := time.NewTimer(p.period)
	defer timer.Stop()
	for {
		_ = p.Relist(ctx) // logged by Relist; retried next period
		timer.Reset(p.period)
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case <-p.wake:
		}
	}
}

// Wake asks for a relist as soon as possible. It never blocks; wake-ups
// that arrive before Run gets to them coalesce into one relist, and one that
// arrives during a relist causes another right after it (the change that
// caused it may have come after the listing).
func (p *PLEG) Wake() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Relist lists the containers once, synchronously, and on success replaces
// the cache and sends the events of the difference. On failure it returns
// the error and changes nothing: no events, the cache and LastRelist keep
// the last good listing. Concurrent calls are serialised.
func (p *PLEG) Relist(ctx context.Context) error {
	p.relistMu.Lock()
	defer p.relistMu.Unlock()

	start := p.clock.Now()
	if !p.started.IsZero() {
		p.relistInterval.Observe(start.Sub(p.started).Seconds())
	}
	p.started = start
	defer func() { p.relistDuration.Observe(p.clock.Now().Sub(start).Seconds()) }()
	lctx, cancel := context.WithTimeout(ctx, listTimeout)
	list, err := p.lister.ListContainers(lctx)
	cancel()
	now := p.clock.Now()
	if err != nil {
		if ctx.Err() != nil { // stopping, not failing
			return fmt.Errorf("pleg: relist: %w", ctx.Err())
		}
		if !p.failing {
			p.failing, p.failedAt = true, now
			p.mu.RLock()
			last := p.lastRelist
			p.mu.RUnlock()
			p.log.Warn("relist failing; keeping the last good listing", "err", err, "last_success", last)
		} else {
			p.log.Debug("relist failed", "err", err, "failing_for", now.Sub(p.failedAt))
		}
		return fmt.Errorf("pleg: relist: %w", err)
	}

	byID := make(map[string]pod.RuntimeContainer, len(list))
	for _, c := range list {
		byID[c.ID] = c
	}
	events := generateEvents(p.byID, byID, now) // p.byID changes only under relistMu
	p.mu.Lock()
	p.byID, p.list, p.lastRelist = byID, list, now
	p.mu.Unlock()

	if p.failing {
		p.failing = false
		p.log.Info("relist recovered", "failed_for", now.Sub(p.failedAt))
	}
	p.log.Debug("relist", "duration", now.Sub(start), "containers", len(list), "events", len(events))
	for _, e := range events {
		p.send(e)
	}
	return nil
}

// send delivers e without blocking; when the channel is full it drops e and
// counts it. Called with relistMu held.
func (p *PLEG) send(e Event) {
	select {
	case p.events <- e:
		if p.dropping {
			p.dropping = false
			p.log.Info("event channel has room again", "dropped_total", p.dropped.Load())
		}
		p.log.Debug("event", "type", e.Type, "uid", e.PodUID, "container", e.ContainerID)
	default:
		n := p.dropped.Add(1)
		if !p.dropping {
			p.dropping = true
			p.log.Warn("event channel full; dropping events", "type", e.Type, "uid", e.PodUID, "container", e.ContainerID, "dropped_total", n)
		}
	}
}

// Events returns the channel the events are sent on, in the order of each
// relist (by pod UID, then container ID). It is never closed. A consumer
// that falls behind loses events (see Dropped), never blocks the generator:
// the cache stays right, and reconcile's periodic resync catches up.
func (p *PLEG) Events() <-chan Event { return p.events }

// Healthy returns nil when a relist succeeded within the last HealthyAfter,
// and otherwise an error wrapping ErrUnhealthy that says how long ago the
// last success was (or that there was none yet).
func (p *PLEG) Healthy() error {
	p.mu.RLock()
	last := p.lastRelist
	p.mu.RUnlock()
	if last.IsZero() {
		return fmt.Errorf("%w: no relist has succeeded yet", ErrUnhealthy)
	}
	if since := p.clock.Now().Sub(last); since > p.healthyAfter {
		return fmt.Errorf("%w: last successful relist %s ago (threshold %s)", ErrUnhealthy, since.Round(time.Millisecond), p.healthyAfter)
	}
	return nil
}

// Dropped returns how many events were dropped because the Events channel
// was full, since New.
func (p *PLEG) Dropped() uint64 { return p.dropped.Load() }

// PodContainers returns the containers of the pod with this UID in the last
// successful relist, in the Lister's order (podruntime: oldest first), or
// nil. The returned slice is the caller's.
func (p *PLEG) PodContainers(uid string) []pod.RuntimeContainer {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var out []pod.RuntimeContainer
	for _, c := range p.list {
		if c.PodUID == uid {
			out = append(out, c)
		}
	}
	return out
}

// All returns every container of the last successful relist, in the
// Lister's order (nil when there is none). The returned slice is the
// caller's.
func (p *PLEG) All() []pod.RuntimeContainer {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.list == nil {
		return nil
	}
	return append([]pod.RuntimeContainer(nil), p.list...)
}

// LastRelist returns when the last successful relist happened (the PLEG's
// clock), or the zero time before the first.
func (p *PLEG) LastRelist() time.Time {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.lastRelist
}
