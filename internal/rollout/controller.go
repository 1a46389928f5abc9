package rollout

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"tug/internal/clock"
	"tug/internal/pod"
	"tug/internal/podconfig"
	"tug/internal/reconcile"
)

// Condition and event.
const (
	ConditionRolloutFailed = "RolloutFailed"
	ReasonRolledBack       = pod.ReasonRolledBack
	reasonRolloutFailed    = "RolloutFailed"
	reasonRolloutSucceeded = "RolloutSucceeded"
)

// Wanted is the pod store as the controller sees it (podconfig.Store).
type Wanted interface {
	// Wanted lists every pod as its source wants it, pins left out.
	Wanted() []podconfig.Desired
	// SetPins replaces the pins and queues the changes they cause.
	SetPins(pins map[string]podconfig.Pin, files []podconfig.FilePin)
	// Files lists the state of every manifest file (or URL) of every
	// source.
	Files() []podconfig.FileState
	// Owns reports whether source has reported and still wants uid.
	Owns(source, uid string) (ready, wanted bool)
}

// Progresser reports how far a pod's spec is applied (reconcile.Loop).
type Progresser interface {
	Progress(p *pod.Pod) reconcile.Progress
}

type eventRecorder interface {
	Event(p *pod.Pod, container, eventType, reason, message string)
}

// Config configures a Controller.
type Config struct {
	// Dir is where the state is persisted (<root-dir>/rollout).
	Dir string
	// MinReady is how long a spec must be Ready with no restart to become
	// the last good one (--rollout-min-ready, default 30 s).
	MinReady time.Duration
	// Timeout is how long an update may take to become Ready
	// (--rollout-timeout, default 5 min; 0: no rollback).
	Timeout time.Duration
	// MaxRestarts is how many restarts an update may cause (default 2).
	MaxRestarts int
	// Period is how often the pods are judged while a rollout is under
	// way (default 1 s: a pod's status changes at most once per relist of
	// the PLEG); IdlePeriod when every pod is at its last good spec
	// (default 5 s: an idle agent should not wake for nothing).
	Period     time.Duration
	IdlePeriod time.Duration
	Store      Wanted
	Pods       Progresser
	Events     eventRecorder // nil: no events
	Registerer prometheus.Registerer
	Clock      clock.Clock
	Log        *slog.Logger
	// BootID names this boot (/proc/sys/kernel/random/boot_id when "").
	BootID string
}

// Controller watches updates and rolls failed ones back. Its methods are
// safe for concurrent use.
type Controller struct {
	cfg      Config
	files    files
	total    *prometheus.CounterVec
	wake     chan struct{}
	mu       sync.Mutex
	records  map[string]*record
	fileRecs map[pod.Origin]*fileRecord
	atomic   map[pod.Origin]bool // the files whose pods ask for atomic rollouts
	// manualFile holds the files whose rollback was asked for by hand.
	manualFile map[pod.Origin]bool
	// manual holds the UIDs whose rollback was asked for by hand.
	manual map[string]bool
}

