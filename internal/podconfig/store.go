package podconfig

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"time"

	"tug/internal/clock"
	"tug/internal/pod"
)

// Op is the kind of a Change.
type Op int

// The changes a snapshot can cause, in the order Apply returns them: first
// every Remove, then every Update, then every Add.
const (
	Add Op = iota + 1
	Update
	Remove
)

// String returns "ADD", "UPDATE" or "REMOVE".
func (o Op) String() string {
	switch o {
	case Add:
		return "ADD"
	case Update:
		return "UPDATE"
	case Remove:
		return "REMOVE"
	}
	return "Op(" + strconv.Itoa(int(o)) + ")"
}

// Change is one change to the desired pod set. For Add and Update, Pod is
// the new desired pod; for Remove, it is the last pod that was applied. Pods
// are shared, read-only values: the receiver must not modify them.
type Change struct {
	Op  Op
	Pod *pod.Pod
}

// FileState is what the store knows about one file (or URL) of one source.
type FileState struct {
	Origin pod.Origin
	// Err is the file's current problem: its newest content does not read or
	// parse (then its last good pods, if any, stay applied), and/or some of
	// its pods are defined by another file (*DuplicateError). Nil when fine.
	Err error
	// UIDs are the applied pods that come from this file, sorted.
	UIDs []string
	// AppliedHash is the hash of the content whose pods are applied (the
	// last good content); "" if the file was never good.
	AppliedHash string
	// Hash is the hash of the content last seen, good or not.
	Hash string
	// Version is the signed bundle version of the applied content (0 for
	// a file or an unsigned body).
	Version uint64
	// Pinned reports whether a file pin holds the file at the pods of an
	// earlier content (an atomic rollback).
	Pinned bool
	// LastChange is when the file first appeared, or its content or its
	// error last changed.
	LastChange time.Time
}

// Option configures a Store.
type Option func(*Store)

// WithClock sets the clock used for FileState.LastChange (the system clock
// by default, and when now is nil).
func WithClock(now clock.Clock) Option { return func(s *Store) { s.now = now } }

// Store merges per-source snapshots into the desired pod set. All methods
// are safe for concurrent use.
//
// Rules: a file whose manifest has an error keeps its last good pods; a file
// missing from its source's snapshot loses its pods; a source only ever
// removes its own pods, and a source that has not reported yet holds back
// nothing. When two files define the same namespace/name, one copy is
// applied, chosen by the files alone (never by which ran first, so a
// restart or the order of reports changes nothing): the file of the source
// first in SetSourceOrder (tug lists its file source first, so the device
// owner's files win over the URL), then the file first by name. Every
// other file records a *DuplicateError; its other pods are applied.
type Store struct {
	now     clock.Clock
	updates chan []Change
	queued  chan struct{} // holds a token while pending has lists for Run

	mu      sync.Mutex
	pending [][]Change // change lists Run has yet to send, in the order computed
	order   []string   // SetSourceOrder
	ready   map[string]bool
	files   map[fileKey]*file
	applied map[string]entry // by pod UID, pins applied
	wanted  map[string]entry // by pod UID, as the sources want them (no pins)
	pins    map[string]Pin   // by pod UID
	filePin map[fileKey]FilePin
}

// Pin holds a pod at an earlier spec while its source still wants a spec
// that failed (the rollout controller's rollback): as long as the source's
// pod with this UID has the hash Failed, Good is applied in its place. Once
// the source's pod changes (or goes), the pin no longer applies.
type Pin struct {
	// Failed is the hash (Desired.Hash) of the spec the source wants and
	// that must not be applied.
	Failed string
	// Good is the pod applied instead, with the objects it was bound to;
	// nil removes the pod while the pin applies (a pod new in a failed
	// bundle).
	Good *pod.Pod
	// GoodHash is Good's hash as Desired reported it when it was applied.
	GoodHash string
}

// FilePin holds every pod of one file (or URL bundle) at the pods of an
// earlier content of it while the file's content is Failed: the rollback
// of an atomic bundle. Pods the failed content added are removed, pods it
// dropped come back.
type FilePin struct {
	Origin pod.Origin
	// Failed is the content hash (pod.SourceFile.Hash) that must not be
	// applied.
	Failed string
	// Pods are the good content's pods, bound to its objects, and Hashes
	// their hashes as Desired reported them.
	Pods   []*pod.Pod
	Hashes []string
}

// Desired is one pod as its source wants it, before any pin.
type Desired struct {
	Pod    *pod.Pod
	Hash   string // the pod's hash with its bound objects' digest
	Origin pod.Origin
	// Pinned reports whether a pin replaces this spec now.
	Pinned bool
}

