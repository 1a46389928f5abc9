package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"tug/internal/manifest"
	"tug/internal/pod"
)

// DirConfig configures a Dir. The zero value of each field but Path means
// its default.
type DirConfig struct {
	// Path is the manifest directory (--pod-manifest-path). It may be
	// missing: that is an empty set of files until it appears.
	Path string
	// Hostname is appended to each pod name ("<name>-<hostname>").
	Hostname string
	// Rescan is the period of the full rescan that catches what inotify
	// missed (--file-check-frequency). Default 20s.
	Rescan time.Duration
	// MaxFileSize is the largest manifest file read; a larger one is
	// reported with ErrTooLarge. Default DefaultMaxFileSize (10 MiB).
	MaxFileSize int64
	// MaxTotalSize bounds the bytes of all the directory's manifest files
	// together. Files are counted in name order; those past the bound are
	// reported with ErrTooLarge (their last good pods, if any, stay).
	// Default DefaultMaxTotalSize (32 MiB).
	MaxTotalSize int64
	// Log receives the source's logs. Default: discard.
	Log *slog.Logger
}

// The directory source's size limits (tug validate applies the same file
// limit).
const (
	// DefaultMaxFileSize is the default DirConfig.MaxFileSize.
	DefaultMaxFileSize = 10 << 20
	// DefaultMaxTotalSize is the default DirConfig.MaxTotalSize.
	DefaultMaxTotalSize = 32 << 20
)

const (
	defaultRescan = 20 * time.Second
	// coalesce is how long a scan waits after the first event of a burst.
	coalesce = 5 * time.Millisecond
	// quietPeriod is how long a file inotify cannot vouch for must keep the
	// same size, mtime and inode before it is read.
	quietPeriod = time.Second
	// firstReportMaxWait bounds how long the first report waits for files
	// that are not quiet yet (it then leaves them out).
	firstReportMaxWait = 3 * quietPeriod
)

// Dir is the drop-in directory source. Each report to the sink is the full
// snapshot of the directory: one pod.SourceFile per candidate file (*.yaml,
// *.yml, *.json; not dotfiles, editor leftovers such as *~, *.swp, #*#, or
// subdirectories), broken files included with their error.
//
// A file is read only once it is complete: at once after IN_CLOSE_WRITE or
// IN_MOVED_TO (an atomic rename); never while inotify has seen it modified
// and not yet closed (its previous version stays in the snapshot, or it is
// left out if it is new). A change inotify did not vouch for (seen only by
// the rescan, a file there before the watch started, one created by
// link(2), anything after a queue overflow, or everything when inotify is
// unavailable) is read once its size, mtime and inode have been still for a
// second, or its mtime is a second old.
//
// Blind spots: a file written in place through a hard link in another
// directory changes without an event here; it is read on the next rescan
// once it looks quiet, which a writer that pauses for over a second defeats.
// The directory being unreadable (not missing) is logged and not reported,
// so no pod is removed because of it.
type Dir struct {
	cfg       DirConfig
	path      string
	name      string
	sink      Sink
	log       *slog.Logger
	quiet     time.Duration
	noInotify bool // for tests: behave as if inotify were unavailable

	// State owned by Run.
	w          *watcher
	dirWd      int32
	parentWd   int32
	files      map[string]*fileEntry // by base name: what was last read
	writing    map[string]bool       // IN_MODIFY seen, IN_CLOSE_WRITE not yet
	unsure     map[string]bool       // inotify cannot vouch that the file is complete
	dirty      map[string]bool       // an event says the file is complete: read it again
	seen       map[string]observation
	recheckAll bool              // every file is unsure at the next scan
	fileErrs   map[string]string // the error last logged per file
	dirState   string            // the directory state last logged (see setDirState)
	watchErr   string            // the watch error last logged
	started    time.Time
	reported   bool
	lastSig    string
}

type fileEntry struct {
	key statKey
	m   pod.SourceFile
}

type observation struct {
	key statKey
	at  time.Time
}