// New reads the persisted state and returns a Controller. Call Pins (or
// Load) before the sources report, so a spec that failed before a
// restart is held back from the start.
func New(cfg Config) (*Controller, error) {
	if cfg.Period == 0 {
		cfg.Period = time.Second
	}
	if cfg.IdlePeriod == 0 {
		cfg.IdlePeriod = 5 * time.Second
	}
	if cfg.MaxRestarts == 0 {
		cfg.MaxRestarts = 2
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.BootID == "" {
		b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
		if err != nil {
			return nil, fmt.Errorf("boot id: %w", err)
		}
		cfg.BootID = strings.TrimSpace(string(b))
	}
	c := &Controller{
		cfg:   cfg,
		files: files{dir: cfg.Dir},
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tug_rollouts_total",
			Help: "Updates of pods judged by the rollout controller, by result: succeeded, rolled_back, or failed (no good spec to return to).",
		}, []string{"result"}),
		wake:   make(chan struct{}, 1),
		manual: map[string]bool{},
	}
	// Every result's series exists from the start, at 0, so that the
	// first rollback is an increase a rule sees (increase() of a series
	// that appears at 1 is nothing).
	for _, r := range []string{"succeeded", "rolled_back", "failed"} {
		c.total.WithLabelValues(r)
	}
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(c.total)
	}
	recs, errs := c.files.load()
	fileRecs, ferrs := c.files.loadFiles()
	for _, err := range append(errs, ferrs...) {
		cfg.Log.Warn("rollout state skipped: the pod has no last good spec", "file", errFile(err), "err", err)
	}
	c.records, c.fileRecs, c.atomic, c.manualFile = recs, fileRecs, map[pod.Origin]bool{}, map[pod.Origin]bool{}
	now := cfg.Clock.Now()
	for _, r := range c.records {
		// The times a watch counts from are wall times read back: from
		// here on they count on the monotonic clock, and one in the future
		// (the clock stepped back since) counts from now.
		r.WatchSince = clock.Anchor(now, r.WatchSince, clockStepTolerance)
		r.CurrentSince = clock.Anchor(now, r.CurrentSince, clockStepTolerance)
		r.ReadyAt = clock.Anchor(now, r.ReadyAt, clockStepTolerance)
	}
	c.afterReboot(now)
	return c, nil
}

// clockStepTolerance is how far in the future a persisted time may be
// and still be taken as it is.
const clockStepTolerance = 10 * time.Second

// rebootTries is the number of boots an update may take: a watch still
// open at its second reboot rolls back.
const rebootTries = 2

const reasonRebooted = "the node rebooted twice before the update was ready"

// afterReboot settles the watches a reboot cut (those of another boot),
// before the sources report. A reboot during an update is a try, not a
// verdict: a power cut says nothing of the spec, so the watch starts over
// on this boot, its timeout and restarts counted afresh. The second reboot
// during the same update rolls it back and holds it back until its content
// changes: it may be what reboots the device. The pods of an atomic file
// go together: the file returns to its good content, or, when it has none
// (or no pod of it has reached its second reboot), every pod of it goes on.
func (c *Controller) afterReboot(now time.Time) {
	type cut struct {
		recs     []*record
		content  string
		version  uint64
		rollBack bool
	}
	atomic := map[pod.Origin]*cut{}
	for _, r := range c.records {
		if r.Watch == "" || r.WatchBoot == c.cfg.BootID {
			continue
		}
		r.WatchBoots++
		rollBack := r.WatchBoots >= rebootTries
		if r.FileContent != "" {
			o := pod.Origin{Source: r.Source, File: r.File}
			fc := atomic[o]
			if fc == nil {
				fc = &cut{content: r.FileContent, version: r.FileVersion}
				atomic[o] = fc
			}
			fc.recs, fc.rollBack = append(fc.recs, r), fc.rollBack || rollBack
			continue
		}
		if rollBack && r.Good != nil {
			c.fail(r, r.Watch, reasonRebooted, now, true)
			c.cfg.Log.Warn("rolled back at boot", "pod", r.Name, "uid", r.UID, "reason", r.Reason)
		} else {
			c.goOnAfterReboot(r, now)
		}
		c.store(r)
	}
	for o, fc := range atomic {
		fr := c.fileRecs[o]
		whole := fc.rollBack && fr != nil && fr.GoodContent != "" && fr.GoodContent != fc.content
		if whole {
			c.holdFile(fr, fc.content, fc.version, reasonRebooted, now)
		}
		for _, r := range fc.recs {
			if whole {
				c.fail(r, r.Watch, "its file went back to its good content: "+reasonRebooted, now, r.Good != nil)
			} else {
				c.goOnAfterReboot(r, now)
			}
			c.store(r)
		}
	}
}

