package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"tug/internal/api"
	"tug/internal/pleg"
	"tug/internal/pod"
	"tug/internal/podconfig"
	"tug/internal/reconcile"
)

// newRegistry is the one metrics registry of the agent, served on /metrics:
// the Go runtime and process collectors, and whatever the components
// register on it (they are given it as their prometheus.Registerer).
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// logBounds is what the runtime reports of the file log driver's disk
// bound.
type logBounds interface {
	LogDroppedBytes() int64
	LogNoPunchFiles() int64
}

// registerLogMetrics exports the file log driver's drops and the raw logs
// whose file system cannot punch holes.
func registerLogMetrics(reg prometheus.Registerer, b logBounds) {
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "tug_container_log_dropped_bytes_total",
			Help: "Container output bytes dropped because a container's unconverted raw output outgrew its bound (the container wrote faster than tug converts, or while tug was down).",
		}, func() float64 { return float64(b.LogDroppedBytes()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "tug_container_log_no_punch_total",
			Help: "Container attempts whose raw output was found on a file system that cannot punch holes (their converted output stays on disk until they stop, and they are stopped at 64 MiB).",
		}, func() float64 { return float64(b.LogNoPunchFiles()) }),
	)
}

// sourceStatus fills api.SourceLister: each configured source's readiness
// from the pod store, and a URL source's last success from its fetch state.
type sourceStatus struct {
	store   *podconfig.Store
	sources []string
	fetch   map[string]func() pod.FetchStatus
}

func (s sourceStatus) Sources() []api.SourceStatus {
	out := make([]api.SourceStatus, 0, len(s.sources))
	for _, name := range s.sources {
		st := api.SourceStatus{Name: name, Ready: s.store.Ready(name)}
		if f, ok := s.fetch[name]; ok {
			st.LastSuccess = f().LastSuccess
		}
		out = append(out, st)
	}
	return out
}

// allReady reports whether every source has reported, and names those that
// have not.
func (s sourceStatus) allReady() (bool, []string) {
	var missing []string
	for _, name := range s.sources {
		if !s.store.Ready(name) {
			missing = append(missing, name)
		}
	}
	return len(missing) == 0, missing
}

// Systemd notification timing.
const (
	// readyPoll is how often the notifier looks whether tug is ready and
	// refreshes STATUS=.
	readyPoll = 500 * time.Millisecond
	// readyDeadline bounds the wait for the sources: a URL that never
	// answered and has no checkpoint must not keep tug from being "started"
	// (systemd would kill it at TimeoutStartSec, and with it the file
	// source's pods). STATUS= names the sources still missing.
	readyDeadline = 2 * time.Minute
	// statusPeriod is how often STATUS= is refreshed once ready.
	statusPeriod = 10 * time.Second
)

// notifier talks to systemd (Type=notify) through go-systemd's daemon
// package: READY=1 once every source has reported and the sync loop and the
// PLEG have run since, STATUS= lines with the pod counts, WATCHDOG=1 every
// half WatchdogSec while the sync loop and the PLEG are healthy, and
// STOPPING=1 when tug stops. Without NOTIFY_SOCKET it does nothing.
type notifier struct {
	sources sourceStatus
	loop    *reconcile.Loop
	pleg    *pleg.PLEG
	view    api.StatusSource
	// loopStale is how long the sync loop may go without a turn before it
	// counts as wedged.
	loopStale time.Duration
	log       *slog.Logger
	notify    func(state string) error // daemon.SdNotify; a test replaces it
}

func newNotifier(sources sourceStatus, loop *reconcile.Loop, p *pleg.PLEG, view api.StatusSource, loopStale time.Duration, log *slog.Logger) *notifier {
	return &notifier{sources: sources, loop: loop, pleg: p, view: view, loopStale: loopStale, log: log,
		notify: func(state string) error { _, err := daemon.SdNotify(false, state); return err }}
}

