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
// keeps its last good pods), the sources that are not gated (Config.Gated:
// the manifest directory unless asked), and a rollback, which reaches the
// store through its pins and never through a source.
//
// A signed bundle may carry its own windows (pod.SourceFile.Windows);
// they replace the device's for that content.
//
// Holds tells a source whether its content is held (source.Holder): the
// URL and OCI sources checkpoint only content the gate passed on, so that
// a restart starts what was applied, not what waits.
//
// It imports pod, window and clock, and the standard library.
package windowgate

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"tug/internal/clock"
	"tug/internal/pod"
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
	// windows.
	Node string
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
	if len(changed) == 0 || g.updateWindow(changed).Open(g.cfg.Clock.Now()) {
		g.pass(source, st, files)
		return
	}
	st.held, st.heldFiles, st.heldKey = files, changed, key(changed)
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
	st.held, st.heldFiles, st.heldKey, st.logged = nil, nil, "", ""
	present := map[string]bool{}
	for _, f := range files {
		present[f.File] = true
		if f.Err == nil {
			st.applied[f.File] = f
		}
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
	w := g.updateWindow(st.heldFiles)
	attrs := []any{"source", source, "window", w.String()}
	if next := w.Next(g.cfg.Clock.Now()); !next.IsZero() {
		attrs = append(attrs, "opens", next)
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
		if st.held == nil {
			continue
		}
		w := g.updateWindow(st.heldFiles)
		opens := w.Next(now)
		for _, f := range st.heldFiles {
			out = append(out, Wait{Source: source, File: f.File, Opens: opens, Window: w.String(),
				Hash: f.Hash, Version: f.Version, Prefetched: st.prefetched == st.heldKey})
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
		if st.held == nil {
			continue
		}
		w := g.updateWindow(st.heldFiles)
		if w.Open(now) {
			g.pass(source, st, st.held)
			continue
		}
		if next := w.Next(now); !next.IsZero() {
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
