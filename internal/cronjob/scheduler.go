package cronjob

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"tug/internal/atomicfile"
	"tug/internal/clock"
	"tug/internal/cronspec"
	"tug/internal/pod"
)

// RunsSuffix ends the name of the file of a file's CronJob runs.
const RunsSuffix = "#cronjob"

// Sink receives each source's snapshot, runs added (the pod store).
type Sink interface {
	Set(source string, manifests []pod.SourceFile)
}

// Statuser tells a run's pod status (the sync loop).
type Statuser interface {
	Status(p *pod.Pod) pod.Status
}

// EventRecorder records an event about a CronJob (its template pod).
type EventRecorder interface {
	Event(p *pod.Pod, container, eventType, reason, message string)
}

// Config configures a Scheduler.
type Config struct {
	Sink Sink
	// Status reads the runs' phases (it may be given later, by Attach);
	// without it no run is seen to finish.
	Status Statuser
	Events EventRecorder // nil: no events
	// StateFile is where the last schedule times and runs are kept
	// (<root-dir>/cronjob/state.json); "" keeps them in memory only.
	StateFile string
	Clock     clock.Clock
	Log       *slog.Logger
	// Poll is how often the runs' status is read while a run is active
	// (5 s when zero).
	Poll time.Duration
}

// Scheduler runs CronJobs. Set and Run are safe for concurrent use.
type Scheduler struct {
	cfg  Config
	wake chan struct{}

	mu      sync.Mutex
	snaps   map[string][]pod.SourceFile  // by source, templates taken out
	good    map[fileKey][]*pod.Pod       // each file's last good CronJob templates
	state   map[string]*jobState         // by template UID
	cache   map[string]*pod.Pod          // run pods by UID, built once
	skipped map[string]time.Time         // the slot last reported as held back, by template UID
	hashes  map[string]string            // run pod hashes by UID
	scheds  map[string]cronspec.Schedule // by schedule text
	locs    map[string]*time.Location    // by time zone name
	badTZ   map[string]bool              // time zones reported as failing to load
	broken  map[string]map[string]bool   // by source: its files that do not parse
	sent    map[string]map[string]string // by source: the runs file hashes last sent
	lost    lostState                    // why the state file gave no state, for Restore
}

// lostState tells why the state file gave no state.
type lostState int

const (
	lostNone    lostState = iota // read whole, or not kept on disk
	lostMissing                  // absent: a first start, or removed
	lostDamaged                  // unreadable or not JSON: rewritten by Restore
)

type fileKey struct{ source, file string }

