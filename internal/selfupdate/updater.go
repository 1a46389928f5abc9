package selfupdate

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"tug/internal/bundle"
	"tug/internal/wave"
	"tug/internal/window"
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
	// Node is matched against the release's node selector, and places
	// the device in a release's rollout plan with Labels (the node's
	// labels, which the plan's waves select on).
	Node   string
	Labels map[string]string
	// Arch is this device's GOARCH.
	Arch string
	// Check runs the installed binary at path: "version" (what it prints
	// is returned) and the device's configuration check. An error keeps
	// the current binary and marks the release broken.
	Check func(ctx context.Context, path string) (string, error)
	// Period is the polling period.
	Period time.Duration
	// Update and Download are the device's update and download windows
	// (already ForNode; the zero Window is always open). A release is
	// fetched while either is open, and switched to only while the
	// update window is open and the device's wave is.
	Update, Download window.Window
	Now              func() time.Time
	Log              *slog.Logger
}

// Updater follows a release source; see Run.
type Updater struct {
	cfg UpdaterConfig
	// seen is the identity last handled (installed, waiting or refused),
	// not fetched again.
	seen string
	// pending is the release installed ahead into the other slot that
	// waits for its wave or the update window; nil when none does.
	pending *pending
	// failing is the last error logged, so that a repeated one is not
	// logged at every poll.
	failing string
}

// pending is a release installed ahead: what the switch checks again.
type pending struct {
	id       string
	version  uint64
	sha256   string
	notAfter time.Time
	// assign is the device's wave (Index 0: the release has no plan).
	assign  wave.Assignment
	slot    string
	printed string
}

// NewUpdater returns an updater.
func NewUpdater(cfg UpdaterConfig) *Updater {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Updater{cfg: cfg, failing: "not polled yet"}
}

// Run polls the source every Period while no release is on trial (and
// at the opening of a pending release's wave or window, when that comes
// sooner). A release that passes every check is installed into the slot
// that is not the good one and checked there; once its wave and the
// update window are open it is recorded as on trial and switched to, and
// Run returns ErrRestart. A refused release is logged (once) and not
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
		sleep := u.cfg.Period
		if w := u.cfg.Store.Wait(); w != nil && w.State == StateWaiting && !w.Opens.IsZero() {
			sleep = min(sleep, max(w.Opens.Sub(u.cfg.Now()), time.Second))
		}
		t.Reset(sleep)
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
	case errors.Is(err, ErrNoWave), errors.Is(err, ErrHalted):
		u.cfg.Log.Info("self-update: release not installed", "source", u.cfg.Source.Name(), "err", err)
	default:
		u.cfg.Log.Warn("self-update: release not installed", "source", u.cfg.Source.Name(), "err", err)
	}
}

// Poll checks the source once: it switches to the pending release when
// its time has come, and fetches what the source serves when it is new
// and the download or the update window is open. What the source serves
// now wins: a pending release it no longer serves is dropped once the
// new one is handled.
func (u *Updater) Poll(ctx context.Context) error {
	id, err := u.cfg.Source.Resolve(ctx)
	if err != nil {
		return err
	}
	now := u.cfg.Now()
	if p := u.pending; p != nil && id != "" && id == p.id {
		return u.switchPending(now)
	}
	if id != "" && id == u.seen {
		return nil
	}
	if !u.cfg.Download.Open(now) && !u.cfg.Update.Open(now) {
		return nil
	}
	old := u.pending
	err = u.follow(ctx, id, now)
	if isTransient(err) {
		return err
	}
	u.seen = id
	if old != nil && u.pending == old {
		// Neither kept nor replaced: the source serves a release that is
		// refused, halts it, or leaves this device out.
		u.pending = nil
		if !errors.Is(err, ErrRestart) {
			u.cfg.Log.Info("self-update: the release installed ahead is dropped: the source serves another",
				"source", u.cfg.Source.Name(), "version", old.version, "slot", old.slot, "err", err)
		}
	}
	if u.pending == nil && !errors.Is(err, ErrNoWave) && !errors.Is(err, ErrHalted) {
		u.cfg.Store.setWait(nil)
	}
	return err
}

