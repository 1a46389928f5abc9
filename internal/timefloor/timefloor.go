// Package timefloor owns tug's judgment of the wall clock: a device
// without a real-time clock boots at 1970 (or at whatever its RTC holds)
// until NTP sets it. The floor is the newest of tug's build time and the
// latest time tug has seen and trusted (persisted in a file); a clock below
// it (less a tolerance) is behind. While it is, tug says so once (a Warn
// line, a node event, the ClockBehind node condition) and its reporters
// hold what a wrong clock makes wrong (Floor.Sane); when the clock comes
// back above the floor, tug says that too.
//
// The floor follows the clock while the clock is sane, in memory. The file
// holds the latest time the kernel said was synchronized (adjtimex: an NTP
// client such as systemd-timesyncd or chrony set it; STA_UNSYNC clear), as
// systemd-timesyncd keeps its clock file: a clock that merely reads a
// sane time (an RTC a year ahead) is never written, so a floor can never
// hold reports back once such a clock is corrected while tug is stopped.
// It is written at most every SaveEvery (an hour: flash wears) and when
// Run ends. A step back of the clock while tug runs and the clock was sane (NTP
// correcting a clock that was ahead) is trusted: the floor follows it down,
// never below the build time, and the file is written at once, so that a
// clock that was ahead does not leave a floor that holds the reports once
// it is corrected. A step is told from the monotonic clock: the wall time
// moved more or less than the monotonic time did.
//
// It imports clock, atomicfile and pod (the condition's type), and
// x/sys/unix for adjtimex.
package timefloor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"tug/internal/atomicfile"
	"tug/internal/clock"
	"tug/internal/pod"
)

// Defaults of Config.
const (
	DefaultTolerance  = 10 * time.Second
	DefaultSaveEvery  = time.Hour
	DefaultCheckEvery = time.Second
)

// The node condition and the events.
const (
	// ConditionType is the node condition: "True" while the clock is
	// below the floor.
	ConditionType = "ClockBehind"
	// ReasonBehind is the condition's reason and the Warning event's
	// while the clock is behind; ReasonSane the condition's and the
	// Normal event's once it is not.
	ReasonBehind = "ClockBeforeTimeFloor"
	ReasonSane   = "ClockSane"
)

// Recorder records a node event (implemented by events.Ring).
type Recorder interface {
	NodeEvent(eventType, reason, message string)
}

// Config configures a Floor.
type Config struct {
	// File holds the latest trusted time (RFC 3339, one line). Required.
	File string
	// Build is tug's build time (the commit's time); zero: none known.
	Build time.Time
	// Tolerance is how far below the floor the clock may be and still be
	// sane, and how much the wall clock may move apart from the
	// monotonic clock between two checks before it counts as a step.
	// Default DefaultTolerance.
	Tolerance time.Duration
	// SaveEvery is the least time between two writes of File. Default
	// DefaultSaveEvery.
	SaveEvery time.Duration
	// CheckEvery is how often Run looks at the clock. Default
	// DefaultCheckEvery.
	CheckEvery time.Duration
	// Clock is the wall clock; Mono the monotonic time elapsed since
	// some fixed point. nil: the system's (Mono: time.Since of the
	// Floor's creation, which Go reads from the monotonic clock).
	Clock clock.Clock
	Mono  func() time.Duration
	// Synced reports whether the kernel counts the clock as synchronized
	// (set by NTP); nil: adjtimex's STA_UNSYNC flag.
	Synced func() bool
	// Events receives the node events; nil: none.
	Events Recorder
	// Log receives the floor's state changes. Default: discard.
	Log *slog.Logger
}

// Floor is the time floor. Its methods are safe for concurrent use.
type Floor struct {
	cfg Config

	mu       sync.Mutex
	floor    time.Time // max(build, the file, the clock while sane)
	trusted  time.Time // the file's time or the latest synchronized reading
	behind   bool
	since    time.Time // the last transition, for the condition
	checked  bool      // lastWall and lastMono hold a reading
	lastWall time.Time
	lastMono time.Duration
	saved    time.Time     // what File holds
	savedAt  time.Duration // Mono at the last write
	dirty    bool          // File must be written at the next sane check
}

// New reads File (missing: the build time alone; damaged: a Warn and the
// build time, the file rewritten at the first sane reading), looks at the
// clock once (so that a clock behind is said before anything starts) and
// returns the floor.
func New(cfg Config) *Floor {
	if cfg.Tolerance <= 0 {
		cfg.Tolerance = DefaultTolerance
	}
	if cfg.SaveEvery <= 0 {
		cfg.SaveEvery = DefaultSaveEvery
	}
	if cfg.CheckEvery <= 0 {
		cfg.CheckEvery = DefaultCheckEvery
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Synced == nil {
		cfg.Synced = kernelSynced
	}
	if cfg.Mono == nil {
		start := time.Now()
		cfg.Mono = func() time.Duration { return time.Since(start) }
	}
	f := &Floor{cfg: cfg, floor: cfg.Build.UTC(), since: cfg.Clock.Now()}
	saved, err := read(cfg.File)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		f.dirty = true
	case err != nil:
		cfg.Log.Warn("the time floor's file is damaged; the build time is the floor", "file", cfg.File, "err", err)
		f.dirty = true
	default:
		f.saved, f.trusted = saved, saved
		if saved.After(f.floor) {
			f.floor = saved
		}
	}
	f.check()
	return f
}

