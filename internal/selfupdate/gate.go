package selfupdate

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
)

// DefaultTrial is how long a new tug's health gate must hold.
const DefaultTrial = 2 * time.Minute

// Sources says whether every source of pods has reported (its answer or
// its checkpoint).
type Sources interface {
	AllReady() (bool, []string)
}

// GateConfig is what a trial's health gate watches.
type GateConfig struct {
	Layout Layout
	Store  *Store
	// Slot is the slot this tug runs from ("" for the installed binary).
	Slot string
	// Window is how long the gate must hold (DefaultTrial when zero).
	Window time.Duration
	// Tick is how often it is looked at (2 s when zero).
	Tick time.Duration
	// Health is the watchdog's condition (the PLEG relisted recently and
	// the sync loop turned): an error fails the gate at once.
	Health  func() error
	Sources Sources
	// Running lists the IDs of the running containers.
	Running func() []string
	// Fault, when not "", fails the gate with it (a test build's fault).
	Fault string
	Now   func() time.Time
	Log   *slog.Logger
}

// Gate is a new tug's trial; see Run.
type Gate struct{ cfg GateConfig }

// NewGate returns the gate of a tug.
func NewGate(cfg GateConfig) *Gate {
	if cfg.Window <= 0 {
		cfg.Window = DefaultTrial
	}
	if cfg.Tick <= 0 {
		cfg.Tick = 2 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Gate{cfg: cfg}
}

// OnTrial says whether this tug is the release on trial.
func (g *Gate) OnTrial() bool {
	t := g.cfg.Store.Get().Trial
	return t != nil && g.cfg.Slot != "" && t.Slot == g.cfg.Slot
}

// Run does nothing but wait for ctx unless this tug is on trial. On
// trial, it takes the containers running at its start, waits (at most
// Window) for every source to report, and for Window from then checks the
// watchdog's condition every Tick; then every source must have reported
// and every container of the start must still run (adopted, not
// restarted). It then commits the release (the state names its slot as
// good), or reverts it: the current link back to the good slot, the
// release marked broken with the reason, and ErrRestart so that systemd
// starts the good binary. The pods are left as they are either way.
func (g *Gate) Run(ctx context.Context) error {
	if !g.OnTrial() {
		<-ctx.Done()
		return nil
	}
	t := g.cfg.Store.Get().Trial
	log := g.cfg.Log.With("version", t.Version, "slot", t.Slot)
	baseline := g.cfg.Running()
	log.Info("self-update: on trial", "window", g.cfg.Window, "containers", len(baseline))
	tick := time.NewTicker(g.cfg.Tick)
	defer tick.Stop()
	var failed string
	// The window starts once every source has reported (when tug tells
	// systemd it is ready, and its watchdog starts), within a window's
	// time; the watchdog's condition holds throughout.
	start, ready := time.Now(), false
	for failed == "" {
		if !ready {
			if ready, _ = g.cfg.Sources.AllReady(); ready {
				start = time.Now()
			} else if time.Since(start) >= g.cfg.Window {
				break
			}
		} else if time.Since(start) >= g.cfg.Window {
			break
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if err := g.cfg.Health(); err != nil {
			failed = "watchdog condition: " + err.Error()
		}
	}
	if failed == "" {
		failed = g.verdict(baseline)
	}
	if failed == "" {
		err := g.cfg.Store.Update(func(s *State) {
			s.Committed, s.Good = t.Version, t.Slot
			s.Trial = nil
			s.Last = &Outcome{Version: t.Version, State: StateCommitted, Printed: t.Printed, At: g.cfg.Now()}
		})
		if err != nil {
			return fmt.Errorf("self-update: commit: %w", err)
		}
		log.Info("self-update: trial passed; release committed")
		<-ctx.Done()
		return nil
	}
	return g.revert(t, "failed its health gate: "+failed, log)
}

// verdict checks the end of the window: the sources and the containers.
func (g *Gate) verdict(baseline []string) string {
	if g.cfg.Fault != "" {
		return g.cfg.Fault
	}
	if ok, missing := g.cfg.Sources.AllReady(); !ok {
		return "sources not reported: " + strings.Join(missing, ", ")
	}
	running := g.cfg.Running()
	var gone []string
	for _, id := range baseline {
		if !slices.Contains(running, id) {
			gone = append(gone, id)
		}
	}
	if len(gone) > 0 {
		return fmt.Sprintf("%d containers running at its start are not running: %s", len(gone), strings.Join(gone, ", "))
	}
	return ""
}

// revert puts the good binary back: the link first, then the state.
func (g *Gate) revert(t *Trial, reason string, log *slog.Logger) error {
	good := g.cfg.Store.Get().Good
	if err := g.cfg.Layout.SetCurrent(good); err != nil {
		return fmt.Errorf("self-update: revert: %w", err)
	}
	if err := g.cfg.Store.Update(func(s *State) { s.markBroken(t.Version, reason, t.Printed, g.cfg.Now()) }); err != nil {
		return fmt.Errorf("self-update: revert: %w", err)
	}
	log.Error("self-update: release reverted", "reason", reason)
	return ErrRestart
}