// Run sends the notifications until ctx ends, then STOPPING=1. The
// watchdog runs in a goroutine of its own that reads only the PLEG's and
// the loop's timestamps: the pod counts of STATUS= come through the pod
// store, which a wedged loop can block, and that must not stop the
// watchdog from noticing.
func (n *notifier) Run(ctx context.Context) error {
	watchdog, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		n.log.Warn("systemd watchdog settings", "err", err)
	}
	var wg sync.WaitGroup
	defer func() {
		wg.Wait()
		n.send("STOPPING=1\nSTATUS=stopping; pods keep running")
	}()
	if watchdog > 0 {
		n.log.Info("systemd watchdog on", "interval", watchdog)
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.watchdog(ctx, watchdog/2)
		}()
	}
	start := time.Now()
	var readyAt time.Time // when the sources were all seen ready
	poll := time.NewTicker(readyPoll)
	defer poll.Stop()
	ready := false
	lastStatus := time.Time{}
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-poll.C:
			if !ready {
				all, missing := n.sources.allReady()
				if all && readyAt.IsZero() {
					readyAt = now
				}
				synced := !readyAt.IsZero() && n.loop.LastIteration().After(readyAt) && n.pleg.LastRelist().After(readyAt)
				late := now.Sub(start) > readyDeadline
				if !synced && !late {
					continue
				}
				ready = true
				status := n.status()
				if !synced {
					status = "sources not reported yet: " + strings.Join(missing, ", ") + "; " + status
					n.log.Warn("telling systemd tug is ready before every source has reported", "source", strings.Join(missing, ","))
				}
				n.send("READY=1\nSTATUS=" + status)
				lastStatus = now
				poll.Reset(statusPeriod) // ready: only STATUS= is left to refresh
				continue
			}
			if now.Sub(lastStatus) >= statusPeriod && n.healthy() == nil {
				n.send("STATUS=" + n.status())
				lastStatus = now
			}
		}
	}
}

// watchdog sends WATCHDOG=1 every period while tug is healthy, and says
// in STATUS= (and the log) when it stops and starts again.
func (n *notifier) watchdog(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	wasHealthy := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := n.healthy()
		if err == nil {
			n.send("WATCHDOG=1")
		}
		if (err == nil) != wasHealthy {
			if err != nil {
				n.log.Error("not telling the systemd watchdog tug is alive", "err", err)
				n.send("STATUS=unhealthy: " + err.Error())
			} else {
				n.log.Info("healthy again: telling the systemd watchdog tug is alive")
			}
		}
		wasHealthy = err == nil
	}
}

// healthy is the watchdog's rule: the PLEG's (the kubelet's: a relist
// within 3 minutes) and the sync loop's (a turn within loopStale).
func (n *notifier) healthy() error {
	if err := n.pleg.Healthy(); err != nil {
		return err
	}
	last := n.loop.LastIteration()
	if last.IsZero() || time.Since(last) > n.loopStale {
		return fmt.Errorf("sync loop has not turned for %s", time.Since(last).Round(time.Second))
	}
	return nil
}

// status is the STATUS= line: pod counts by phase.
func (n *notifier) status() string {
	byPhase := map[pod.Phase]int{}
	pods := n.view.Pods()
	for _, v := range pods {
		byPhase[v.Status.Phase]++
	}
	return fmt.Sprintf("%d pods: %d running, %d pending, %d failed, %d succeeded",
		len(pods), byPhase[pod.PhaseRunning], byPhase[pod.PhasePending], byPhase[pod.PhaseFailed], byPhase[pod.PhaseSucceeded])
}

func (n *notifier) send(state string) {
	if err := n.notify(state); err != nil {
		n.log.Warn("notify systemd", "err", err)
	}
}

// wedgeCache is the test-only fault --test-fault-wedge-sync-loop: after
// the given time, the sync loop's next housekeeping (which reads All in the
// loop's goroutine) blocks for good, as a loop stuck on a hung call would.
type wedgeCache struct {
	*pleg.PLEG
	at time.Time
}

func (w wedgeCache) All() []pod.RuntimeContainer {
	if time.Now().After(w.at) {
		select {} // wedged on purpose
	}
	return w.PLEG.All()
}
