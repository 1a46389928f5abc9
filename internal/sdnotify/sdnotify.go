// Package sdnotify owns what tug tells systemd as a Type=notify service:
// READY=1 once every source has reported and the sync loop and the PLEG
// have run since, STATUS= lines with the pod counts, WATCHDOG=1 every half
// WatchdogSec while the sync loop and the PLEG are healthy, and STOPPING=1
// when tug stops. Without NOTIFY_SOCKET it sends nothing.
package sdnotify

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"tug/internal/pod"
	"tug/internal/podview"
)

// Sources says whether every source of pods has reported once.
type Sources interface {
	// AllReady reports whether every source has reported, and names
	// those that have not.
	AllReady() (bool, []string)
}

// Loop is the sync loop as the watchdog sees it.
type Loop interface {
	// LastIteration is when the loop last began a turn (zero before).
	LastIteration() time.Time
}

// Relister is the PLEG as the watchdog sees it.
type Relister interface {
	LastRelist() time.Time
	// Healthy is the kubelet's rule: a relist within 3 minutes.
	Healthy() error
}

// Pods lists the pods tug manages, for STATUS=.
type Pods interface {
	Pods() []podview.View
}

// The default timing.
const (
	// DefaultReadyPoll is how often the notifier looks whether tug is
	// ready.
	DefaultReadyPoll = 500 * time.Millisecond
	// DefaultReadyDeadline bounds the wait for the sources: a URL that
	// never answered and has no checkpoint must not keep tug from being
	// "started" (systemd would kill it at TimeoutStartSec, and with it the
	// file source's pods). STATUS= names the sources still missing.
	DefaultReadyDeadline = 2 * time.Minute
	// DefaultStatusPeriod is how often STATUS= is refreshed once ready.
	DefaultStatusPeriod = 10 * time.Second
)

// Config is what a Notifier watches and how.
type Config struct {
	Sources Sources
	Loop    Loop
	PLEG    Relister
	Pods    Pods
	// LoopStale is how long the sync loop may go without a turn before it
	// counts as wedged.
	LoopStale time.Duration
	Log       *slog.Logger
	// Notify sends one notification; daemon.SdNotify when nil.
	Notify func(state string) error
	// ReadyPoll, ReadyDeadline and StatusPeriod default to the Default
	// values when zero.
	ReadyPoll, ReadyDeadline, StatusPeriod time.Duration
}

// Notifier sends the notifications; see the package comment.
type Notifier struct {
	cfg Config
}

// New returns a Notifier for cfg.
func New(cfg Config) *Notifier {
	if cfg.Notify == nil {
		cfg.Notify = func(state string) error { _, err := daemon.SdNotify(false, state); return err }
	}
	cfg.ReadyPoll = cmp.Or(cfg.ReadyPoll, DefaultReadyPoll)
	cfg.ReadyDeadline = cmp.Or(cfg.ReadyDeadline, DefaultReadyDeadline)
	cfg.StatusPeriod = cmp.Or(cfg.StatusPeriod, DefaultStatusPeriod)
	return &Notifier{cfg: cfg}
}

// Run sends the notifications until ctx ends, then STOPPING=1. The
// watchdog (WATCHDOG_USEC, read through go-systemd) runs in a goroutine of
// its own that reads only the PLEG's and the loop's timestamps: the pod
// counts of STATUS= come through the pod store, which a wedged loop can
// block, and that must not stop the watchdog from noticing.
func (n *Notifier) Run(ctx context.Context) error {
	watchdog, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		n.cfg.Log.Warn("systemd watchdog settings", "err", err)
	}
	var wg sync.WaitGroup
	defer func() {
		wg.Wait()
		n.send("STOPPING=1\nSTATUS=stopping; pods keep running")
	}()
	if watchdog > 0 {
		n.cfg.Log.Info("systemd watchdog on", "interval", watchdog)
		wg.Go(func() { n.watchdog(ctx, watchdog/2) })
	}
	start := time.Now()
	var readyAt time.Time // when the sources were all seen ready
	poll := time.NewTicker(n.cfg.ReadyPoll)
	defer poll.Stop()
	ready := false
	lastStatus := time.Time{}
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-poll.C:
			if !ready {
				all, missing := n.cfg.Sources.AllReady()
				if all && readyAt.IsZero() {
					readyAt = now
				}
				synced := !readyAt.IsZero() && n.cfg.Loop.LastIteration().After(readyAt) && n.cfg.PLEG.LastRelist().After(readyAt)
				late := now.Sub(start) > n.cfg.ReadyDeadline
				if !synced && !late {
					continue
				}
				ready = true
				status := n.status()
				if !synced {
					status = "sources not reported yet: " + strings.Join(missing, ", ") + "; " + status
					n.cfg.Log.Warn("telling systemd tug is ready before every source has reported", "source", strings.Join(missing, ","))
				}
				n.send("READY=1\nSTATUS=" + status)
				lastStatus = now
				poll.Reset(n.cfg.StatusPeriod) // ready: only STATUS= is left to refresh
				continue
			}
			if now.Sub(lastStatus) >= n.cfg.StatusPeriod && n.healthy() == nil {
				n.send("STATUS=" + n.status())
				lastStatus = now
			}
		}
	}
}

// watchdog sends WATCHDOG=1 every period while tug is healthy, and says
// in STATUS= (and the log) when it stops and starts again.
func (n *Notifier) watchdog(ctx context.Context, period time.Duration) {
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
				n.cfg.Log.Error("not telling the systemd watchdog tug is alive", "err", err)
				n.send("STATUS=unhealthy: " + err.Error())
			} else {
				n.cfg.Log.Info("healthy again: telling the systemd watchdog tug is alive")
			}
		}
		wasHealthy = err == nil
	}
}

// healthy is the watchdog's rule: the PLEG's (the kubelet's: a relist
// within 3 minutes) and the sync loop's (a turn within LoopStale).
func (n *Notifier) healthy() error {
	if err := n.cfg.PLEG.Healthy(); err != nil {
		return err
	}
	last := n.cfg.Loop.LastIteration()
	if last.IsZero() || time.Since(last) > n.cfg.LoopStale {
		return fmt.Errorf("sync loop has not turned for %s", time.Since(last).Round(time.Second))
	}
	return nil
}

// status is the STATUS= line: pod counts by phase.
func (n *Notifier) status() string {
	byPhase := map[pod.Phase]int{}
	pods := n.cfg.Pods.Pods()
	for _, v := range pods {
		byPhase[v.Status.Phase]++
	}
	return fmt.Sprintf("%d pods: %d running, %d pending, %d failed, %d succeeded",
		len(pods), byPhase[pod.PhaseRunning], byPhase[pod.PhasePending], byPhase[pod.PhaseFailed], byPhase[pod.PhaseSucceeded])
}

func (n *Notifier) send(state string) {
	if err := n.cfg.Notify(state); err != nil {
		n.cfg.Log.Warn("notify systemd", "err", err)
	}
}