// statKey identifies a version of a file without reading it.
type statKey struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64
}

func keyOf(fi fs.FileInfo) statKey {
	k := statKey{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		k.dev, k.ino = uint64(st.Dev), st.Ino
		k.ctime = st.Ctim.Nano()
	}
	return k
}

// NewDir returns a directory source that reports to sink. Nothing happens
// until Run.
func NewDir(cfg DirConfig, sink Sink) *Dir {
	if cfg.Rescan <= 0 {
		cfg.Rescan = defaultRescan
	}
	if cfg.MaxFileSize <= 0 {
		cfg.MaxFileSize = DefaultMaxFileSize
	}
	if cfg.MaxTotalSize <= 0 {
		cfg.MaxTotalSize = DefaultMaxTotalSize
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	path, err := filepath.Abs(cfg.Path)
	if err != nil {
		path = filepath.Clean(cfg.Path)
	}
	d := &Dir{cfg: cfg, path: path, name: "file:" + path, sink: sink, quiet: quietPeriod}
	d.log = cfg.Log.With("source", d.name)
	return d
}

// Name returns "file:" and the absolute directory path. It is also the
// Origin.Source of the manifests it reports.
func (d *Dir) Name() string { return d.name }

// Run reports the directory once at start (even when it is missing or
// empty, so the source counts as ready; a file written in the last second
// holds this first report back for up to a few seconds, since leaving it
// out would remove its pods), then again whenever a file changes,
// until ctx is done; it then returns nil. Run must not be called again
// before it returned. It starts one goroutine, reading inotify, which ends
// before Run returns.
func (d *Dir) Run(ctx context.Context) error {
	d.dirWd, d.parentWd = -1, -1
	d.files, d.writing, d.unsure, d.dirty = map[string]*fileEntry{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	d.seen, d.fileErrs = map[string]observation{}, map[string]string{}
	d.recheckAll, d.reported, d.lastSig, d.dirState, d.watchErr = true, false, "", "", ""
	d.started = time.Now()

	var events chan []event
	if !d.noInotify {
		w, err := newWatcher()
		if err != nil {
			d.log.Warn("inotify unavailable, relying on rescan", "err", err)
		} else {
			d.w = w
			events = make(chan []event)
			var wg sync.WaitGroup
			wg.Go(func() {
				defer close(events)
				if err := w.read(ctx.Done(), events); err != nil && ctx.Err() == nil {
					d.log.Warn("inotify stopped, relying on rescan", "err", err)
				}
			})
			defer func() {
				w.close()
				wg.Wait()
				d.w = nil
			}()
		}
	}

	timer := time.NewTimer(0)
	var due time.Time // when timer fires; zero when it is not armed
	schedule := func(after time.Duration) {
		if at := time.Now().Add(after); due.IsZero() || at.Before(due) {
			due = at
			timer.Reset(after)
		}
	}
	rescan := time.NewTicker(d.cfg.Rescan)
	defer rescan.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case evs, ok := <-events:
			if !ok {
				events = nil
				d.w, d.dirWd, d.parentWd = nil, -1, -1
				d.lostTrack()
				schedule(0)
			} else if d.handle(evs) {
				schedule(coalesce)
			}
			continue
		case <-timer.C:
			due = time.Time{}
		case <-rescan.C:
		}
		if d.scanAndReport(ctx) {
			schedule(d.quiet / 4)
		}
	}
}

