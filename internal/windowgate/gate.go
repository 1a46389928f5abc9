// Package windowgate owns holding a source's new content until the
// device's update window opens. It sits between the sources and the pod
// store as a Sink of both: a snapshot that changes a source's good content
// (a new bundle version, a changed or removed file, a new file) is passed
// on only while the update window is open; until then the store keeps the
// pods it has, and the gate reports the held update and when the window
// opens next. While the download window is open, it pre-pulls the held
// content's images through a Prefetcher, so that the update window is
// spent applying, not downloading.
//
// What is never held: a source's first snapshot (a fresh device, or the
// checkpoint at start, runs what it has at once), a snapshot whose good
// content is the one applied (a return to it, a fetch error: the store
// keeps its last good pods; an error about held content reaches the store
// while the content stays held), the sources that are not gated (Config.Gated:
// the manifest directory unless asked), and a rollback, which reaches the
// store through its pins and never through a source.
//
// A signed bundle may carry its own windows (pod.SourceFile.Windows);
// they replace the device's for that content.
//
// A signed bundle may carry a rollout plan (pod.SourceFile.Rollout,
// package wave): its content is held, as for a window, until the device's
// wave opens and then until its update window is open; its images are
// pulled ahead in the download window meanwhile. A device that no wave
// selects holds it for good (it never applies that version, and pulls
// nothing). A bundle that halts version N is held for good too (the
// device keeps what it runs, and drops a held N), unless it reverts and
// the device runs N: then it passes at once, windows and waves aside, as
// a rollback would. Rollouts reports each source's place in its rollout.
//
// Holds tells a source whether its content is held (source.Holder): the
// URL and OCI sources checkpoint only content the gate passed on, so that
// a restart starts what was applied, not what waits.
//
// It imports pod, window, wave and clock, and the standard library.
package windowgate

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"tug/internal/clock"
	"tug/internal/pod"
	"tug/internal/wave"
	"tug/internal/window"
)

// Sink receives the snapshots the gate passes on; it does not block.
type Sink interface {
	Set(source string, manifests []pod.SourceFile)
}

// Prefetcher pulls the images of pods that are not applied yet, without
// starting anything. It returns when the pulls are done.
type Prefetcher interface {
	Prefetch(ctx context.Context, pods []*pod.Pod) error
}

// Config configures a Gate.
type Config struct {
	Sink Sink
	// Update and Download are the device's windows (already ForNode); the
	// zero Window is always open.
	Update, Download window.Window
	// Node is the device's name, for the start offset of a bundle's own
	// windows and its bucket in a rollout plan.
	Node string
	// Labels are the node's labels, which a rollout plan's waves select
	// on.
	Labels map[string]string
	// Gated reports whether a source's updates are held; nil: every source.
	Gated func(source string) bool
	// Prefetch pulls held content's images in the download window; nil:
	// none.
	Prefetch Prefetcher
	// Clock tells the time the windows are read at; nil: the system clock.
	Clock clock.Clock
	// Log receives the gate's logs. Default: discard.
	Log *slog.Logger
}

// Gate is the Sink between the sources and the store. Set and Waits are
// safe for concurrent use.
type Gate struct {
	cfg  Config
	wake chan struct{}

	mu      sync.Mutex
	sources map[string]*state
}

// state is one source's: what is applied and what is held.
type state struct {
	started bool
	// applied is the good content passed on, by file.
	applied map[string]pod.SourceFile
	// held is the latest snapshot, when it changes the applied content.
	held []pod.SourceFile
	// heldFiles are the files of held whose content waits.
	heldFiles []pod.SourceFile
	// heldKey names the held content (its files' hashes), for the
	// prefetch done and the log.
	heldKey    string
	prefetched string // the heldKey whose images were pulled
	logged     string // the heldKey last logged as waiting
	// heldRollout is the held content's plan or halt; passed the applied
	// content's, and reverted whether it passed as a halt's revert.
	heldRollout, passed rollout
	reverted            bool
}

// rollout is what a content's rollout plan or halt says for this device.
type rollout struct {
	version uint64
	plan    *wave.Plan
	assign  wave.Assignment
	halt    *wave.Halt
}

