package selfupdate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"tug/internal/atomicfile"
	"tug/internal/wave"
)

// The states of a self-update, as tug_self_update_state and the status
// document name them.
const (
	StateIdle        = "idle"
	StateDownloading = "downloading"
	StateWaiting     = "waiting"
	StateTrial       = "trial"
	StateCommitted   = "committed"
	StateReverted    = "reverted"
	StateHalted      = "halted"
)

// States lists every state, in the order of the metric's series.
var States = []string{StateIdle, StateDownloading, StateWaiting, StateTrial, StateCommitted, StateReverted, StateHalted}

// State is what the state file keeps.
type State struct {
	// Committed is the release version of the good binary; 0 for the
	// installed binary. A release at or below it is never installed.
	Committed uint64 `json:"committed,omitempty"`
	// Good is the slot of the good binary ("a" or "b"); "" for the
	// installed binary.
	Good string `json:"good,omitempty"`
	// Trial is the release on trial, nil when none is.
	Trial *Trial `json:"trial,omitempty"`
	// Broken are the releases reverted on this device, with the reason:
	// none of them is ever installed again.
	Broken map[uint64]string `json:"broken,omitempty"`
	// Last is the outcome of the latest release tried.
	Last *Outcome `json:"last,omitempty"`
	// Reverted counts the reverts on this device
	// (tug_self_update_reverted_total).
	Reverted uint64 `json:"reverted,omitempty"`
}

// Trial is a release installed and switched to, not yet committed.
type Trial struct {
	Version uint64 `json:"version"`
	Slot    string `json:"slot"`
	// Launches counts the guard's launches of the release.
	Launches int `json:"launches"`
	// Printed is what the binary's "tug version" printed.
	Printed string `json:"printed,omitempty"`
}

// Outcome is what became of a release.
type Outcome struct {
	Version uint64    `json:"version"`
	State   string    `json:"state"`
	Reason  string    `json:"reason,omitempty"`
	Printed string    `json:"printed,omitempty"`
	At      time.Time `json:"at,omitzero"`
}

// Wait is the release the source serves when the updater does not switch
// to it now, and why (not persisted: a restart fetches the release again).
type Wait struct {
	// State is StateWaiting (installed ahead into Slot, waiting for the
	// device's wave or the update window), StateHalted (the release halts
	// a rollout: Version is the halted version) or StateIdle (no wave of
	// the release's plan selects the device).
	State   string
	Version uint64
	// Wave is the device's wave in the release's plan (Index 0: none).
	Wave wave.Assignment
	// Opens is when a waiting release is switched to next (zero: never).
	Opens time.Time
	Slot  string
	// Reason says why, in a sentence.
	Reason string
}

// clone returns a deep copy of s.
func (s State) clone() State {
	c := s
	if s.Trial != nil {
		t := *s.Trial
		c.Trial = &t
	}
	if s.Last != nil {
		l := *s.Last
		c.Last = &l
	}
	c.Broken = make(map[uint64]string, len(s.Broken))
	for k, v := range s.Broken {
		c.Broken[k] = v
	}
	return c
}

// markBroken records v as reverted for reason.
func (s *State) markBroken(v uint64, reason, printed string, now time.Time) {
	if s.Broken == nil {
		s.Broken = map[uint64]string{}
	}
	s.Broken[v] = reason
	s.Last = &Outcome{Version: v, State: StateReverted, Reason: reason, Printed: printed, At: now}
	s.Reverted++
	s.Trial = nil
}

// ReadState reads a state file. A missing file is the zero state; a
// damaged one is the zero state and an error (the caller warns): the
// installed binary then runs, which starts.
func ReadState(path string) (State, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return State{}, nil
	}
	if err != nil {
		return State{}, fmt.Errorf("selfupdate: state: %w", err)
	}
	var s State
	if err := json.Unmarshal(data, &s); err != nil {
		return State{}, fmt.Errorf("selfupdate: state %s: %w", path, err)
	}
	if (s.Good != "" && !validSlot(s.Good)) || (s.Trial != nil && !validSlot(s.Trial.Slot)) {
		return State{}, fmt.Errorf("selfupdate: state %s: bad slot", path)
	}
	return s, nil
}

// WriteState writes a state file whole.
func WriteState(path string, s State) error {
	data, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("selfupdate: state: %w", err)
	}
	return atomicfile.Write(path, data, 0o600)
}

// Store is the state file of a running tug: the updater, the trial and
// the reporters share it. It is safe for concurrent use.
type Store struct {
	path string
	mu   sync.Mutex
	st   State
	// downloading is set while the updater fetches and installs a
	// release (not persisted).
	downloading bool
	// wait is the release the updater does not switch to now.
	wait *Wait
}

// NewStore returns the store of the state file at path, with st read
// from it.
func NewStore(path string, st State) *Store { return &Store{path: path, st: st} }

// Get returns a copy of the state.
func (s *Store) Get() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.clone()
}

// Update applies f to a copy of the state and writes it; on error the
// state is unchanged.
func (s *Store) Update(f func(*State)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.st.clone()
	f(&c)
	if err := WriteState(s.path, c); err != nil {
		return err
	}
	s.st = c
	return nil
}

func (s *Store) setDownloading(b bool) {
	s.mu.Lock()
	s.downloading = b
	s.mu.Unlock()
}

func (s *Store) setWait(w *Wait) {
	s.mu.Lock()
	s.wait = w
	s.mu.Unlock()
}

// Wait returns the release the updater does not switch to now; nil when
// there is none.
func (s *Store) Wait() *Wait {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wait == nil {
		return nil
	}
	w := *s.wait
	return &w
}

// Current is the state tug_self_update_state reports: downloading while
// an admitted release is written and checked, trial while one is on
// trial, then the served release's wait (waiting, halted, or idle when no
// wave selects the device), then the last outcome (committed or
// reverted), idle before any.
func (s *Store) Current() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.st.Trial != nil:
		return StateTrial
	case s.downloading:
		return StateDownloading
	case s.wait != nil:
		return s.wait.State
	case s.st.Last != nil:
		return s.st.Last.State
	}
	return StateIdle
}