// handle records what a batch of events says about the files, and reports
// whether a scan is due.
func (d *Dir) handle(evs []event) bool {
	scan := false
	for _, ev := range evs {
		switch {
		case ev.mask&unix.IN_Q_OVERFLOW != 0:
			d.log.Warn("inotify queue overflowed, checking every file")
			d.lostTrack()
			scan = true
		case ev.wd == d.dirWd && ev.name == "":
			if ev.mask&unix.IN_MOVE_SELF != 0 {
				d.w.remove(d.dirWd) // it watches another path now
			}
			if ev.mask&(unix.IN_IGNORED|unix.IN_MOVE_SELF) != 0 {
				d.dirWd = -1
				d.lostTrack()
			}
			scan = true
		case ev.wd == d.dirWd:
			scan = d.fileEvent(ev) || scan
		case ev.wd == d.parentWd && ev.name == "":
			if ev.mask&unix.IN_MOVE_SELF != 0 {
				d.w.remove(d.parentWd)
			}
			if ev.mask&(unix.IN_IGNORED|unix.IN_MOVE_SELF) != 0 {
				d.parentWd = -1
			}
			scan = true
		case ev.wd == d.parentWd:
			scan = scan || ev.name == filepath.Base(d.path)
		}
	}
	return scan
}

// fileEvent handles an event on an entry of the directory.
func (d *Dir) fileEvent(ev event) bool {
	name := ev.name
	if !IsManifestName(name) || ev.mask&unix.IN_ISDIR != 0 {
		// Only a change of names matters (e.g. a symlink target swapped).
		return ev.mask&(unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_MOVED_FROM|unix.IN_DELETE) != 0
	}
	switch {
	case ev.mask&unix.IN_MODIFY != 0:
		d.writing[name] = true
		return false
	case ev.mask&(unix.IN_CLOSE_WRITE|unix.IN_MOVED_TO) != 0:
		delete(d.writing, name)
		delete(d.unsure, name)
		d.dirty[name] = true
	case ev.mask&unix.IN_CREATE != 0:
		d.unsure[name] = true // open(O_CREAT) is followed by IN_CLOSE_WRITE; link(2) is not
	case ev.mask&(unix.IN_DELETE|unix.IN_MOVED_FROM) != 0:
		delete(d.writing, name)
		delete(d.unsure, name)
		delete(d.dirty, name)
	case ev.mask&unix.IN_ATTRIB != 0:
		if !d.writing[name] {
			d.dirty[name] = true
		}
	}
	return true
}

// lostTrack is called when events may have been missed: no file is known
// to be complete any more.
func (d *Dir) lostTrack() {
	for name := range d.writing {
		d.unsure[name] = true
	}
	clear(d.writing)
	d.recheckAll = true
}

// ensureWatches (re)adds the parent and directory watches that are missing.
func (d *Dir) ensureWatches() {
	if d.w == nil {
		return
	}
	if parent := filepath.Dir(d.path); d.parentWd < 0 && parent != d.path {
		if wd, err := d.w.add(parent, parentMask); err == nil {
			d.parentWd = wd
		}
	}
	if d.dirWd < 0 {
		wd, err := d.w.add(d.path, dirMask)
		if err != nil {
			if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) {
				d.setWatchErr(err)
			}
			return
		}
		d.dirWd = wd
		d.recheckAll = true // written before the watch: unknown
		d.setWatchErr(nil)
	}
}

// scanAndReport scans the directory and sends the snapshot if it changed
// (or was never sent). It reports whether a file waits for a quiet period.
func (d *Dir) scanAndReport(ctx context.Context) (wait bool) {
	d.ensureWatches()
	snap, wait, err := d.scan(time.Now())
	if err != nil {
		d.setDirState(err.Error(), err)
		return wait
	}
	for _, m := range snap {
		d.logFile(m)
	}
	if !d.reported && wait && time.Since(d.started) < firstReportMaxWait {
		return wait // the first report must hold every file: one left out would lose its pods
	}
	if sig := signature(snap); !d.reported || sig != d.lastSig {
		d.reported, d.lastSig = true, sig
		d.sink.Set(d.name, snap)
	}
	return wait
}