type fileKey struct{ source, file string }

// file is one file's state. pods and hashes are its last good content.
type file struct {
	key        fileKey
	good       bool
	pods       []*pod.Pod
	objects    []*pod.Object // ConfigMaps, Secrets and claims beside the pods
	hashes     []string      // pods[i].Hash(), computed once per content
	names      []string      // pods[i].FullName()
	goodHash   string
	version    uint64 // of the good content
	hash       string
	parseErr   error
	dups       []error
	errText    string // text of err() when LastChange was last set
	lastChange time.Time
	uids       []string
}

func (f *file) err() error {
	if len(f.dups) == 0 {
		return f.parseErr
	}
	return errors.Join(append([]error{f.parseErr}, f.dups...)...)
}

type entry struct {
	pod  *pod.Pod
	name string // pod.FullName()
	hash string
	from fileKey
}

// New returns an empty store.
func New(opts ...Option) *Store {
	s := &Store{
		now:     time.Now,
		updates: make(chan []Change),
		queued:  make(chan struct{}, 1),
		ready:   make(map[string]bool),
		files:   make(map[fileKey]*file),
		applied: make(map[string]entry),
		wanted:  make(map[string]entry),
		pins:    make(map[string]Pin),
		filePin: make(map[fileKey]FilePin),
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// SetSourceOrder ranks the sources for pods defined in more than one: the
// first source listed wins, then the next; unlisted sources come after,
// by name. Call it before the first Apply.
func (s *Store) SetSourceOrder(sources ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.order = slices.Clone(sources)
}

// rank is the source's place in SetSourceOrder (unlisted: after all).
func (s *Store) rank(source string) int {
	if i := slices.Index(s.order, source); i >= 0 {
		return i
	}
	return len(s.order)
}

// Apply takes a full snapshot of one source (every file it saw, broken ones
// included) and returns the changes it causes: Remove, then Update, then
// Add, each sorted by pod full name. The returned slice belongs to the
// caller.
func (s *Store) Apply(source string, manifests []pod.SourceFile) []Change {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.apply(source, manifests)
}

// apply is Apply with s.mu held.
func (s *Store) apply(source string, manifests []pod.SourceFile) []Change {
	now := s.now.Now()
	s.ready[source] = true

	seen := make(map[string]bool, len(manifests))
	for i := range manifests {
		m := &manifests[i]
		k := fileKey{source, m.File}
		seen[m.File] = true
		f := s.files[k]
		if f == nil {
			f = &file{key: k, lastChange: now}
			s.files[k] = f
		}
		if f.hash != m.Hash {
			f.lastChange = now
		}
		f.hash = m.Hash
		f.parseErr = m.Err
		if m.Err == nil && !(f.good && m.Hash != "" && m.Hash == f.goodHash && len(m.Pods) == len(f.pods)) {
			f.good, f.goodHash, f.version, f.pods, f.objects = true, m.Hash, m.Version, m.Pods, m.Objects
			f.hashes = make([]string, len(m.Pods))
			f.names = make([]string, len(m.Pods))
			for i, p := range m.Pods {
				f.hashes[i], f.names[i] = p.Hash(), p.FullName()
			}
		}
	}
	for k := range s.files {
		if k.source == source && !seen[k.file] {
			delete(s.files, k)
		}
	}

	changes := s.reapply()
	for _, f := range s.files {
		if t := errString(f.err()); t != f.errText {
			f.errText, f.lastChange = t, now
		}
	}
	return changes
}

// reapply resolves the files again, applies the pins and returns the
// changes from what was applied.
func (s *Store) reapply() []Change {
	s.wanted = s.resolve(false)
	pinned := s.resolve(true)
	next := make(map[string]entry, len(pinned))
	for uid, e := range pinned {
		if pin, ok := s.pins[uid]; ok && pin.Failed == e.hash {
			if pin.Good == nil {
				continue
			}
			e.pod, e.hash = pin.Good, pin.GoodHash
		}
		next[uid] = e
	}
	changes := diff(s.applied, next)
	s.applied = next
	return changes
}

// SetPins replaces every pin (pods by UID, and files) and queues the
// changes they cause for Updates(), as Set does. A pin whose pod the source
// no longer wants with its Failed hash changes nothing. Pins may be set
// before the first Set, so that a spec that failed before a restart is
// never started again.
func (s *Store) SetPins(pins map[string]Pin, files []FilePin) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pins = make(map[string]Pin, len(pins))
	for uid, p := range pins {
		s.pins[uid] = p
	}
	s.filePin = make(map[fileKey]FilePin, len(files))
	for _, fp := range files {
		s.filePin[fileKey{fp.Origin.Source, fp.Origin.File}] = fp
	}
	s.queue(s.reapply())
}

// Wanted returns every pod as its source wants it, pins left out, sorted
// by full name. The slice is the caller's; the pods are shared.
func (s *Store) Wanted() []Desired {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Desired, 0, len(s.wanted))
	for uid, e := range s.wanted {
		pin, ok := s.pins[uid]
		out = append(out, Desired{Pod: e.pod, Hash: e.hash, Origin: pod.Origin{Source: e.from.source, File: e.from.file},
			Pinned: (ok && pin.Failed == e.hash) || s.filePinned(e.from)})
	}
	slices.SortFunc(out, func(a, b Desired) int { return comparePods(a.Pod, b.Pod) })
	return out
}

