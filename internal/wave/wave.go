// Package wave owns the rollout plan a signed bundle may carry and the
// halt a later bundle may publish: their JSON form and its validation, the
// stable hash that places a device within a share of the fleet, and the
// choice of a device's wave and the time it opens. It decides nothing
// about holding content (windowgate does) and keeps no clock.
//
// A plan is a start time and ordered waves:
//
//	"rollout": {"start": "2026-12-01T08:00:00Z", "waves": [
//	  {"name": "canary", "labels": {"ring": "canary"}},
//	  {"name": "half", "share": 50, "after": "1h"},
//	  {"name": "all", "after": "24h"}]}
//
// A device's wave is the first wave that selects it: all the wave's labels
// match the node's labels, and the device's bucket (Bucket) is below the
// wave's share (a percentage, 0 to 100, with up to two decimals); a wave
// with neither selects every device. Wave i opens at start + after. A
// device that no wave selects never applies that version.
//
// A halt names a version: "halt": {"version": 7, "revert": false}.
//
// It imports the standard library only.
package wave

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ErrBadPlan is the class of every error of Validate and ParseFlag.
var ErrBadPlan = errors.New("wave: bad rollout plan")

// MaxWaves bounds the waves of a plan.
const MaxWaves = 32

// Buckets is the number of buckets of Bucket: a share is counted in
// hundredths of a percent.
const Buckets = 10000

// Plan is a bundle's rollout plan: when it starts and its waves, in order.
type Plan struct {
	Start time.Time `json:"start"`
	Waves []Wave    `json:"waves"`
}

// Wave is one wave of a plan.
type Wave struct {
	// Name names the wave in logs and status ("" : "wave <n>").
	Name string `json:"name,omitempty"`
	// Labels must all match the node's labels (--node-labels and the
	// standard kubernetes.io ones).
	Labels map[string]string `json:"labels,omitempty"`
	// Share is the percentage of the fleet the wave selects (by Bucket);
	// nil: no share condition.
	Share *float64 `json:"share,omitempty"`
	// After is how long after the plan's start the wave opens.
	After Duration `json:"after,omitempty"`
}

// Duration is a time.Duration written as Go writes it ("90s", "1h30m").
type Duration time.Duration

// MarshalJSON writes d as a string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a string that time.ParseDuration reads.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("%w: rollout.waves[].after: want a duration such as \"90m\": %w", ErrBadPlan, err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%w: rollout.waves[].after: %w", ErrBadPlan, err)
	}
	*d = Duration(v)
	return nil
}

// Halt stops the rollout of Version: a device that has not applied it
// keeps what it runs; one that has keeps it too, unless Revert, then it
// applies the halting bundle's own content.
type Halt struct {
	Version uint64 `json:"version"`
	Revert  bool   `json:"revert,omitempty"`
}

// Validate checks a plan; each error names its field ("rollout.waves[1].share").
func (p *Plan) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: rollout.%s: %s", ErrBadPlan, field, fmt.Sprintf(format, args...)))
	}
	if p.Start.IsZero() {
		bad("start", "required (an RFC 3339 time)")
	}
	if len(p.Waves) == 0 {
		bad("waves", "at least one wave")
	}
	if len(p.Waves) > MaxWaves {
		bad("waves", "%d waves, at most %d", len(p.Waves), MaxWaves)
	}
	names := map[string]int{}
	for i, w := range p.Waves {
		f := fmt.Sprintf("waves[%d]", i)
		if w.Name != "" {
			if j, ok := names[w.Name]; ok {
				bad(f+".name", "%q is the name of waves[%d] too", truncate(w.Name, 64), j)
			}
			names[w.Name] = i
			if len(w.Name) > 63 || strings.ContainsAny(w.Name, "\"\n\r\t") {
				bad(f+".name", "at most 63 characters, no quotes or control characters")
			}
		}
		for k := range w.Labels {
			if k == "" || len(k) > 317 {
				bad(f+".labels", "a key is empty or too long")
				break
			}
		}
		if s := w.Share; s != nil && (math.IsNaN(*s) || *s < 0 || *s > 100) {
			bad(f+".share", "%v is not a percentage from 0 to 100", *s)
		}
		if w.After < 0 {
			bad(f+".after", "%s is negative", time.Duration(w.After))
		}
		if i > 0 && w.After < p.Waves[i-1].After {
			bad(f+".after", "%s opens before waves[%d] (%s): waves open in order", time.Duration(w.After), i-1, time.Duration(p.Waves[i-1].After))
		}
	}
	return errors.Join(errs...)
}