// scan lists the directory and returns its snapshot, and whether some file
// waits for a quiet period. A missing directory is an empty snapshot; an
// unreadable one is an error.
func (d *Dir) scan(now time.Time) (snap []pod.SourceFile, wait bool, err error) {
	entries, err := os.ReadDir(d.path)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR):
		d.setDirState(dirMissing, nil)
		entries = nil
	case err != nil:
		return nil, false, fmt.Errorf("read manifest directory: %w", err)
	default:
		d.setDirState("", nil)
	}

	watching := d.dirWd >= 0
	present := make(map[string]bool, len(entries))
	for _, e := range entries {
		name := e.Name()
		if !IsManifestName(name) || e.IsDir() {
			continue
		}
		present[name] = true
		if d.recheckAll {
			d.unsure[name] = true
		}
		prev := d.files[name]
		keep := func() {
			if prev != nil {
				snap = append(snap, prev.m)
			}
		}
		if watching && d.writing[name] {
			keep() // IN_CLOSE_WRITE will come
			continue
		}
		path := filepath.Join(d.path, name)
		fi, err := os.Stat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			delete(present, name) // gone, or a dangling symlink
			continue
		case err != nil:
			d.files[name] = &fileEntry{m: pod.SourceFile{Origin: d.origin(path), Err: err}}
			snap = append(snap, d.files[name].m)
			continue
		case !fi.Mode().IsRegular():
			delete(present, name)
			continue
		}
		key := keyOf(fi)
		if prev != nil && prev.key == key && !d.dirty[name] {
			keep()
			continue
		}
		if (!watching || d.unsure[name] || !d.dirty[name]) && !d.isQuiet(name, key, now) {
			wait = true
			keep()
			continue
		}
		d.files[name] = d.read(path, key, prev)
		snap = append(snap, d.files[name].m)
		delete(d.dirty, name)
		delete(d.unsure, name)
		delete(d.seen, name)
	}
	d.recheckAll = false
	d.capTotal(snap)
	for _, m := range []map[string]bool{d.writing, d.unsure, d.dirty} {
		for name := range m {
			if !present[name] {
				delete(m, name)
			}
		}
	}
	for name := range d.files {
		if !present[name] {
			delete(d.files, name)
			delete(d.fileErrs, filepath.Join(d.path, name))
		}
	}
	for name := range d.seen {
		if !present[name] {
			delete(d.seen, name)
		}
	}
	return snap, wait, nil
}

// capTotal turns the files of snap (in name order) that take the
// directory past MaxTotalSize into errors: their pods are not applied.
func (d *Dir) capTotal(snap []pod.SourceFile) {
	var total int64
	for i := range snap {
		e := d.files[filepath.Base(snap[i].File)]
		if e == nil {
			continue
		}
		total += e.key.size
		if total > d.cfg.MaxTotalSize {
			snap[i].Pods, snap[i].Objects = nil, nil
			snap[i].Err = fmt.Errorf("%s: the manifest files of %s take %d bytes up to this one, limit %d in all: %w",
				snap[i].File, d.path, total, d.cfg.MaxTotalSize, ErrTooLarge)
		}
	}
}

// isQuiet reports whether a file inotify cannot vouch for looks complete:
// its mtime is a quiet period old, or its stat has not changed for one.
func (d *Dir) isQuiet(name string, key statKey, now time.Time) bool {
	if now.Sub(time.Unix(0, key.mtime)) >= d.quiet {
		return true
	}
	o, ok := d.seen[name]
	if !ok || o.key != key {
		d.seen[name] = observation{key, now}
		return false
	}
	return now.Sub(o.at) >= d.quiet
}

