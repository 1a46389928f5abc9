package pod

import (
	"fmt"
	"strconv"
	"time"
)

// The annotations of a pod's rollout.
const (
	// AnnotationRolloutTimeout holds how long an update of the pod may
	// take to become Ready, as a Go duration ("90s"); "0" turns rollback
	// off for the pod.
	AnnotationRolloutTimeout = "tug.io/rollout-timeout"
	// AnnotationRolloutMaxRestarts holds how many restarts an update may
	// cause before it fails.
	AnnotationRolloutMaxRestarts = "tug.io/rollout-max-restarts"
)

// ParseRolloutTimeout reads a tug.io/rollout-timeout value: a Go duration
// ("90s", "5m") or "0" (no rollback).
func ParseRolloutTimeout(v string) (time.Duration, error) {
	if v == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("want a Go duration such as \"90s\", or \"0\" to turn rollback off; got %q", v)
	}
	return d, nil
}

// ParseRolloutMaxRestarts reads a tug.io/rollout-max-restarts value: a
// number from 0.
func ParseRolloutMaxRestarts(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("want a number from 0; got %q", v)
	}
	return n, nil
}

// RolloutEntry is one spec of a pod in its rollout history (`tug history`):
// its hash, when tug started to apply it, and what became of it:
// Progressing, Succeeded (it became the last good spec), RolledBack,
// Failed (with no good spec to return to) or Superseded (a newer spec
// came first).
type RolloutEntry struct {
	Hash    string    `json:"hash"`
	Applied time.Time `json:"applied"`
	Outcome string    `json:"outcome"`
	Reason  string    `json:"reason,omitempty"`
	Ended   time.Time `json:"ended,omitzero"`
}

// RolloutHistory is the rollout state of one pod (GET
// /pods/{namespace}/{name}/history): its last good spec, the spec held
// back and why, and its last specs, oldest first.
type RolloutHistory struct {
	UID      string         `json:"uid"`
	Pod      string         `json:"pod"`
	GoodHash string         `json:"goodHash,omitempty"`
	Failed   string         `json:"failed,omitempty"`
	Reason   string         `json:"reason,omitempty"`
	Entries  []RolloutEntry `json:"entries"`
}