// never reports whether held content with r never passes by itself: a
// halt, or a plan no wave of which selects the device.
func (r rollout) never() bool {
	return r.halt != nil || (r.plan != nil && r.assign.Index == 0)
}

// rolloutOf reads the plan or halt of files (the first file that has one)
// and places the device in the plan.
func (g *Gate) rolloutOf(files []pod.SourceFile) rollout {
	for _, f := range files {
		if f.Rollout == (pod.Rollout{}) {
			continue
		}
		r := rollout{version: f.Version}
		if f.Rollout.Plan != "" {
			var p wave.Plan
			if json.Unmarshal([]byte(f.Rollout.Plan), &p) == nil && p.Validate() == nil {
				r.plan, r.assign = &p, p.Choose(g.cfg.Node, g.cfg.Labels, f.Version)
			}
		}
		if f.Rollout.Halt != "" {
			var h wave.Halt
			if json.Unmarshal([]byte(f.Rollout.Halt), &h) == nil {
				r.halt = &h
			}
		}
		return r
	}
	return rollout{}
}

// appliedVersion is the highest bundle version of the applied content.
func (st *state) appliedVersion() uint64 {
	var v uint64
	for _, f := range st.applied {
		v = max(v, f.Version)
	}
	return v
}

// Wait is one file's update held for its window.
type Wait struct {
	Source, File string
	// Opens is the window's next opening; zero when it never opens.
	Opens time.Time
	// Window is the window as written.
	Window string
	Hash   string
	// Version is the held signed bundle's version (0 for a file).
	Version uint64
	// Prefetched reports whether the held content's images are pulled.
	Prefetched bool
	// WaveIndex (from 1) and Wave name the device's wave in the held
	// bundle's rollout plan and WaveOpens when it opens; 0, "" and zero
	// for content without a plan.
	WaveIndex int
	Wave      string
	WaveOpens time.Time
}

// Rollout states (Rollout.State).
const (
	StateIdle       = "idle"
	StateWaiting    = "waiting"
	StateApplied    = "applied"
	StateHalted     = "halted"
	StateRolledBack = "rolled_back"
)

// Rollout is a source's place in a bundle rollout.
type Rollout struct {
	Source, File string
	// State is StateIdle (no plan concerns the device, or no wave selects
	// it), StateWaiting (held for its wave or its window), StateApplied
	// (the applied content came with a plan) or StateHalted.
	State string
	// Version is the bundle version the state is about: the held one,
	// the applied one, or the halted one.
	Version uint64
	// WaveIndex, Wave and WaveOpens are the device's wave in that
	// version's plan (0, "", zero without one).
	WaveIndex int
	Wave      string
	WaveOpens time.Time
	// Opens is when held content passes next (the wave's opening, then
	// the update window's); zero when it never does.
	Opens time.Time
	// Reason says why, in a sentence.
	Reason string
}

// New returns a gate that passes on to cfg.Sink. Held updates are passed
// on by Run.
func New(cfg Config) *Gate {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Gate{cfg: cfg, wake: make(chan struct{}, 1), sources: map[string]*state{}}
}