// read reads and parses one file. key is its stat before opening, kept if
// the open fails. The parse result of prev is reused when the bytes are the
// same.
func (d *Dir) read(path string, key statKey, prev *fileEntry) *fileEntry {
	e := &fileEntry{key: key, m: pod.SourceFile{Origin: d.origin(path)}}
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0) // a FIFO swapped in must not block us
	if err != nil {
		e.m.Err = err // *fs.PathError: names the file
		return e
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		e.m.Err = err
		return e
	}
	e.key, e.m.ModTime = keyOf(fi), fi.ModTime()
	if !fi.Mode().IsRegular() {
		e.m.Err = fmt.Errorf("%s: not a regular file", path)
		return e
	}
	limit := d.cfg.MaxFileSize
	if fi.Size() > limit {
		e.m.Err = fmt.Errorf("%s: %d bytes, limit %d: %w", path, fi.Size(), limit, ErrTooLarge)
		return e
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		e.m.Err = fmt.Errorf("read %s: %w", path, err)
		return e
	}
	if int64(len(data)) > limit {
		e.m.Err = fmt.Errorf("%s: over %d bytes: %w", path, limit, ErrTooLarge)
		return e
	}
	sum := sha256.Sum256(data)
	e.m.Hash = hex.EncodeToString(sum[:])
	if prev != nil && prev.m.Hash == e.m.Hash {
		e.m.Pods, e.m.Objects, e.m.Err = prev.m.Pods, prev.m.Objects, prev.m.Err
		return e
	}
	var parsed manifest.Parsed
	parsed, e.m.Err = manifest.ParseFile(data, manifest.ParseOptions{Origin: e.m.Origin, Hostname: d.cfg.Hostname,
		// Parsed again only when the file changes: logged once per version.
		Warn: func(w *pod.FieldError) { d.log.Warn("manifest: accepted, ignored on a node", "file", path, "err", w) }})
	e.m.Pods, e.m.Objects = parsed.Pods, parsed.Objects
	for _, o := range parsed.Objects {
		for _, w := range o.Warnings { // once per content: a file is parsed when it changes
			d.log.Warn(w, "file", path)
		}
	}
	if e.m.Err != nil {
		e.m.Pods, e.m.Objects = nil, nil
		var fe *pod.FieldError
		if !errors.As(e.m.Err, &fe) {
			e.m.Err = fmt.Errorf("%s: %w", path, e.m.Err)
		}
	}
	return e
}

func (d *Dir) origin(path string) pod.Origin { return pod.Origin{Source: d.name, File: path} }

// logFile logs a file's error when it changes.
func (d *Dir) logFile(m pod.SourceFile) {
	text := ""
	if m.Err != nil {
		text = m.Err.Error()
	}
	old, known := d.fileErrs[m.File]
	d.fileErrs[m.File] = text
	switch {
	case text == old:
	case text != "":
		d.log.Error("manifest file failing, keeping its last good pods", "file", m.File, "err", m.Err)
	case known:
		d.log.Info("manifest file ok again", "file", m.File)
	}
}

const dirMissing = "missing"

// setDirState logs the directory's state when it changes: "" (ok),
// dirMissing, or the text of err.
func (d *Dir) setDirState(state string, err error) {
	if state == d.dirState {
		return
	}
	switch {
	case err != nil:
		d.log.Error("manifest directory unreadable, not reporting", "err", err)
	case state == dirMissing:
		d.log.Info("manifest directory missing, reporting no files")
	case d.dirState != "":
		d.log.Info("manifest directory ok")
	}
	d.dirState = state
}

// setWatchErr logs a failure to watch the directory when it changes.
func (d *Dir) setWatchErr(err error) {
	text := ""
	if err != nil {
		text = err.Error()
	}
	if text != d.watchErr && err != nil {
		d.log.Warn("cannot watch manifest directory, relying on rescan", "err", err)
	}
	d.watchErr = text
}

// signature summarises a snapshot: equal signatures, nothing to report.
func signature(snap []pod.SourceFile) string {
	var b strings.Builder
	for _, m := range snap {
		b.WriteString(m.File)
		b.WriteByte(0)
		b.WriteString(m.Hash)
		b.WriteByte(0)
		if m.Err != nil {
			b.WriteString(m.Err.Error())
		}
		b.WriteByte(0)
	}
	return b.String()
}

// IsManifestName reports whether a directory entry name may hold manifests:
// *.yaml, *.yml or *.json, and not a dotfile or editor leftover (*~, #*#,
// .#*; *.swp, *.swx, *.bak and *.tmp fail the suffix test anyway).
func IsManifestName(name string) bool {
	if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "#") || strings.HasSuffix(name, "~") {
		return false
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}