// isTransient says whether an error may pass by itself (a transport
// error), so that the same release is fetched again.
func isTransient(err error) bool {
	if err == nil || errors.Is(err, ErrRestart) {
		return false
	}
	for _, e := range []error{ErrNotNewer, ErrBelowFloor, ErrBroken, ErrArch, ErrCheck, ErrNoWave, ErrHalted,
		bundle.ErrBadSignature, bundle.ErrBadEnvelope, bundle.ErrNotEnvelope, bundle.ErrOtherNode,
		bundle.ErrExpired, bundle.ErrNoPlatform, bundle.ErrWrongArch, bundle.ErrNotBundle, bundle.ErrDigestMismatch, bundle.ErrTooLarge} {
		if errors.Is(err, e) {
			return false
		}
	}
	return true
}

// follow fetches and checks the release the source serves, and follows
// its halt or its plan: it switches to it now, installs it ahead and
// makes it the pending release, or refuses it.
func (u *Updater) follow(ctx context.Context, id string, now time.Time) error {
	name := u.cfg.Source.Name()
	env, err := u.cfg.Source.Fetch(ctx, id)
	if err != nil {
		return err
	}
	if len(u.cfg.Keys) == 0 {
		return fmt.Errorf("%s: %w: no verify key", name, bundle.ErrBadSignature)
	}
	bin, hdr, err := bundle.Open(env, bundle.Check{Keys: u.cfg.Keys, Node: u.cfg.Node, Now: now})
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
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
	p := &pending{id: id, version: hdr.Version, sha256: hdr.SHA256, notAfter: hdr.NotAfter}
	if h := hdr.Halt; h != nil {
		if h.Revert && st.Committed == h.Version {
			// A revert is installed and switched to at once, waves and
			// windows aside, as a bundle's is applied.
			u.cfg.Log.Info("self-update: the committed release is halted with revert: installing the halting release",
				"source", name, "halted", h.Version, "version", hdr.Version)
			return u.install(ctx, p, bin, true)
		}
		reason := fmt.Sprintf("version %d halted by version %d before it was switched to here: keeping version %d", h.Version, hdr.Version, st.Committed)
		if st.Committed == h.Version {
			reason = fmt.Sprintf("version %d halted by version %d after it was committed here: keeping it", h.Version, hdr.Version)
		}
		u.cfg.Store.setWait(&Wait{State: StateHalted, Version: h.Version, Reason: reason})
		return fmt.Errorf("%s: %w: %s", name, ErrHalted, reason)
	}
	if plan := hdr.Rollout; plan != nil {
		p.assign = plan.Choose(u.cfg.Node, u.cfg.Labels, hdr.Version)
		if p.assign.Index == 0 {
			reason := fmt.Sprintf("no wave of version %d selects this node (bucket %d of %d): keeping version %d",
				hdr.Version, p.assign.Bucket, wave.Buckets, st.Committed)
			u.cfg.Store.setWait(&Wait{State: StateIdle, Version: hdr.Version, Reason: reason})
			return fmt.Errorf("%s: %w: %s", name, ErrNoWave, reason)
		}
	}
	if old := u.pending; old != nil && old.version == p.version && old.sha256 == p.sha256 {
		// The release installed ahead, under another identity (the tag
		// pushed again): not installed twice.
		p.slot, p.printed = old.slot, old.printed
		u.pending = p
		return u.switchPending(now)
	}
	if u.open(p, now) {
		return u.install(ctx, p, bin, true)
	}
	if err := u.install(ctx, p, bin, false); err != nil {
		return err
	}
	if old := u.pending; old != nil {
		u.cfg.Log.Info("self-update: the release installed ahead is replaced: the source serves a newer one",
			"source", name, "version", old.version, "newer", p.version)
	}
	u.pending = p
	w := u.wait(p, now)
	u.cfg.Store.setWait(w)
	attrs := []any{"source", name, "version", p.version, "slot", p.slot, "reason", w.Reason}
	if !w.Opens.IsZero() {
		attrs = append(attrs, "opens", w.Opens)
	}
	if p.assign.Index > 0 {
		attrs = append(attrs, "wave", p.assign.Index, "wave_name", p.assign.Name, "wave_opens", p.assign.Opens)
	}
	u.cfg.Log.Info("self-update: release installed ahead, waiting", attrs...)
	return nil
}

// open reports whether the switch to p may happen at now: its wave is
// open (no plan: at once) and so is the update window.
func (u *Updater) open(p *pending, now time.Time) bool {
	return !now.Before(p.assign.Opens) && u.cfg.Update.Open(now)
}