// filePinned reports whether a file pin holds file k at other pods now.
func (s *Store) filePinned(k fileKey) bool {
	f, fp := s.files[k], s.filePin[k]
	return f != nil && f.good && fp.Failed != "" && fp.Failed == f.goodHash
}

// resolve picks, for every namespace/name, the one file whose pod is
// applied, and records duplicate errors on the others. With pinned, a
// file held by a file pin offers the pin's pods instead of its own; the
// duplicate errors and the UIDs of the files are those of that call.
func (s *Store) resolve(pinned bool) map[string]entry {
	files := make([]*file, 0, len(s.files))
	for _, f := range s.files {
		f.dups, f.uids = nil, nil
		if f.good {
			files = append(files, f)
		}
	}
	slices.SortFunc(files, func(a, b *file) int {
		return cmp.Or(cmp.Compare(s.rank(a.key.source), s.rank(b.key.source)),
			cmp.Compare(a.key.source, b.key.source), cmp.Compare(a.key.file, b.key.file))
	})

	// The winner for each name is the first candidate in that order,
	// whatever ran before: the same files always give the same pods.
	type cand struct {
		f *file
		i int
	}
	win := make(map[string]cand, len(s.applied))
	var losers []cand
	held := map[*file]FilePin{}
	for _, f := range files {
		names := f.names
		if fp := s.filePin[f.key]; pinned && s.filePinned(f.key) {
			held[f] = fp
			names = make([]string, len(fp.Pods))
			for i, p := range fp.Pods {
				names[i] = p.FullName()
			}
		}
		for i, n := range names {
			if _, taken := win[n]; taken {
				losers = append(losers, cand{f, i})
			} else {
				win[n] = cand{f, i}
			}
		}
	}
	objects := objectIndex(files)
	next := make(map[string]entry, len(win))
	for n, w := range win {
		if fp, ok := held[w.f]; ok {
			// The good content's pods come bound to its objects.
			p := fp.Pods[w.i]
			next[p.Metadata.UID] = entry{pod: p, name: n, hash: fp.Hashes[w.i], from: w.f.key}
			w.f.uids = append(w.f.uids, p.Metadata.UID)
			continue
		}
		src := objects[w.f.key.source]
		p, digest := pod.Bind(w.f.pods[w.i], func(k pod.ObjectKey) *pod.Object { return src[k] })
		next[p.Metadata.UID] = entry{pod: p, name: n, hash: w.f.hashes[w.i] + digest, from: w.f.key}
		w.f.uids = append(w.f.uids, p.Metadata.UID)
	}
	for _, c := range losers {
		n := c.f.names[c.i]
		if fp, ok := held[c.f]; ok {
			n = fp.Pods[c.i].FullName()
		}
		w := win[n].f.key
		c.f.dups = append(c.f.dups, &DuplicateError{Pod: n, File: w.file, Source: w.source})
	}
	return next
}

// objectIndex indexes the objects of the good files (sorted as resolve
// sorts them) by source, then key: a pod binds the objects of its own
// source only (docs/decisions.md). Where two files of a source define the
// same object, the first file wins, as for pods.
func objectIndex(files []*file) map[string]map[pod.ObjectKey]*pod.Object {
	idx := map[string]map[pod.ObjectKey]*pod.Object{}
	for _, f := range files {
		m := idx[f.key.source]
		for _, o := range f.objects {
			if m == nil {
				m = map[pod.ObjectKey]*pod.Object{}
				idx[f.key.source] = m
			}
			if _, taken := m[o.Key()]; !taken {
				m[o.Key()] = o
			}
		}
	}
	return idx
}

