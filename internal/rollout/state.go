package rollout

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"tug/internal/atomicfile"
	"tug/internal/pod"
)

// Outcomes of a spec, in the history.
const (
	OutcomeProgressing = "Progressing"
	OutcomeSucceeded   = "Succeeded"
	OutcomeRolledBack  = "RolledBack"
	OutcomeFailed      = "Failed" // failed with no good spec to return to
	OutcomeSuperseded  = "Superseded"
)

// historySize is how many specs a pod's history keeps.
const historySize = 10

// Entry is one spec in a pod's history.
type Entry = pod.RolloutEntry

// record is the persisted state of one pod.
type record struct {
	UID    string `json:"uid"`
	Name   string `json:"name"` // namespace/name
	Source string `json:"source"`

	// Good is the last good spec and GoodHash its hash (with its bound
	// objects' digest, as the store computes it).
	Good     *savedPod `json:"good,omitempty"`
	GoodHash string    `json:"goodHash,omitempty"`

	// Watch is the hash of the spec being watched, since WatchSince,
	// started during boot WatchBoot. Base holds each container's attempt
	// when first seen created from this spec (restarts count from it), and
	// CurrentSince when every container was first seen created from it.
	Watch      string    `json:"watch,omitempty"`
	WatchSince time.Time `json:"watchSince,omitzero"`
	WatchBoot  string    `json:"watchBoot,omitempty"`
	// WatchBoots counts the reboots the watch has been open across.
	WatchBoots int `json:"watchBoots,omitempty"`
	// File is the manifest file (or URL) the watched spec comes from. When
	// that file is atomic, FileContent and FileVersion are its applied
	// content while the watch is open: what a reboot returns as a unit.
	File         string         `json:"file,omitempty"`
	FileContent  string         `json:"fileContent,omitempty"`
	FileVersion  uint64         `json:"fileVersion,omitempty"`
	Base         map[string]int `json:"base,omitempty"`
	CurrentSince time.Time      `json:"currentSince,omitzero"`
	// ReadyAt is when the pod was first seen Ready with every container
	// created from the watched spec: from then on the rollout timeout no
	// longer applies, and the min-ready window watches for restarts.
	ReadyAt time.Time `json:"readyAt,omitzero"`

	// Failed is the hash of the spec that failed, held back while the
	// source wants it; Reason says why and FailedAt when.
	Failed   string    `json:"failed,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	FailedAt time.Time `json:"failedAt,omitzero"`
	// RolledBack reports whether the failure was rolled back (false: there
	// was no good spec to return to).
	RolledBack bool `json:"rolledBack,omitempty"`

	History []Entry `json:"history,omitempty"`
}

// savedPod is a pod as persisted: its JSON form drops the bookkeeping
// fields, kept here beside it, and the objects it was bound to.
type savedPod struct {
	Pod          *pod.Pod      `json:"pod"`
	ManifestName string        `json:"manifestName"`
	Source       string        `json:"source"`
	Objects      []*pod.Object `json:"objects,omitempty"`
	Missing      []pod.Ref     `json:"missing,omitempty"`
}

func save(p *pod.Pod) *savedPod {
	s := &savedPod{Pod: p, ManifestName: p.Metadata.ManifestName, Source: p.Metadata.Source}
	if p.Bound != nil {
		for _, o := range p.Bound.Objects {
			s.Objects = append(s.Objects, o)
		}
		slices.SortFunc(s.Objects, func(a, b *pod.Object) int { return strings.Compare(a.Key().String(), b.Key().String()) })
		s.Missing = p.Bound.Missing
	}
	return s
}

// restore returns the saved pod with its bookkeeping and bound objects.
func (s *savedPod) restore() *pod.Pod {
	cp := *s.Pod
	cp.Metadata.ManifestName, cp.Metadata.Source = s.ManifestName, s.Source
	if len(s.Objects) > 0 || len(s.Missing) > 0 {
		b := &pod.Bound{Objects: map[pod.ObjectKey]*pod.Object{}, Missing: s.Missing}
		for _, o := range s.Objects {
			b.Objects[o.Key()] = o
		}
		cp.Bound = b
	}
	return &cp
}

// restartWatch starts the watch of r's spec over, as of now on boot: the
// timeout counts again, and restarts count from the next attempts.
func (r *record) restartWatch(boot string, now time.Time) {
	r.WatchSince, r.WatchBoot, r.Base, r.CurrentSince, r.ReadyAt = now, boot, nil, time.Time{}, time.Time{}
}

// clone returns a copy of r that shares nothing it may change.
func (r *record) clone() *record {
	cp := *r
	cp.Base = maps.Clone(r.Base)
	cp.History = slices.Clone(r.History)
	return &cp
}

func (r *record) addHistory(e Entry) {
	r.History = append(r.History, e)
	if n := len(r.History); n > historySize {
		r.History = slices.Clone(r.History[n-historySize:])
	}
}

// endHistory sets the outcome of the newest entry for hash, if it is
// still progressing; a hash with no entry (failed with its file before it
// was watched) gets one.
func (r *record) endHistory(hash, outcome, reason string, now time.Time) {
	for i := len(r.History) - 1; i >= 0; i-- {
		if e := &r.History[i]; e.Hash == hash {
			if e.Outcome == OutcomeProgressing {
				e.Outcome, e.Reason, e.Ended = outcome, reason, now
			}
			return
		}
	}
	r.addHistory(Entry{Hash: hash, Applied: now, Outcome: outcome, Reason: reason, Ended: now})
}

// blocked sets the reason of hash's Progressing entry to why the spec
// cannot run while it waits ("ImagePullBackOff: main: ..." from failure
// and msg; the old containers keep running), or clears it once failure is
// "". It reports whether the entry changed: only a change of the failure
// reason counts, so a retried pull whose error text varies is not saved
// again each time.
func (r *record) blocked(hash, failure, msg string) bool {
	want := ""
	if failure != "" {
		want = failure + ": " + msg
	}
	for i := len(r.History) - 1; i >= 0; i-- {
		e := &r.History[i]
		if e.Hash != hash {
			continue
		}
		code, _, _ := strings.Cut(e.Reason, ":")
		if e.Outcome != OutcomeProgressing || (code == failure && (e.Reason == "") == (want == "")) {
			return false
		}
		e.Reason = want
		return true
	}
	return false
}

// files persists records, one JSON file per pod UID under dir.
type files struct{ dir string }

func (f files) path(uid string) string { return filepath.Join(f.dir, uid+".json") }

// load reads every record; a file that does not read is reported and
// skipped (the pod then starts with no rollout state).
func (f files) load() (map[string]*record, []error) {
	out := map[string]*record{}
	errs := readJSONDir(f.dir, func(name string, data []byte) error {
		var r record
		if err := json.Unmarshal(data, &r); err != nil {
			return err
		}
		if r.UID+".json" != name || (r.Good != nil && r.Good.Pod == nil) {
			return errors.New("not a rollout record")
		}
		out[r.UID] = &r
		return nil
	})
	return out, errs
}

// readJSONDir calls decode with the name and content of every *.json file
// in dir (none when dir does not exist) and returns what failed, naming
// the file.
func readJSONDir(dir string, decode func(name string, data []byte) error) []error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return []error{fmt.Errorf("read rollout state: %w", err)}
	}
	var errs []error
	for _, e := range ents {
		name := e.Name()
		if e.Type().IsRegular() && strings.HasPrefix(name, ".") && strings.Contains(name, ".json.tmp-") {
			os.Remove(filepath.Join(dir, name)) // atomicfile's, of a write cut short
			continue
		}
		if !e.Type().IsRegular() || !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".") {
			continue
		}
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if err != nil {
			errs = append(errs, &FileError{Path: path, Err: err})
			continue
		}
		if err := decode(name, data); err != nil {
			// Damaged (a power cut, a bad disk): what it said is lost
			// either way, and removing it keeps the next start quiet.
			if rerr := os.Remove(path); rerr == nil {
				err = fmt.Errorf("%w (removed)", err)
				_ = atomicfile.SyncDir(dir)
			}
			errs = append(errs, &FileError{Path: path, Err: err})
		}
	}
	return errs
}

// FileError is a rollout state file that could not be read.
type FileError struct {
	Path string
	Err  error
}

func (e *FileError) Error() string { return "rollout state " + e.Path + ": " + e.Err.Error() }
func (e *FileError) Unwrap() error { return e.Err }

// store writes r atomically, readable by root only: a spec may carry
// Secret data.
func (f files) store(r *record) error {
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode rollout state: %w", err)
	}
	return writeAtomic(f.dir, r.UID+".json", data)
}

// writeAtomic writes data to dir/name through a temporary file, synced
// and renamed into place, readable by root only.
func writeAtomic(dir, name string, data []byte) error {
	if err := atomicfile.Write(filepath.Join(dir, name), data, 0o600); err != nil {
		return fmt.Errorf("write rollout state: %w", err)
	}
	return nil
}

func (f files) remove(uid string) error {
	if err := os.Remove(f.path(uid)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove rollout state: %w", err)
	}
	return nil
}