// goOnAfterReboot starts r's watch over on this boot: the update is tried
// again, with a fresh timeout and restart count.
func (c *Controller) goOnAfterReboot(r *record, now time.Time) {
	r.restartWatch(c.cfg.BootID, now)
	c.cfg.Log.Info("update goes on after a reboot", "pod", r.Name, "uid", r.UID, "hash", short(r.Watch), "reboots", r.WatchBoots)
}

// holdFile holds fr's content failed back (its pods pinned to its good
// content) for reason, and saves fr.
func (c *Controller) holdFile(fr *fileRecord, failed string, version uint64, reason string, now time.Time) {
	fr.Failed, fr.FailedVersion, fr.FailedAt, fr.Held, fr.Reason = failed, version, now, true, reason
	c.storeFile(fr)
	c.cfg.Log.Warn("manifest file rolled back to its good content", "source", fr.Source, "file", fr.File,
		"failed", short(fr.Failed), "failedVersion", fr.FailedVersion, "good", short(fr.GoodContent), "goodVersion", fr.GoodVersion, "reason", fr.Reason)
}

// store saves r, warning when it cannot.
func (c *Controller) store(r *record) {
	if err := c.files.store(r); err != nil {
		c.cfg.Log.Warn("rollout state not saved", "pod", r.Name, "uid", r.UID, "err", err)
	}
}

// errFile is the path of the rollout state file err is about.
func errFile(err error) string {
	if fe, ok := errors.AsType[*FileError](err); ok {
		return fe.Path
	}
	return ""
}

// Pins returns the pins of the failed specs held back now: by pod, and
// by file for atomic files.
func (c *Controller) Pins() (map[string]podconfig.Pin, []podconfig.FilePin) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pins := map[string]podconfig.Pin{}
	for uid, r := range c.records {
		if r.Failed != "" && r.RolledBack && r.Good != nil {
			pins[uid] = podconfig.Pin{Failed: r.Failed, Good: r.Good.restore(), GoodHash: r.GoodHash}
		}
	}
	var files []podconfig.FilePin
	for _, fr := range c.fileRecs {
		if fr.Failed != "" && fr.Held {
			files = append(files, fr.pin())
		}
	}
	return pins, files
}

// setPins sends the current pins to the store.
func (c *Controller) setPins(ctx context.Context) {
	pins, files := c.Pins()
	c.cfg.Store.SetPins(pins, files)
}

// Run judges the pods every Period while a rollout is under way, every
// IdlePeriod when every pod is at its last good spec, until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	t := time.NewTimer(c.cfg.Period)
	defer t.Stop()
	for {
		if c.judge() {
			c.setPins(ctx)
		}
		next := c.cfg.Period
		if c.atRest() {
			next = c.cfg.IdlePeriod
		}
		t.Reset(next)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-c.wake:
		}
	}
}

// atRest reports whether every wanted pod is at its last good spec and
// every atomic file at its good content: nothing to time out, so a new
// spec may wait IdlePeriod to be noticed (its timeout counts from then).
func (c *Controller) atRest() bool {
	wanted := c.cfg.Store.Wanted()
	files := c.cfg.Store.Files()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.manual) > 0 || len(c.manualFile) > 0 {
		return false
	}
	for _, d := range wanted {
		r := c.records[d.Pod.Metadata.UID]
		if r == nil || d.Hash != r.GoodHash || r.Watch != "" || r.Failed != "" {
			return false
		}
	}
	for _, f := range files {
		if fr := c.fileRecs[f.Origin]; c.atomic[f.Origin] && (fr == nil || fr.GoodContent != f.AppliedHash || fr.Failed != "") {
			return false
		}
	}
	return true
}

