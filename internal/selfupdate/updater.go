package selfupdate

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"tug/internal/bundle"
)

// ErrRestart is what Updater.Run and Gate.Run return when tug must exit
// so that systemd starts the binary the current link now names: a
// release switched to, or a trial reverted.
var ErrRestart = errors.New("selfupdate: restart into the switched binary")

// Source is where the releases come from: a registry reference or a URL.
type Source interface {
	// Name names the source in logs and the status document.
	Name() string
	// Resolve returns an identity of what the source serves now (a
	// manifest digest, an ETag): the same identity means the same
	// release, which is not fetched again. "" means unknown.
	Resolve(ctx context.Context) (string, error)
	// Fetch returns the signed envelope of this architecture's binary.
	Fetch(ctx context.Context, id string) ([]byte, error)
}

// UpdaterConfig is what an Updater follows and checks.
type UpdaterConfig struct {
	Layout Layout
	Store  *Store
	Source Source
	// Keys verify a release (the device's --manifest-verify-key); at
	// least one is required.
	Keys []ed25519.PublicKey
	// Node is matched against the release's node selector.
	Node string
	// Arch is this device's GOARCH.
	Arch string
	// Check runs the installed binary at path: "version" (what it prints
	// is returned) and the device's configuration check. An error keeps
	// the current binary and marks the release broken.
	Check func(ctx context.Context, path string) (string, error)
	// Period is the polling period.
	Period time.Duration
	// Ready, when set, is asked before a release is fetched and
	// installed: false waits for the next poll (the device's download and
	// update windows; the place of a release's waves).
	Ready func(now time.Time) bool
	Now   func() time.Time
	Log   *slog.Logger
}

// Updater follows a release source; see Run.
type Updater struct {
	cfg UpdaterConfig
	// seen is the identity last handled (installed or refused), not
	// fetched again.
	seen string
	// failing is the last error logged, so that a repeated one is not
	// logged at every poll.
	failing string
}

// NewUpdater returns an updater.
func NewUpdater(cfg UpdaterConfig) *Updater {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Updater{cfg: cfg, failing: "not polled yet"}
}

// Run polls the source every Period while no release is on trial. A
// release that passes every check is installed into the slot that is not
// the good one, checked there, recorded as on trial, and switched to; Run
// then returns ErrRestart. A refused release is logged (once) and not
// fetched again until the source serves something else.
func (u *Updater) Run(ctx context.Context) error {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if u.cfg.Store.Get().Trial == nil {
			err := u.Poll(ctx)
			if errors.Is(err, ErrRestart) {
				return err
			}
			u.report(err)
		}
		t.Reset(u.cfg.Period)
	}
}

// report logs a poll's outcome when it changed.
func (u *Updater) report(err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg == u.failing {
		return
	}
	u.failing = msg
	switch {
	case err == nil:
		u.cfg.Log.Info("self-update source answers", "source", u.cfg.Source.Name())
	case errors.Is(err, ErrNotNewer):
		u.cfg.Log.Info("self-update: the release served is the one running", "source", u.cfg.Source.Name(), "err", err)
	default:
		u.cfg.Log.Warn("self-update: release not installed", "source", u.cfg.Source.Name(), "err", err)
	}
}

// Poll checks the source once and installs what it serves when it may.
func (u *Updater) Poll(ctx context.Context) error {
	id, err := u.cfg.Source.Resolve(ctx)
	if err != nil {
		return err
	}
	if id != "" && id == u.seen {
		return nil
	}
	if u.cfg.Ready != nil && !u.cfg.Ready(u.cfg.Now()) {
		return nil
	}
	err = u.install(ctx, id)
	if !isTransient(err) {
		u.seen = id
	}
	return err
}

// isTransient says whether an error may pass by itself (a transport
// error), so that the same release is fetched again.
func isTransient(err error) bool {
	if err == nil || errors.Is(err, ErrRestart) {
		return false
	}
	for _, e := range []error{ErrNotNewer, ErrBelowFloor, ErrBroken, ErrArch, ErrCheck, ErrPlan,
		bundle.ErrBadSignature, bundle.ErrBadEnvelope, bundle.ErrNotEnvelope, bundle.ErrOtherNode,
		bundle.ErrExpired, bundle.ErrNoPlatform, bundle.ErrWrongArch, bundle.ErrNotBundle, bundle.ErrDigestMismatch, bundle.ErrTooLarge} {
		if errors.Is(err, e) {
			return false
		}
	}
	return true
}

func (u *Updater) install(ctx context.Context, id string) error {
	name := u.cfg.Source.Name()
	env, err := u.cfg.Source.Fetch(ctx, id)
	if err != nil {
		return err
	}
	if len(u.cfg.Keys) == 0 {
		return fmt.Errorf("%s: %w: no verify key", name, bundle.ErrBadSignature)
	}
	bin, hdr, err := bundle.Open(env, bundle.Check{Keys: u.cfg.Keys, Node: u.cfg.Node, Now: u.cfg.Now()})
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if hdr.Rollout != nil || hdr.Halt != nil {
		// The place of a release's waves: refused until the updater
		// follows them, never silently ignored.
		return fmt.Errorf("%s: version %d: %w", name, hdr.Version, ErrPlan)
	}
	st := u.cfg.Store.Get()
	if err := Admit(st, hdr.Version); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	arch, err := bundle.ELFArch(bin)
	if err != nil {
		return fmt.Errorf("%s: version %d: %w", name, hdr.Version, err)
	}
	if arch != u.cfg.Arch {
		return fmt.Errorf("%s: version %d: %w: %s, this device is %s", name, hdr.Version, ErrArch, arch, u.cfg.Arch)
	}
	// Downloading, as the metric says it, is a release admitted and being
	// installed: a fetch that ends in a refusal (the running release seen
	// again after a restart) is not one.
	u.cfg.Store.setDownloading(true)
	defer u.cfg.Store.setDownloading(false)
	slot := Other(st.Good)
	log := u.cfg.Log.With("source", name, "version", hdr.Version, "slot", slot)
	log.Info("self-update: installing a release")
	if err := u.cfg.Layout.Install(slot, bin); err != nil {
		return err
	}
	printed, err := u.cfg.Check(ctx, u.cfg.Layout.Bin(slot))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		reason := fmt.Sprintf("failed its check before the switch: %v", err)
		if uerr := u.cfg.Store.Update(func(s *State) { s.markBroken(hdr.Version, reason, "", u.cfg.Now()) }); uerr != nil {
			log.Warn("self-update: recording a broken release", "err", uerr)
		}
		return fmt.Errorf("%s: version %d: %w: %w", name, hdr.Version, ErrCheck, err)
	}
	// The trial is recorded before the switch: a power cut between the
	// two leaves a trial whose slot the link does not name, which the
	// guard drops.
	if err := u.cfg.Store.Update(func(s *State) { s.Trial = &Trial{Version: hdr.Version, Slot: slot, Printed: printed} }); err != nil {
		return err
	}
	if err := u.cfg.Layout.SetCurrent(slot); err != nil {
		if uerr := u.cfg.Store.Update(func(s *State) { s.Trial = nil }); uerr != nil {
			log.Warn("self-update: dropping the trial", "err", uerr)
		}
		return err
	}
	log.Info("self-update: switched; restarting into the new binary", "printed", printed)
	return ErrRestart
}