// jobState is what is persisted of one CronJob.
type jobState struct {
	Source    string    `json:"source"`
	File      string    `json:"file"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Created   time.Time `json:"created"`
	// LastSchedule is the slot of the last started run.
	LastSchedule time.Time `json:"lastScheduleTime,omitzero"`
	Runs         []run     `json:"runs,omitempty"`
}

// run is one Job of a CronJob: its slot and, once finished, its outcome
// (pod.PhaseSucceeded or pod.PhaseFailed).
type run struct {
	Slot   time.Time `json:"slot"`
	Result pod.Phase `json:"result,omitempty"`
}

type stateFile struct {
	CronJobs map[string]*jobState `json:"cronJobs"`
}

// New returns a Scheduler with the state of StateFile. A damaged or
// missing file is an empty state (a warning names the damaged one) that
// Restore rebuilds from the runs' containers.
func New(cfg Config) *Scheduler {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 5 * time.Second
	}
	s := &Scheduler{cfg: cfg, wake: make(chan struct{}, 1),
		snaps: map[string][]pod.SourceFile{}, good: map[fileKey][]*pod.Pod{}, state: map[string]*jobState{},
		cache: map[string]*pod.Pod{}, skipped: map[string]time.Time{}, hashes: map[string]string{},
		scheds: map[string]cronspec.Schedule{}, locs: map[string]*time.Location{}, badTZ: map[string]bool{},
		broken: map[string]map[string]bool{}, sent: map[string]map[string]string{}}
	if cfg.StateFile != "" {
		data, err := os.ReadFile(cfg.StateFile)
		var sf stateFile
		switch {
		case errors.Is(err, fs.ErrNotExist):
			s.lost = lostMissing
		case err != nil:
			cfg.Log.Warn("cronjob state not read: rebuilding it from the runs' containers", "file", cfg.StateFile, "err", err)
			s.lost = lostDamaged
		default:
			if err := json.Unmarshal(data, &sf); err != nil {
				cfg.Log.Warn("cronjob state damaged: rebuilding it from the runs' containers", "file", cfg.StateFile, "err", err)
				s.lost = lostDamaged
			} else {
				for uid, st := range sf.CronJobs {
					if st != nil { // null in a damaged file
						s.state[uid] = st
					}
				}
			}
		}
	}
	return s
}

// FoundRun is a run found from its pod's containers (their labels): the
// UID of its CronJob's template pod, the source and namespace of its pod,
// and its slot.
type FoundRun struct {
	CronJob   string // the template pod's UID
	Source    string
	Namespace string
	Slot      time.Time
}

// Restore rebuilds the state of a missing or damaged state file from the
// runs that still have containers, so that their pods are given back to
// the store (and adopted) rather than removed as orphans, and no slot
// runs twice: each CronJob with a run gets those runs (their outcome is
// read from their pods' status, as for an active run), the latest slot
// as its last schedule time and the earliest as the time tug first saw
// it. A damaged file is rewritten. With a state file read whole it does
// nothing: the file is the record, and a container it does not list is
// an orphan. Call it before the first Set.
func (s *Scheduler) Restore(runs []FoundRun) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lost := s.lost
	s.lost = lostNone
	if lost == lostNone {
		return
	}
	restored := 0
	for _, r := range runs {
		if r.CronJob == "" || r.Slot.IsZero() {
			continue
		}
		slot := r.Slot.UTC()
		st := s.state[r.CronJob]
		if st == nil {
			st = &jobState{Source: r.Source, Namespace: r.Namespace, Created: slot}
			s.state[r.CronJob] = st
		}
		if slices.ContainsFunc(st.Runs, func(x run) bool { return x.Slot.Equal(slot) }) {
			continue // another container of the same run
		}
		st.Runs = append(st.Runs, run{Slot: slot})
		if slot.Before(st.Created) {
			st.Created = slot
		}
		if slot.After(st.LastSchedule) {
			st.LastSchedule = slot
		}
		restored++
	}
	for _, st := range s.state {
		slices.SortFunc(st.Runs, func(a, b run) int { return a.Slot.Compare(b.Slot) })
	}
	if restored > 0 {
		s.cfg.Log.Info("cronjob state rebuilt from the runs' containers", "file", s.cfg.StateFile, "runs", restored, "cronjobs", len(s.state))
	}
	if lost == lostDamaged || restored > 0 {
		s.save()
	}
}

// Attach sets what reads the runs' status and what records events, which
// are built after the sources that report to the Scheduler; call it before
// Run.
func (s *Scheduler) Attach(st Statuser, ev EventRecorder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg.Status, s.cfg.Events = st, ev
}

// Set takes a source's full snapshot, keeps its CronJob templates and
// passes it on to the sink with the runs of its CronJobs. It implements
// source.Sink.
func (s *Scheduler) Set(source string, manifests []pod.SourceFile) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Clock.Now()
	out := make([]pod.SourceFile, len(manifests))
	files, broken := map[string]bool{}, map[string]bool{}
	for i, m := range manifests {
		files[m.File] = true
		if m.Err != nil {
			broken[m.File] = true
		}
		k := fileKey{source, m.File}
		var tpls, rest []*pod.Pod
		for _, p := range m.Pods {
			if p.CronJob != nil {
				tpls = append(tpls, p)
			} else {
				rest = append(rest, p)
			}
		}
		out[i] = m
		if len(tpls) > 0 {
			out[i].Pods = rest
		}
		if m.Err == nil {
			if len(tpls) > 0 {
				s.good[k] = tpls
			} else {
				delete(s.good, k)
			}
		}
	}
	for k := range s.good {
		if k.source == source && !files[k.file] {
			delete(s.good, k)
		}
	}
	s.snaps[source] = out
	s.broken[source] = broken
	s.adopt(source, now)
	s.emit(source, true)
	s.poke()
}

// adopt records the CronJobs of source first seen now and forgets the
// state of those gone from it (a file missing, or good without them; a
// broken file keeps its CronJobs' state).
func (s *Scheduler) adopt(source string, now time.Time) {
	live, dirty := map[string]bool{}, false
	for k, tpls := range s.good {
		if k.source != source {
			continue
		}
		for _, t := range tpls {
			uid := t.Metadata.UID
			live[uid] = true
			st := s.state[uid]
			if st == nil {
				st = &jobState{Created: now}
				s.state[uid] = st
				dirty = true // first seen: the slots missed from now on count
			}
			st.Source, st.File, st.Namespace, st.Name = k.source, k.file, t.CronJob.Namespace, t.CronJob.Name
		}
	}
	for uid, st := range s.state {
		if st.Source == source && !live[uid] && !s.broken[source][st.File] {
			delete(s.state, uid)
			dirty = true
		}
	}
	if dirty {
		s.save()
	}
}

func (s *Scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// emit sends source's snapshot with its runs files; unless always, only
// when the runs changed.
func (s *Scheduler) emit(source string, always bool) {
	snap, ok := s.snaps[source]
	if !ok {
		return
	}
	out := slices.Clone(snap)
	hashes := map[string]string{}
	for _, k := range slices.SortedFunc(maps.Keys(s.good), func(a, b fileKey) int {
		return cmp.Or(cmp.Compare(a.source, b.source), cmp.Compare(a.file, b.file))
	}) {
		if k.source != source {
			continue
		}
		f := pod.SourceFile{Origin: pod.Origin{Source: source, File: k.file + RunsSuffix}}
		h := sha256.New()
		for _, t := range s.good[k] {
			st := s.state[t.Metadata.UID]
			if st == nil {
				continue
			}
			for _, r := range st.Runs {
				p := s.runPod(t, r.Slot)
				f.Pods = append(f.Pods, p)
				fmt.Fprintf(h, "%s %s\n", p.Metadata.UID, s.hashes[p.Metadata.UID])
			}
		}
		f.Hash = hex.EncodeToString(h.Sum(nil))
		hashes[f.File] = f.Hash
		out = append(out, f)
	}
	if !always && maps.Equal(hashes, s.sent[source]) {
		return
	}
	s.sent[source] = hashes
	s.cfg.Sink.Set(source, out)
}

// forgetPods drops the built pods of runs no CronJob has any more.
func (s *Scheduler) forgetPods() {
	keep := map[string]bool{}
	for _, tpls := range s.good {
		for _, t := range tpls {
			if st := s.state[t.Metadata.UID]; st != nil {
				for _, r := range st.Runs {
					keep[s.runPod(t, r.Slot).Metadata.UID] = true
				}
			}
		}
	}
	for uid := range s.cache {
		if !keep[uid] {
			delete(s.cache, uid)
			delete(s.hashes, uid)
		}
	}
}

// RunName is the name of the Job of a CronJob's run for slot, as the
// CronJob controller names it: "<cronjob>-<minutes since the epoch>".
func RunName(cronJob string, slot time.Time) string {
	return fmt.Sprintf("%s-%d", cronJob, slot.Unix()/60)
}

// runPod returns the pod of t's run for slot, built once: the template's
// pod named as tug names a Job's pod ("<job>-pod", then the host suffix),
// labelled with its Job's name as Kubernetes labels a Job's pods.
func (s *Scheduler) runPod(t *pod.Pod, slot time.Time) *pod.Pod {
	manifestName := RunName(t.CronJob.Name, slot) + "-pod"
	name := manifestName + strings.TrimPrefix(t.Metadata.Name, t.Metadata.ManifestName)
	uid := pod.UID(t.Metadata.Source, t.Metadata.Namespace, name)
	if p := s.cache[uid]; p != nil {
		return p
	}
	p := *t
	p.CronJob = nil
	p.ScheduledTime, p.CronJobUID = slot.UTC(), t.Metadata.UID
	p.Metadata.ManifestName, p.Metadata.Name, p.Metadata.UID = manifestName, name, uid
	// The labels Kubernetes gives a Job's pods, naming their Job.
	p.Metadata.Labels = maps.Clone(t.Metadata.Labels)
	if p.Metadata.Labels == nil {
		p.Metadata.Labels = map[string]string{}
	}
	job := RunName(t.CronJob.Name, slot)
	p.Metadata.Labels["job-name"], p.Metadata.Labels["batch.kubernetes.io/job-name"] = job, job
	s.cache[uid] = &p
	s.hashes[uid] = p.Hash()
	return &p
}

// Run starts the runs whose slot comes, until ctx is done. It wakes at
// the next slot, when a source reports, and every Poll while a run is
// active.
func (s *Scheduler) Run(ctx context.Context) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case <-s.wake:
		}
		wait := s.Sync()
		timer.Stop()
		timer.Reset(wait)
	}
}

// Sync brings every CronJob up to date with the clock: reads its runs'
// status, removes finished runs beyond its history limits, starts or
// holds back its due slot. It returns how long until it should run again.
func (s *Scheduler) Sync() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Clock.Now()
	wait := time.Minute // wall clocks jump: look again at least this often
	dirty := false
	for _, k := range slices.SortedFunc(maps.Keys(s.good), func(a, b fileKey) int {
		return cmp.Or(cmp.Compare(a.source, b.source), cmp.Compare(a.file, b.file))
	}) {
		for _, t := range s.good[k] {
			w, changed := s.syncJob(t, now)
			wait = min(wait, w)
			dirty = dirty || changed
		}
	}
	if dirty {
		s.save()
	}
	s.forgetPods()
	for src := range s.snaps {
		s.emit(src, false)
	}
	return max(wait, 100*time.Millisecond)
}

// syncJob syncs one CronJob; it reports when to look again and whether
// its state changed.
func (s *Scheduler) syncJob(t *pod.Pod, now time.Time) (time.Duration, bool) {
	cj, uid := t.CronJob, t.Metadata.UID
	st := s.state[uid]
	log := s.cfg.Log.With("pod", t.Metadata.Namespace+"/"+cj.Name, "source", st.Source)
	dirty := false
	active := 0
	var finished []Finished
	for i := range st.Runs {
		r := &st.Runs[i]
		if r.Result == "" && s.cfg.Status != nil {
			switch ph := s.cfg.Status.Status(s.runPod(t, r.Slot)).Phase; ph {
			case pod.PhaseSucceeded, pod.PhaseFailed:
				r.Result, dirty = ph, true
				log.Info("cronjob run finished", "job", RunName(cj.Name, r.Slot), "result", ph)
			}
		}
		if r.Result == "" {
			active++
		} else {
			finished = append(finished, Finished{Slot: r.Slot, Succeeded: r.Result == pod.PhaseSucceeded})
		}
	}
	if gone := Prune(cj, finished); len(gone) > 0 {
		st.Runs = slices.DeleteFunc(st.Runs, func(r run) bool { return slices.ContainsFunc(gone, r.Slot.Equal) })
		for _, g := range gone {
			s.event(t, "Normal", "SuccessfulDelete", "Deleted job "+RunName(cj.Name, g))
		}
		dirty = true
	}
	sched, loc, err := s.schedule(cj)
	if err != nil {
		if !s.badTZ[cj.TimeZone] {
			s.badTZ[cj.TimeZone] = true
			log.Error("cronjob not scheduled", "err", err)
			s.event(t, "Warning", "UnknownTimeZone", err.Error())
		}
		return time.Minute, dirty
	}
	if last, created := st.LastSchedule, unknownAfterStep(&st.Created, now); unknownAfterStep(&st.LastSchedule, now) || created {
		log.Info("cronjob: its last schedule time is further ahead of the clock than a correction explains; its slots count from now",
			"lastSchedule", last, "limit", MaxClockStepBack)
		dirty = true
	}
	d := Decide(cj, sched, loc, st.Created, st.LastSchedule, active, now)
	if d.TooMany && s.skipped[uid] != d.Slot {
		s.event(t, "Warning", "TooManyMissedTimes", "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew")
		log.Warn("cronjob: too many missed start times", "missed", fmt.Sprintf("more than %d", cronspec.MaxMissed))
	}
	switch d.Action {
	case Start:
		if d.Replace {
			for _, r := range st.Runs {
				if r.Result == "" {
					s.event(t, "Normal", "SuccessfulDelete", "Deleted job "+RunName(cj.Name, r.Slot))
				}
			}
			st.Runs = slices.DeleteFunc(st.Runs, func(r run) bool { return r.Result == "" })
		}
		if !slices.ContainsFunc(st.Runs, func(r run) bool { return r.Slot.Equal(d.Slot) }) {
			st.Runs = append(st.Runs, run{Slot: d.Slot.UTC()})
		}
		st.LastSchedule = d.Slot.UTC()
		dirty = true
		log.Info("cronjob run started", "job", RunName(cj.Name, d.Slot), "slot", d.Slot)
		s.event(t, "Normal", "SuccessfulCreate", "Created job "+RunName(cj.Name, d.Slot))
		active++
	case TooLate:
		if s.skipped[uid] != d.Slot {
			s.event(t, "Warning", "MissSchedule", "Missed scheduled time to start a job: "+d.Slot.UTC().Format(time.RFC1123Z))
			log.Info("cronjob slot missed: past startingDeadlineSeconds", "slot", d.Slot)
		}
	case Forbidden:
		if s.skipped[uid] != d.Slot {
			s.event(t, "Normal", "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")
			log.Info("cronjob slot held back: a run is active and concurrencyPolicy is Forbid", "slot", d.Slot)
		}
	case Suspended:
		if s.skipped[uid] != d.Slot {
			log.Info("cronjob slot held back: suspended", "slot", d.Slot)
		}
	}
	s.skipped[uid] = d.Slot
	wait := time.Minute
	if !d.Next.IsZero() {
		wait = d.Next.Sub(now)
	}
	if active > 0 {
		wait = min(wait, s.cfg.Poll)
	}
	return wait, dirty
}

// schedule returns cj's parsed schedule and time zone, cached.
func (s *Scheduler) schedule(cj *pod.CronJob) (cronspec.Schedule, *time.Location, error) {
	sched, ok := s.scheds[cj.Schedule]
	if !ok {
		var err error
		if sched, err = cronspec.Parse(cj.Schedule); err != nil {
			return cronspec.Schedule{}, nil, err
		}
		s.scheds[cj.Schedule] = sched
	}
	if cj.TimeZone == "" {
		return sched, time.Local, nil
	}
	loc, ok := s.locs[cj.TimeZone]
	if !ok {
		var err error
		if loc, err = time.LoadLocation(cj.TimeZone); err != nil {
			return cronspec.Schedule{}, nil, fmt.Errorf("time zone %q: %w", cj.TimeZone, err)
		}
		s.locs[cj.TimeZone] = loc
	}
	return sched, loc, nil
}

func (s *Scheduler) event(t *pod.Pod, typ, reason, msg string) {
	if s.cfg.Events != nil {
		s.cfg.Events.Event(t, "", typ, reason, msg)
	}
}

// save writes the state file whole (a warning when it cannot).
func (s *Scheduler) save() {
	if s.cfg.StateFile == "" {
		return
	}
	data, err := json.Marshal(stateFile{CronJobs: s.state})
	if err == nil {
		if err = os.MkdirAll(filepath.Dir(s.cfg.StateFile), 0o700); err == nil {
			err = atomicfile.Write(s.cfg.StateFile, data, 0o600)
		}
	}
	if err != nil {
		s.cfg.Log.Warn("cronjob state not saved", "file", s.cfg.StateFile, "err", err)
	}
}

// unknownAfterStep moves *t to now when it is further ahead of now than
// MaxClockStepBack, and reports whether it did.
func unknownAfterStep(t *time.Time, now time.Time) bool {
	if !t.After(now.Add(MaxClockStepBack)) {
		return false
	}
	*t = now.UTC()
	return true
}