// judge looks at every wanted pod once and reports whether the pins
// changed.
func (c *Controller) judge() (changed bool) {
	now := c.cfg.Clock.Now()
	wanted := c.cfg.Store.Wanted()
	files := c.cfg.Store.Files()
	byFile := map[pod.Origin][]podconfig.Desired{}
	for _, d := range wanted {
		byFile[d.Origin] = append(byFile[d.Origin], d)
	}
	if c.judgeFiles(files, byFile) {
		changed = true
	}
	content := map[pod.Origin]podconfig.FileState{}
	for _, f := range files {
		content[f.Origin] = f
	}
	seen := map[string]bool{}
	for _, d := range wanted {
		seen[d.Pod.Metadata.UID] = true
		if c.judgePod(d, now, content[d.Origin], byFile[d.Origin]) {
			changed = true
		}
	}
	c.recordGoodFiles(files, byFile, now)
	if c.manualFiles(files, byFile, now) {
		changed = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for uid, r := range c.records {
		if seen[uid] {
			continue
		}
		// Forget a pod only once its source has reported without it.
		if ready, want := c.cfg.Store.Owns(r.Source, uid); ready && !want {
			delete(c.records, uid)
			if err := c.files.remove(uid); err != nil {
				c.cfg.Log.Warn("rollout state not removed", "pod", r.Name, "err", err)
			}
		}
	}
	return changed
}

// judgeFiles notes which files are atomic, forgets the files no source
// reports, and drops the failure of a file whose content changed; it
// reports whether a file pin went.
func (c *Controller) judgeFiles(files []podconfig.FileState, byFile map[pod.Origin][]podconfig.Desired) (changed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	reported := map[pod.Origin]bool{}
	for _, f := range files {
		reported[f.Origin] = true
		c.atomic[f.Origin] = slices.ContainsFunc(byFile[f.Origin], func(d podconfig.Desired) bool {
			return d.Pod.Metadata.Annotations[AnnotationRollout] == RolloutAtomic
		})
		fr := c.fileRecs[f.Origin]
		if fr == nil || fr.Failed == "" || fr.Failed == f.AppliedHash {
			continue
		}
		// A new content: it is tried.
		changed = changed || fr.Held
		fr.Failed, fr.FailedVersion, fr.Reason, fr.Held = "", 0, "", false
		c.storeFile(fr)
	}
	for o := range c.fileRecs {
		if !reported[o] && c.sourceReported(o.Source) {
			delete(c.fileRecs, o)
			delete(c.atomic, o)
			if err := c.files.removeFile(o); err != nil {
				c.cfg.Log.Warn("rollout state not removed", "source", o.Source, "file", o.File, "err", err)
			}
		}
	}
	return changed
}

// manualFiles rolls back the files asked for by hand (tug rollback
// --source) and reports whether any was.
func (c *Controller) manualFiles(files []podconfig.FileState, byFile map[pod.Origin][]podconfig.Desired, now time.Time) bool {
	c.mu.Lock()
	asked := c.manualFile
	c.manualFile = map[pod.Origin]bool{}
	c.mu.Unlock()
	rolled := false
	for _, f := range files {
		if !asked[f.Origin] {
			continue
		}
		c.mu.Lock()
		fr := c.fileRecs[f.Origin]
		ok := fr != nil && fr.GoodContent != "" && fr.GoodContent != f.AppliedHash && !f.Pinned && f.Err == nil
		c.mu.Unlock()
		if !ok {
			c.cfg.Log.Warn("rollback asked for a file at its good content, or with none", "source", f.Origin.Source, "file", f.Origin.File)
			continue
		}
		c.failFile(f, "rolled back by hand (tug rollback --source)", byFile[f.Origin], now)
		rolled = true
	}
	return rolled
}

// RollbackFile asks for every pod of the file (or URL bundle) at o to go
// back to the file's last good content, the content held back until it
// changes.
func (c *Controller) RollbackFile(o pod.Origin) error {
	c.mu.Lock()
	fr := c.fileRecs[o]
	if fr == nil || fr.GoodContent == "" {
		c.mu.Unlock()
		return ErrNoGoodSpec
	}
	c.manualFile[o] = true
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return nil
}

// sourceReported reports whether source has reported (through Owns,
// which needs a UID: any will do).
func (c *Controller) sourceReported(source string) bool {
	ready, _ := c.cfg.Store.Owns(source, "")
	return ready
}

// recordGoodFiles records as a file's good content its applied content
// once every pod of it is at its last good spec.
func (c *Controller) recordGoodFiles(files []podconfig.FileState, byFile map[pod.Origin][]podconfig.Desired, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range files {
		ds := byFile[f.Origin]
		if f.Err != nil || f.Pinned || f.AppliedHash == "" || len(ds) == 0 {
			continue
		}
		fr := c.fileRecs[f.Origin]
		if fr != nil && fr.GoodContent == f.AppliedHash {
			continue
		}
		good := true
		for _, d := range ds {
			if r := c.records[d.Pod.Metadata.UID]; r == nil || d.Pinned || r.GoodHash != d.Hash {
				good = false
				break
			}
		}
		if !good {
			continue
		}
		if fr == nil {
			fr = &fileRecord{Source: f.Origin.Source, File: f.Origin.File}
			c.fileRecs[f.Origin] = fr
		}
		fr.GoodContent, fr.GoodVersion, fr.GoodAt, fr.Pods, fr.Hashes = f.AppliedHash, f.Version, now, nil, nil
		for _, d := range ds {
			fr.Pods, fr.Hashes = append(fr.Pods, save(d.Pod)), append(fr.Hashes, d.Hash)
		}
		c.storeFile(fr)
	}
}

func (c *Controller) storeFile(fr *fileRecord) {
	if err := c.files.storeFile(fr); err != nil {
		c.cfg.Log.Warn("rollout state not saved", "source", fr.Source, "file", fr.File, "err", err)
	}
}

// failFile holds back the content of an atomic file one of whose pods
// failed, and returns the file to its good content: every pod of it
// whose spec changed is rolled back (or removed, if the good content had
// no such pod).
func (c *Controller) failFile(f podconfig.FileState, reason string, ds []podconfig.Desired, now time.Time) {
	c.mu.Lock()
	fr := c.fileRecs[f.Origin]
	c.holdFile(fr, f.AppliedHash, f.Version, reason, now)
	recs := map[string]*record{}
	for _, d := range ds {
		if r := c.records[d.Pod.Metadata.UID]; r != nil {
			recs[d.Pod.Metadata.UID] = r.clone()
		}
	}
	c.mu.Unlock()
	for _, d := range ds {
		r := recs[d.Pod.Metadata.UID]
		if r == nil || d.Hash == r.GoodHash {
			continue // unchanged by the failed content
		}
		c.fail(r, d.Hash, "its file went back to its good content: "+fr.Reason, now, true)
		c.total.WithLabelValues("rolled_back").Inc()
		c.event(d.Pod, "Warning", ReasonRolledBack, fmt.Sprintf("Rolled back with its file from content %s (version %d) to %s (version %d): %s",
			short(fr.Failed), fr.FailedVersion, short(fr.GoodContent), fr.GoodVersion, fr.Reason))
		c.publish(r)
	}
}

// judgePod judges one pod (of file f, whose wanted pods are ds) and
// reports whether a pin changed.
func (c *Controller) judgePod(d podconfig.Desired, now time.Time, f podconfig.FileState, ds []podconfig.Desired) bool {
	p, uid := d.Pod, d.Pod.Metadata.UID
	// The record is changed on a copy, saved and then published: the API
	// reads the published one.
	c.mu.Lock()
	r := c.records[uid]
	if r != nil && d.Hash == r.GoodHash && r.Watch == "" && r.Failed == "" && !c.manual[uid] {
		c.mu.Unlock()
		return false // at its last good spec: the idle agent's case, no copy
	}
	if r == nil {
		r = &record{UID: uid, Name: p.FullName(), Source: d.Origin.Source}
	} else {
		r = r.clone()
	}
	manual := c.manual[uid]
	delete(c.manual, uid)
	c.mu.Unlock()

	dirty := false
	publish := func() {
		if dirty {
			c.publish(r)
			dirty = false
		}
	}
	defer publish()
	switch {
	case d.Hash == r.GoodHash:
		// The good spec is wanted (again): nothing to watch or hold back.
		if r.Watch != "" || r.Failed != "" {
			pinned := r.Failed != "" && r.RolledBack
			if r.Watch != "" && r.Watch != d.Hash {
				r.endHistory(r.Watch, OutcomeSuperseded, "", now)
			}
			r.Watch, r.Failed, r.Reason, r.RolledBack, r.Base = "", "", "", false, nil
			dirty = true
			return pinned
		}
		if manual {
			c.cfg.Log.Info("rollback asked for a pod already at its last good spec", "pod", r.Name, "uid", uid)
		}
		return false
	case d.Hash == r.Failed, d.Pinned:
		return false // held back (or failed with nothing to return to)
	}
	unpinned := false
	if r.Failed != "" {
		// The source's content changed since the failure: try it.
		unpinned = r.RolledBack
		r.Failed, r.Reason, r.RolledBack = "", "", false
		dirty = true
	}
	if r.Watch != d.Hash {
		if r.Watch != "" {
			r.endHistory(r.Watch, OutcomeSuperseded, "", now)
		}
		r.Watch, r.WatchBoots = d.Hash, 0
		r.restartWatch(c.cfg.BootID, now)
		r.addHistory(Entry{Hash: d.Hash, Applied: now, Outcome: OutcomeProgressing})
		dirty = true
	}
	if c.noteFile(r, f) {
		dirty = true
	}
	if manual {
		if r.Good == nil {
			c.cfg.Log.Warn("rollback asked, but the pod has no last good spec", "pod", r.Name, "uid", uid)
			return unpinned
		}
		c.failed(p, r, d.Hash, "rolled back by hand (tug rollback)", now, "")
		dirty = true
		return true
	}

	timeout, maxRestarts := c.limits(p)
	pr := c.cfg.Pods.Progress(p)
	if r.blocked(d.Hash, pr.Failure, pr.Message) {
		dirty = true
	}
	restarts := 0
	if pr.Current {
		if r.Base == nil {
			r.Base, r.CurrentSince = map[string]int{}, now
			dirty = true
		}
		for name, a := range pr.Attempts {
			base, ok := r.Base[name]
			if !ok {
				r.Base[name], base = a, a
				dirty = true
			}
			restarts += a - base
		}
	}
	ready, since := readySince(pr.Status)
	if since.Before(r.CurrentSince) {
		since = r.CurrentSince
	}
	readyNow := pr.Current && ready
	if readyNow && r.ReadyAt.IsZero() {
		r.ReadyAt = now
		dirty = true
	}
	reason := observed{progress: pr, readyNow: readyNow, wasReady: !r.ReadyAt.IsZero(), since: since,
		watched: now.Sub(r.WatchSince), restarts: restarts, maxRestarts: maxRestarts,
		timeout: timeout, minReady: c.cfg.MinReady}.failure(now)
	switch {
	case readyNow && restarts == 0 && now.Sub(since) >= c.cfg.MinReady:
		c.succeeded(p, r, d.Hash, now)
		dirty = true
		return unpinned
	case timeout == 0, reason == "":
		return unpinned
	}
	atomic, whole := c.atomicFile(f)
	if whole {
		publish()
		c.failFile(f, "pod "+p.FullName()+": "+reason, ds, now)
		return true
	}
	// An atomic file with no good content keeps its pods on one content:
	// the pod fails where it is.
	stay := ""
	switch {
	case atomic:
		stay = "its atomic file has no good content to return to"
	case r.Good == nil:
		stay = "it has no last good spec to return to"
	}
	c.failed(p, r, d.Hash, reason, now, stay)
	dirty = true
	return unpinned || r.RolledBack
}

// noteFile records in r, whose watch is open, the file its spec comes
// from and, when that file is atomic, the file's applied content; it
// reports whether r changed.
func (c *Controller) noteFile(r *record, f podconfig.FileState) bool {
	c.mu.Lock()
	atomic := c.atomic[f.Origin]
	c.mu.Unlock()
	content, version := "", uint64(0)
	if atomic {
		content, version = f.AppliedHash, f.Version
	}
	if r.File == f.Origin.File && r.FileContent == content && r.FileVersion == version {
		return false
	}
	r.File, r.FileContent, r.FileVersion = f.Origin.File, content, version
	return true
}

// observed is what the controller saw of a pod whose update it watches.
type observed struct {
	progress    reconcile.Progress
	readyNow    bool          // the current spec's pod is Ready
	wasReady    bool          // it has been Ready since the update
	since       time.Time     // when the Ready condition last changed
	watched     time.Duration // since the update was applied
	restarts    int           // container restarts since the update
	maxRestarts int
	timeout     time.Duration // 0: not watched
	minReady    time.Duration
}

// failure decides whether a watched update has failed, and returns why
// ("" while it has not). The timeout bounds the time to become Ready
// (watched); once the pod has been Ready, the min-ready window watches it
// for restarts, and the timeout then bounds only a spell out of Ready
// (since). Every reason states what was seen.
func (o observed) failure(now time.Time) string {
	switch {
	case o.timeout == 0:
		return ""
	case o.progress.Failure != "":
		return o.progress.Failure + ": " + o.progress.Message
	case o.restarts > o.maxRestarts:
		return fmt.Sprintf("containers restarted %d times (at most %d)", o.restarts, o.maxRestarts)
	case o.readyNow && o.restarts == 0:
		return "" // Ready: the min-ready window decides
	case o.watched <= o.timeout:
		return ""
	case o.readyNow:
		return fmt.Sprintf("containers restarted %d times: not ready for %v with no restart within %v", o.restarts, o.minReady, o.timeout)
	case !o.wasReady:
		return fmt.Sprintf("not ready within %v", o.timeout)
	case now.Sub(o.since) > o.timeout:
		return fmt.Sprintf("ready, then not ready again for over %v", o.timeout)
	}
	return ""
}

// publish saves r and makes it the pod's record.
func (c *Controller) publish(r *record) {
	c.store(r)
	c.mu.Lock()
	c.records[r.UID] = r
	c.mu.Unlock()
}

// atomicFile reports whether file f is atomic and, if so, whether it
// returns whole: it has a good content, other than its applied one, to
// return to.
func (c *Controller) atomicFile(f podconfig.FileState) (atomic, whole bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fr := c.fileRecs[f.Origin]
	atomic = c.atomic[f.Origin]
	return atomic, atomic && fr != nil && fr.GoodContent != "" && fr.GoodContent != f.AppliedHash && f.Err == nil
}

// limits returns the pod's rollout timeout and restart limit.
func (c *Controller) limits(p *pod.Pod) (time.Duration, int) {
	timeout, maxRestarts := c.cfg.Timeout, c.cfg.MaxRestarts
	if v, ok := p.Metadata.Annotations[AnnotationTimeout]; ok {
		if d, err := ParseTimeout(v); err == nil {
			timeout = d
		}
	}
	if v, ok := p.Metadata.Annotations[AnnotationMaxRestarts]; ok {
		if n, err := ParseMaxRestarts(v); err == nil {
			maxRestarts = n
		}
	}
	return timeout, maxRestarts
}

// readySince returns whether the pod is Ready and since when.
func readySince(st pod.Status) (bool, time.Time) {
	for _, cond := range st.Conditions {
		if cond.Type == pod.ConditionReady {
			return cond.Status == "True", cond.LastTransitionTime
		}
	}
	return false, time.Time{}
}

func (c *Controller) succeeded(p *pod.Pod, r *record, hash string, now time.Time) {
	r.Good, r.GoodHash = save(p), hash
	r.Watch, r.Base = "", nil
	r.endHistory(hash, OutcomeSucceeded, "", now)
	c.total.WithLabelValues("succeeded").Inc()
	c.cfg.Log.Info("pod spec is good", "pod", r.Name, "uid", r.UID, "hash", short(hash))
	c.event(p, "Normal", reasonRolloutSucceeded, fmt.Sprintf("Spec %s is the last good spec: ready for %v with no restart", short(hash), c.cfg.MinReady))
}

// failed records the failure of hash and, when stay is empty, holds hash
// back (the caller then sets the pins); stay says why the pod stays at
// the failed spec instead.
func (c *Controller) failed(p *pod.Pod, r *record, hash, reason string, now time.Time, stay string) {
	c.fail(r, hash, reason, now, stay == "")
	if r.RolledBack {
		c.total.WithLabelValues("rolled_back").Inc()
		msg := fmt.Sprintf("Rolled back from spec %s to the last good spec %s: %s", short(hash), short(r.GoodHash), reason)
		c.cfg.Log.Warn("update rolled back", "pod", r.Name, "uid", r.UID, "failed", short(hash), "good", short(r.GoodHash), "reason", reason)
		c.event(p, "Warning", ReasonRolledBack, msg)
		return
	}
	c.total.WithLabelValues("failed").Inc()
	c.cfg.Log.Warn("update failed; the pod stays at it", "pod", r.Name, "uid", r.UID, "failed", short(hash), "reason", reason, "stays", stay)
	c.event(p, "Warning", reasonRolloutFailed, fmt.Sprintf("Spec %s failed and the pod stays at it (%s): %s", short(hash), stay, reason))
}

func (c *Controller) fail(r *record, hash, reason string, now time.Time, rollBack bool) {
	r.Failed, r.Reason, r.FailedAt, r.RolledBack = hash, reason, now, rollBack
	r.Watch, r.Base = "", nil
	outcome := OutcomeFailed
	if rollBack {
		outcome = OutcomeRolledBack
	}
	r.endHistory(hash, outcome, reason, now)
}

func (c *Controller) event(p *pod.Pod, typ, reason, msg string) {
	if c.cfg.Events != nil {
		c.cfg.Events.Event(p, "", typ, reason, msg)
	}
}

// short is the first 12 characters of a hash.
func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// ErrUnknownPod is returned for a pod the controller does not know.
var ErrUnknownPod = errors.New("no such pod")

// ErrNoGoodSpec is returned when a pod (or file) has no last good spec.
var ErrNoGoodSpec = errors.New("no last good spec to return to")

// Rollback asks for pod uid to go back to its last good spec now, as if
// its update had failed; the failed spec is held back until its content
// changes.
func (c *Controller) Rollback(uid string) error {
	c.mu.Lock()
	r := c.records[uid]
	switch {
	case r == nil:
		c.mu.Unlock()
		return ErrUnknownPod
	case r.Good == nil:
		c.mu.Unlock()
		return ErrNoGoodSpec
	}
	c.manual[uid] = true
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return nil
}

// History returns the rollout history of pod uid.
func (c *Controller) History(uid string) (pod.RolloutHistory, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.records[uid]
	if r == nil {
		return pod.RolloutHistory{}, ErrUnknownPod
	}
	return pod.RolloutHistory{UID: uid, Pod: r.Name, GoodHash: r.GoodHash, Failed: r.Failed, Reason: r.Reason, Entries: append([]Entry(nil), r.History...)}, nil
}

// Condition returns the RolloutFailed condition of pod uid while a failed
// spec of it is held back (or failed with nothing to return to), else nil.
func (c *Controller) Condition(uid string) *pod.Condition {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.records[uid]
	if r == nil || r.Failed == "" {
		return nil
	}
	cond := &pod.Condition{Type: ConditionRolloutFailed, Status: "True", LastTransitionTime: r.FailedAt, Reason: reasonRolloutFailed}
	if r.RolledBack {
		cond.Reason = ReasonRolledBack
		cond.Message = fmt.Sprintf("spec %s failed (%s); running the last good spec %s", short(r.Failed), r.Reason, short(r.GoodHash))
	} else {
		cond.Message = fmt.Sprintf("spec %s failed (%s); no good spec (or good content of its atomic file) to return to", short(r.Failed), r.Reason)
	}
	return cond
}