// wait is what the status says of the pending release p at now.
func (u *Updater) wait(p *pending, now time.Time) *Wait {
	w := &Wait{State: StateWaiting, Version: p.version, Wave: p.assign, Slot: p.slot,
		Opens: u.cfg.Update.OpenFrom(maxTime(now, p.assign.Opens))}
	switch {
	case p.assign.Opens.After(now):
		w.Reason = fmt.Sprintf("version %d waiting for wave %d %q at %s", p.version, p.assign.Index, p.assign.Name, p.assign.Opens.UTC().Format(time.RFC3339))
	case w.Opens.IsZero():
		w.Reason = fmt.Sprintf("version %d waiting for an update window that never opens", p.version)
	default:
		w.Reason = fmt.Sprintf("version %d waiting for the update window at %s", p.version, w.Opens.UTC().Format(time.RFC3339))
	}
	return w
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// switchPending switches to the pending release once its wave and the
// update window are open, after checking that its slot still holds the
// binary it was given (by its sha256) and that it has not expired
// meanwhile.
func (u *Updater) switchPending(now time.Time) error {
	p := u.pending
	if !u.open(p, now) {
		u.cfg.Store.setWait(u.wait(p, now))
		return nil
	}
	name := u.cfg.Source.Name()
	u.pending, u.seen = nil, p.id
	u.cfg.Store.setWait(nil)
	if now.After(p.notAfter) {
		return fmt.Errorf("%s: version %d: %w: not after %s", name, p.version, bundle.ErrExpired, p.notAfter.UTC().Format(time.RFC3339))
	}
	sum, err := fileSHA256(u.cfg.Layout.Bin(p.slot))
	if err == nil && sum != p.sha256 {
		err = fmt.Errorf("sha256 %s, want %s", sum, p.sha256)
	}
	if err != nil {
		// Fetched and installed again at the next poll.
		u.seen = ""
		return fmt.Errorf("%s: version %d: slot %s no longer holds the binary installed ahead: %w; fetching it again", name, p.version, p.slot, err)
	}
	u.cfg.Log.Info("self-update: the release installed ahead may be switched to", "source", name, "version", p.version, "slot", p.slot)
	return u.switchTo(p)
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// install writes bin into the slot that is not the good one and checks
// it there; then, when now, it switches to it (ErrRestart).
func (u *Updater) install(ctx context.Context, p *pending, bin []byte, now bool) error {
	name := u.cfg.Source.Name()
	// Downloading, as the metric says it, is a release admitted and being
	// installed: a fetch that ends in a refusal (the running release seen
	// again after a restart) is not one.
	u.cfg.Store.setDownloading(true)
	defer u.cfg.Store.setDownloading(false)
	slot := Other(u.cfg.Store.Get().Good)
	log := u.cfg.Log.With("source", name, "version", p.version, "slot", slot)
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
		if uerr := u.cfg.Store.Update(func(s *State) { s.markBroken(p.version, reason, "", u.cfg.Now()) }); uerr != nil {
			log.Warn("self-update: recording a broken release", "err", uerr)
		}
		return fmt.Errorf("%s: version %d: %w: %w", name, p.version, ErrCheck, err)
	}
	p.slot, p.printed = slot, printed
	if !now {
		return nil
	}
	return u.switchTo(p)
}

// switchTo records p as on trial and points the current link at its
// slot; it returns ErrRestart.
func (u *Updater) switchTo(p *pending) error {
	log := u.cfg.Log.With("source", u.cfg.Source.Name(), "version", p.version, "slot", p.slot)
	// The trial is recorded before the switch: a power cut between the
	// two leaves a trial whose slot the link does not name, which the
	// guard drops.
	if err := u.cfg.Store.Update(func(s *State) { s.Trial = &Trial{Version: p.version, Slot: p.slot, Printed: p.printed} }); err != nil {
		return err
	}
	if err := u.cfg.Layout.SetCurrent(p.slot); err != nil {
		if uerr := u.cfg.Store.Update(func(s *State) { s.Trial = nil }); uerr != nil {
			log.Warn("self-update: dropping the trial", "err", uerr)
		}
		return err
	}
	log.Info("self-update: switched; restarting into the new binary", "printed", p.printed)
	return ErrRestart
}