// Set takes a source's snapshot: it passes it on, or passes on the applied
// content and holds the snapshot until the update window opens.
func (g *Gate) Set(source string, files []pod.SourceFile) {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.sources[source]
	if st == nil {
		st = &state{applied: map[string]pod.SourceFile{}}
		g.sources[source] = st
	}
	if !st.started || (g.cfg.Gated != nil && !g.cfg.Gated(source)) {
		g.pass(source, st, files)
		return
	}
	keep, changed := split(st.applied, files)
	if len(changed) == 0 && st.held != nil && failsHeld(files, st.heldFiles) {
		// The source fails with the held content as its last accepted:
		// the store gets the error (it keeps its pods), the content stays
		// held (and not checkpointed: a restart must not apply it).
		g.cfg.Sink.Set(source, files)
		return
	}
	if len(changed) == 0 {
		g.pass(source, st, files)
		return
	}
	ro := g.rolloutOf(changed)
	if h := ro.halt; h != nil && h.Revert && st.appliedVersion() == h.Version {
		g.cfg.Log.Info("rollout halted with revert: applying the halting bundle's content", "source", source,
			"halted", h.Version, "version", ro.version)
		st.held = nil
		g.pass(source, st, files)
		st.reverted = true
		return
	}
	if g.mayPass(ro, changed, g.cfg.Clock.Now()) {
		g.pass(source, st, files)
		return
	}
	st.held, st.heldFiles, st.heldKey, st.heldRollout = files, changed, key(changed), ro
	g.cfg.Sink.Set(source, keep)
	g.logWait(source, st)
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// pass passes files on and makes them the applied content.
func (g *Gate) pass(source string, st *state, files []pod.SourceFile) {
	if st.held != nil && st.started {
		g.cfg.Log.Info("update window open, applying the held update", "source", source)
	}
	st.started = true
	st.held, st.heldFiles, st.heldKey, st.logged, st.heldRollout = nil, nil, "", "", rollout{}
	present := map[string]bool{}
	var good []pod.SourceFile
	for _, f := range files {
		present[f.File] = true
		if f.Err == nil {
			st.applied[f.File] = f
			good = append(good, f)
		}
	}
	if len(good) > 0 || len(files) == 0 {
		st.passed, st.reverted = g.rolloutOf(good), false
	}
	for name := range st.applied {
		if !present[name] {
			delete(st.applied, name)
		}
	}
	g.cfg.Sink.Set(source, files)
}

// split returns what of files can pass while the window is closed (each
// file whose good content is the applied one, each failing file, and the
// applied content of the others) and the files whose content changes
// (changed, new, or removed: then the applied file).
func split(applied map[string]pod.SourceFile, files []pod.SourceFile) (keep, changed []pod.SourceFile) {
	present := map[string]bool{}
	for _, f := range files {
		present[f.File] = true
		a, ok := applied[f.File]
		switch {
		case f.Err != nil || (ok && a.Hash == f.Hash):
			keep = append(keep, f)
		case ok:
			keep = append(keep, a)
			changed = append(changed, f)
		default:
			changed = append(changed, f)
		}
	}
	for name, a := range applied {
		if !present[name] {
			keep = append(keep, a)
			removed := a
			removed.Pods, removed.Objects, removed.Hash = nil, nil, ""
			changed = append(changed, removed)
		}
	}
	slices.SortFunc(changed, func(a, b pod.SourceFile) int { return cmp.Compare(a.File, b.File) })
	return keep, changed
}

// mayPass reports whether content files with rollout r may be applied at
// now: the device's wave is open (no plan: at once) and so is the update
// window.
func (g *Gate) mayPass(r rollout, files []pod.SourceFile, now time.Time) bool {
	if r.never() || (r.plan != nil && now.Before(r.assign.Opens)) {
		return false
	}
	return g.updateWindow(files).Open(now)
}

// opens is when held content may pass next: the wave's opening, then the
// update window's next opening; zero when never.
func (g *Gate) opens(st *state, now time.Time) time.Time {
	r := st.heldRollout
	if r.never() {
		return time.Time{}
	}
	from := now
	if r.plan != nil && r.assign.Opens.After(now) {
		from = r.assign.Opens
	}
	return g.updateWindow(st.heldFiles).OpenFrom(from)
}

// failsHeld reports whether files are a source's failure report about
// the held content: each failing file has the hash of a held file.
func failsHeld(files, held []pod.SourceFile) bool {
	failing := false
	for _, f := range files {
		if f.Err == nil {
			continue
		}
		failing = true
		if !slices.ContainsFunc(held, func(h pod.SourceFile) bool { return h.File == f.File && h.Hash == f.Hash }) {
			return false
		}
	}
	return failing
}

func key(files []pod.SourceFile) string {
	var k string
	for _, f := range files {
		k += f.File + "=" + f.Hash + ";"
	}
	return k
}

// updateWindow is the window of held content: a bundle's own, else the
// device's.
func (g *Gate) updateWindow(files []pod.SourceFile) window.Window {
	return g.windowOf(files, g.cfg.Update, func(w pod.Windows) string { return w.Update })
}

func (g *Gate) downloadWindow(files []pod.SourceFile) window.Window {
	return g.windowOf(files, g.cfg.Download, func(w pod.Windows) string { return w.Download })
}

func (g *Gate) windowOf(files []pod.SourceFile, device window.Window, pick func(pod.Windows) string) window.Window {
	for _, f := range files {
		if s := pick(f.Windows); s != "" {
			if w, err := window.Parse(s); err == nil {
				return w.ForNode(g.cfg.Node)
			}
		}
	}
	return device
}

func (g *Gate) logWait(source string, st *state) {
	if st.logged == st.heldKey {
		return
	}
	st.logged = st.heldKey
	r := st.heldRollout
	switch {
	case r.halt != nil:
		g.cfg.Log.Info("rollout halted: keeping the applied content", "source", source, "halted", r.halt.Version,
			"version", r.version, "applied", st.appliedVersion())
		return
	case r.plan != nil && r.assign.Index == 0:
		g.cfg.Log.Info("no wave of the bundle's rollout plan selects this node: keeping the applied content", "source", source,
			"version", r.version, "bucket", r.assign.Bucket)
		return
	}
	w := g.updateWindow(st.heldFiles)
	attrs := []any{"source", source, "window", w.String()}
	if next := g.opens(st, g.cfg.Clock.Now()); !next.IsZero() {
		attrs = append(attrs, "opens", next)
	}
	if r.plan != nil {
		attrs = append(attrs, "version", r.version, "wave", r.assign.Index, "wave_name", r.assign.Name, "wave_opens", r.assign.Opens)
		g.cfg.Log.Info("update waiting for its wave", attrs...)
		return
	}
	g.cfg.Log.Info("update waiting for the window", attrs...)
}

// Holds reports whether the gate holds content of source whose hash is
// hash (source.Holder: the source then does not checkpoint it yet).
func (g *Gate) Holds(source, hash string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.sources[source]
	if st == nil {
		return false
	}
	return slices.ContainsFunc(st.heldFiles, func(f pod.SourceFile) bool { return f.Hash == hash })
}

// Waits returns the updates held, one per file, sorted by source and file.
func (g *Gate) Waits() []Wait {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.cfg.Clock.Now()
	var out []Wait
	for source, st := range g.sources {
		if st.held == nil || st.heldRollout.never() {
			continue
		}
		w := g.updateWindow(st.heldFiles)
		opens := g.opens(st, now)
		r := st.heldRollout
		for _, f := range st.heldFiles {
			out = append(out, Wait{Source: source, File: f.File, Opens: opens, Window: w.String(),
				Hash: f.Hash, Version: f.Version, Prefetched: st.prefetched == st.heldKey,
				WaveIndex: r.assign.Index, Wave: r.assign.Name, WaveOpens: r.assign.Opens})
		}
	}
	slices.SortFunc(out, func(a, b Wait) int { return cmp.Or(cmp.Compare(a.Source, b.Source), cmp.Compare(a.File, b.File)) })
	return out
}

// maxSleep bounds a wait for a window, so that a clock that jumps (set at
// boot, or by NTP) is read again soon.
const maxSleep = time.Minute

// Run passes on each held update when its update window opens, and
// pre-pulls held content's images while its download window is open.
// It returns when ctx is done.
func (g *Gate) Run(ctx context.Context) error {
	for {
		sleep := g.step(ctx)
		t := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-g.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// step passes on what may pass and pre-pulls what may be pulled; it
// returns how long to wait for the next opening.
func (g *Gate) step(ctx context.Context) time.Duration {
	type fetch struct {
		source, key string
		pods        []*pod.Pod
	}
	var fetches []fetch
	sleep := maxSleep
	g.mu.Lock()
	now := g.cfg.Clock.Now()
	for source, st := range g.sources {
		if st.held == nil || st.heldRollout.never() {
			continue
		}
		if g.mayPass(st.heldRollout, st.heldFiles, now) {
			g.pass(source, st, st.held)
			continue
		}
		if next := g.opens(st, now); !next.IsZero() {
			sleep = min(sleep, max(next.Sub(now), 10*time.Millisecond))
		}
		if g.cfg.Prefetch == nil || st.prefetched == st.heldKey {
			continue
		}
		if d := g.downloadWindow(st.heldFiles); d.Open(now) {
			var pods []*pod.Pod
			for _, f := range st.heldFiles {
				pods = append(pods, f.Pods...)
			}
			fetches = append(fetches, fetch{source, st.heldKey, pods})
		} else if next := d.Next(now); !next.IsZero() {
			sleep = min(sleep, max(next.Sub(now), 10*time.Millisecond))
		}
	}
	g.mu.Unlock()
	for _, f := range fetches {
		if len(f.pods) > 0 {
			if err := g.cfg.Prefetch.Prefetch(ctx, f.pods); err != nil {
				g.cfg.Log.Warn("cannot pull the held update's images ahead, trying again", "source", f.source, "err", err)
				continue
			}
			g.cfg.Log.Info("held update's images pulled ahead", "source", f.source, "pods", len(f.pods))
		}
		g.mu.Lock()
		if st := g.sources[f.source]; st != nil && st.heldKey == f.key {
			st.prefetched = f.key
		}
		g.mu.Unlock()
	}
	return sleep
}

// Rollouts returns each source's place in a bundle rollout, sorted by
// source; a source with neither a plan nor a halt in its held or applied
// content is left out (it is idle).
func (g *Gate) Rollouts() []Rollout {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.cfg.Clock.Now()
	var out []Rollout
	for source, st := range g.sources {
		if r, ok := g.rolloutState(source, st, now); ok {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b Rollout) int { return cmp.Compare(a.Source, b.Source) })
	return out
}

// rolloutState is a source's Rollout; false when it is idle with nothing
// to say.
func (g *Gate) rolloutState(source string, st *state, now time.Time) (Rollout, bool) {
	applied := st.appliedVersion()
	out := Rollout{Source: source}
	if st.held != nil {
		r := st.heldRollout
		if len(st.heldFiles) > 0 {
			out.File = st.heldFiles[0].File
		}
		out.Version, out.WaveIndex, out.Wave, out.WaveOpens = r.version, r.assign.Index, r.assign.Name, r.assign.Opens
		switch {
		case r.halt != nil:
			out.State, out.Version, out.WaveIndex, out.Wave, out.WaveOpens = StateHalted, r.halt.Version, 0, "", time.Time{}
			if applied == r.halt.Version {
				out.Reason = fmt.Sprintf("version %d halted by version %d after it was applied here: keeping it", r.halt.Version, r.version)
			} else {
				out.Reason = fmt.Sprintf("version %d halted by version %d before it was applied here: keeping version %d", r.halt.Version, r.version, applied)
			}
		case r.plan != nil && r.assign.Index == 0:
			out.State = StateIdle
			out.Reason = fmt.Sprintf("no wave of version %d selects this node (bucket %d of %d): keeping version %d", r.version, r.assign.Bucket, wave.Buckets, applied)
		default:
			out.State, out.Opens = StateWaiting, g.opens(st, now)
			switch {
			case r.plan != nil && r.assign.Opens.After(now):
				out.Reason = fmt.Sprintf("version %d waiting for wave %d %q at %s", r.version, r.assign.Index, r.assign.Name, r.assign.Opens.UTC().Format(time.RFC3339))
			case out.Opens.IsZero():
				out.Reason = fmt.Sprintf("version %d waiting for an update window that never opens", r.version)
			default:
				out.Reason = fmt.Sprintf("version %d waiting for the update window at %s", r.version, out.Opens.UTC().Format(time.RFC3339))
			}
		}
		return out, true
	}
	r := st.passed
	for _, f := range st.applied {
		if f.Version == applied {
			out.File = f.File
		}
	}
	switch {
	case r.halt != nil:
		out.State, out.Version = StateHalted, r.halt.Version
		out.Reason = fmt.Sprintf("running version %d, which halts version %d", r.version, r.halt.Version)
		if st.reverted {
			out.Reason = fmt.Sprintf("version %d halted with revert by version %d: running version %d's content", r.halt.Version, r.version, r.version)
		}
	case r.plan != nil && r.assign.Index > 0:
		out.State, out.Version, out.WaveIndex, out.Wave, out.WaveOpens = StateApplied, r.version, r.assign.Index, r.assign.Name, r.assign.Opens
		out.Reason = fmt.Sprintf("version %d applied in wave %d %q", r.version, r.assign.Index, r.assign.Name)
	default:
		return Rollout{}, false
	}
	return out, true
}