// read parses File: one RFC 3339 time and a newline.
func read(path string) (time.Time, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}, err
	}
	s, ok := strings.CutSuffix(string(b), "\n")
	if !ok {
		return time.Time{}, errors.New("timefloor: no final newline (cut short)")
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("timefloor: %w", err)
	}
	return t.UTC(), nil
}

// Run looks at the clock every CheckEvery until ctx ends, then writes the
// floor (when the clock is sane) and returns nil.
func (f *Floor) Run(ctx context.Context) error {
	t := time.NewTicker(f.cfg.CheckEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			f.mu.Lock()
			if !f.behind {
				f.save()
			}
			f.mu.Unlock()
			return nil
		case <-t.C:
			f.check()
		}
	}
}

// Floor returns the floor.
func (f *Floor) Floor() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.floor
}

// Sane reports whether the clock reads at least the floor, less the
// tolerance: what the reporters ask before sending a time. A nil Floor is
// always sane.
func (f *Floor) Sane() bool {
	if f == nil {
		return true
	}
	now := f.cfg.Clock.Now().Round(0)
	f.mu.Lock()
	defer f.mu.Unlock()
	return !now.Before(f.floor.Add(-f.cfg.Tolerance))
}

// Conditions returns the ClockBehind node condition; a nil Floor none.
func (f *Floor) Conditions() []pod.NodeCondition {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := pod.NodeCondition{Type: ConditionType, Status: "False", Reason: ReasonSane,
		Message: "the clock reads at least tug's time floor", LastTransitionTime: f.since}
	if f.behind {
		c.Status, c.Reason, c.Message = "True", ReasonBehind, f.behindMessage()
	}
	return []pod.NodeCondition{c}
}

// behindMessage says what is wrong and what tug holds. f.mu is held.
func (f *Floor) behindMessage() string {
	return fmt.Sprintf("the clock (%s) is before tug's time floor (%s, the newest of its build time and the latest time it trusted): "+
		"status documents and remote-write samples are held until the clock is set", f.lastWall.UTC().Format(time.RFC3339), f.floor.Format(time.RFC3339))
}

// check reads both clocks and moves the floor and the state.
func (f *Floor) check() {
	// Round(0) drops the monotonic reading time.Now carries: the step is
	// the wall times' difference against Mono's.
	read, mono := f.cfg.Clock.Now(), f.cfg.Mono()
	now := read.Round(0)
	f.mu.Lock()
	defer f.mu.Unlock()
	tol := f.cfg.Tolerance
	if f.checked {
		drift := now.Sub(f.lastWall) - (mono - f.lastMono)
		switch {
		case drift < -tol && !f.behind:
			// A correction while tug runs and the clock was sane: the
			// floor follows it down, never below the build time.
			f.floor = f.cfg.Build.UTC()
			if now.After(f.floor) {
				f.floor = now.UTC()
			}
			if f.trusted.After(f.floor) {
				f.trusted = f.floor
			}
			f.cfg.Log.Info("the clock stepped back; the time floor follows it", "by", (-drift).Round(time.Second).String(), "floor", f.floor)
			f.dirty = true
		case drift < -tol || drift > tol:
			f.cfg.Log.Info("the clock stepped", "by", drift.Round(time.Second).String())
		}
	}
	f.checked, f.lastWall, f.lastMono = true, now, mono
	sane := !now.Before(f.floor.Add(-tol))
	switch {
	case !sane && !f.behind:
		f.behind, f.since = true, read
		msg := f.behindMessage()
		f.cfg.Log.Warn("the clock is behind tug's time floor; status documents and remote-write samples are held until it is set",
			"clock", now.UTC(), "floor", f.floor, "file", f.cfg.File)
		if f.cfg.Events != nil {
			f.cfg.Events.NodeEvent("Warning", ReasonBehind, msg)
		}
	case sane && f.behind:
		f.behind, f.since = false, read
		f.cfg.Log.Info("the clock is at or past tug's time floor again; sending what was held", "clock", now.UTC(), "floor", f.floor)
		if f.cfg.Events != nil {
			f.cfg.Events.NodeEvent("Normal", ReasonSane, "the clock reads at least tug's time floor again")
		}
		f.dirty = true
	}
	if !sane {
		return
	}
	if now.After(f.floor) {
		f.floor = now.UTC()
	}
	if now.After(f.trusted) && f.cfg.Synced() {
		f.trusted = now.UTC()
	}
	if f.dirty || mono-f.savedAt >= f.cfg.SaveEvery {
		f.save()
	}
}

// save writes the trusted time (at least the build time) to File when it
// differs from what the file holds. f.mu is held.
func (f *Floor) save() {
	f.savedAt = f.cfg.Mono()
	t := f.trusted
	if b := f.cfg.Build.UTC(); b.After(t) {
		t = b
	}
	if t.Equal(f.saved) && !f.dirty {
		return
	}
	if err := atomicfile.Write(f.cfg.File, []byte(t.Format(time.RFC3339Nano)+"\n"), 0o600); err != nil {
		f.cfg.Log.Warn("cannot write the time floor", "file", f.cfg.File, "err", err)
		return
	}
	f.saved, f.dirty = t, false
}

// kernelSynced reports whether the kernel counts the clock as synchronized
// by NTP (adjtimex's STA_UNSYNC clear); setting the clock by hand
// (settimeofday, date -s) sets the flag until an NTP client clears it.
func kernelSynced() bool {
	var tx unix.Timex
	state, err := unix.Adjtimex(&tx)
	return err == nil && state != unix.TIME_ERROR && tx.Status&unix.STA_UNSYNC == 0
}