// ValidateHalt checks a halt carried by a bundle of version version.
func ValidateHalt(h *Halt, version uint64) error {
	switch {
	case h.Version == 0:
		return fmt.Errorf("%w: halt.version: required (the version to halt)", ErrBadPlan)
	case version != 0 && h.Version >= version:
		return fmt.Errorf("%w: halt.version: %d is not older than this bundle's version %d", ErrBadPlan, h.Version, version)
	}
	return nil
}

// Bucket places a device in one of Buckets buckets for a bundle version:
// the first 8 bytes of SHA-256(node + "\x00" + the version in decimal),
// big-endian, modulo Buckets. The version is part of it so that the same
// device is not always in the first share. A fleet computes it with, for
// example:
//
//	printf '%s\0%s' kiosk-7 42 | sha256sum | cut -c1-16  # then mod 10000
func Bucket(node string, version uint64) int {
	s := sha256.Sum256([]byte(node + "\x00" + strconv.FormatUint(version, 10)))
	return int(binary.BigEndian.Uint64(s[:8]) % Buckets)
}

// Selects reports whether w selects a node with labels whose bucket is b.
func (w *Wave) Selects(labels map[string]string, b int) bool {
	for k, v := range w.Labels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return w.Share == nil || b < int(math.Round(*w.Share*100))
}

// Assignment is a device's place in a plan.
type Assignment struct {
	// Index is the wave's number from 1; 0 when no wave selects the device.
	Index int
	// Name is the wave's name ("wave <Index>" when it has none).
	Name string
	// Opens is when the wave opens (zero when Index is 0).
	Opens time.Time
	// Bucket is the device's bucket for the version.
	Bucket int
}

// Choose returns the wave of the node with labels in p, for the bundle's
// version.
func (p *Plan) Choose(node string, labels map[string]string, version uint64) Assignment {
	a := Assignment{Bucket: Bucket(node, version)}
	for i := range p.Waves {
		w := &p.Waves[i]
		if w.Selects(labels, a.Bucket) {
			a.Index, a.Name, a.Opens = i+1, w.Name, p.Start.Add(time.Duration(w.After))
			if a.Name == "" {
				a.Name = fmt.Sprintf("wave %d", i+1)
			}
			return a
		}
	}
	return a
}

// String says where the device is: `wave 2 "half" opens at <RFC 3339>`, or
// that no wave selects it.
func (a Assignment) String() string {
	if a.Index == 0 {
		return fmt.Sprintf("in no wave (bucket %d of %d): never applies this version", a.Bucket, Buckets)
	}
	return fmt.Sprintf("wave %d %q, opens at %s", a.Index, a.Name, a.Opens.UTC().Format(time.RFC3339))
}

// ParseFlag parses one wave as the CLI writes it: comma-separated
// key=value items, keys name, share, after and labels (repeatable, its
// value a key=value label): "name=canary,labels=ring=canary,after=0s".
func ParseFlag(s string) (Wave, error) {
	var w Wave
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, v, ok := strings.Cut(item, "=")
		if !ok {
			return w, fmt.Errorf("%w: wave %q: %q is not key=value", ErrBadPlan, s, item)
		}
		switch k {
		case "name":
			w.Name = v
		case "labels", "label":
			lk, lv, ok := strings.Cut(v, "=")
			if !ok || lk == "" {
				return w, fmt.Errorf("%w: wave %q: labels=%s: want labels=key=value", ErrBadPlan, s, v)
			}
			if w.Labels == nil {
				w.Labels = map[string]string{}
			}
			w.Labels[lk] = lv
		case "share":
			f, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
			if err != nil {
				return w, fmt.Errorf("%w: wave %q: share=%s: want a percentage", ErrBadPlan, s, v)
			}
			w.Share = &f
		case "after":
			d, err := time.ParseDuration(v)
			if err != nil {
				return w, fmt.Errorf("%w: wave %q: after=%s: %w", ErrBadPlan, s, v, err)
			}
			w.After = Duration(d)
		default:
			return w, fmt.Errorf("%w: wave %q: unknown key %q (name, labels, share, after)", ErrBadPlan, s, k)
		}
	}
	return w, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