// Claims returns the keys of every PersistentVolumeClaim the sources
// define now (the last good version of each file) and of every claim a
// desired pod mounts, each with the source it belongs to, for the removal
// of unused claim directories. The slice is the caller's.
func (s *Store) Claims() []pod.ClaimKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []pod.ClaimKey
	for _, e := range s.applied {
		for _, v := range e.pod.Spec.Volumes {
			if c := v.PersistentVolumeClaim; c != nil {
				keys = append(keys, pod.ClaimKey{Source: e.from.source, Namespace: e.pod.Metadata.Namespace, Name: c.ClaimName})
			}
		}
	}
	for _, f := range s.files {
		if !f.good {
			continue
		}
		for _, o := range f.objects {
			if o.Kind == pod.KindClaim {
				keys = append(keys, pod.ClaimKey{Source: f.key.source, Namespace: o.Namespace, Name: o.Name})
			}
		}
	}
	return keys
}

// diff returns the ordered changes from old to next.
func diff(old, next map[string]entry) []Change {
	var rm, up, add []Change
	for uid, o := range old {
		n, ok := next[uid]
		switch {
		case !ok:
			rm = append(rm, Change{Remove, o.pod})
		case n.hash != o.hash:
			up = append(up, Change{Update, n.pod})
		}
	}
	for uid, n := range next {
		if _, ok := old[uid]; !ok {
			add = append(add, Change{Add, n.pod})
		}
	}
	for _, l := range [][]Change{rm, up, add} {
		slices.SortFunc(l, func(a, b Change) int { return comparePods(a.Pod, b.Pod) })
	}
	return slices.Concat(rm, up, add)
}

func comparePods(a, b *pod.Pod) int {
	return cmp.Or(cmp.Compare(a.FullName(), b.FullName()), cmp.Compare(a.Metadata.UID, b.Metadata.UID))
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Set is Apply with its non-empty change list queued for Updates(). It
// never waits for the sync loop, so a busy loop holds back no source and
// no rollback; lists arrive in the order they were computed. Set
// implements source.Sink.
func (s *Store) Set(source string, manifests []pod.SourceFile) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue(s.apply(source, manifests))
}

// queue adds a non-empty change list for Run to send. s.mu is held.
func (s *Store) queue(changes []Change) {
	if len(changes) == 0 {
		return
	}
	s.pending = append(s.pending, changes)
	select {
	case s.queued <- struct{}{}:
	default: // a token is there already
	}
}

// Run sends the queued change lists on Updates(), one list at a time and in
// order (a list is never merged with the next: the loop orders the changes
// within one), until ctx is done. Lists not sent then are dropped.
func (s *Store) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.queued:
		}
		s.mu.Lock()
		lists := s.pending
		s.pending = nil
		s.mu.Unlock()
		for _, changes := range lists {
			select {
			case s.updates <- changes:
			case <-ctx.Done():
				return nil
			}
		}
	}
}

// Updates returns the channel on which Run sends the change lists of Set
// and SetPins. It is unbuffered; what the loop has not taken yet waits in
// the store.
func (s *Store) Updates() <-chan []Change { return s.updates }

// Ready reports whether source has reported at least once.
func (s *Store) Ready(source string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ready[source]
}

// Owns reports, from one look at the store, whether source has reported
// and whether the pod with this UID is wanted (applied) now. A pod that
// Apply has added is wanted before its change list is even sent, so a
// caller that checks here never mistakes it for an orphan.
func (s *Store) Owns(source, uid string) (ready, wanted bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, wanted = s.applied[uid]
	return s.ready[source], wanted
}

// Pods returns the current desired pods, sorted by full name. The slice is
// the caller's; the pods are shared and must not be modified.
func (s *Store) Pods() []*pod.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	pods := make([]*pod.Pod, 0, len(s.applied))
	for _, e := range s.applied {
		pods = append(pods, e.pod)
	}
	slices.SortFunc(pods, comparePods)
	return pods
}

// Files returns the state of every file the sources currently report,
// sorted by source, then file. The slice is the caller's.
func (s *Store) Files() []FileState {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]FileState, 0, len(s.files))
	for _, f := range s.files {
		out = append(out, FileState{
			Origin:      pod.Origin{Source: f.key.source, File: f.key.file},
			Err:         f.err(),
			UIDs:        slices.Sorted(slices.Values(f.uids)),
			AppliedHash: f.goodHash,
			Hash:        f.hash,
			Version:     f.version,
			Pinned:      s.filePinned(f.key),
			LastChange:  f.lastChange,
		})
	}
	slices.SortFunc(out, func(a, b FileState) int {
		return cmp.Or(cmp.Compare(a.Origin.Source, b.Origin.Source), cmp.Compare(a.Origin.File, b.Origin.File))
	})
	return out
}
