package eviction

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"tug/internal/pod"
)

// Signal names what a threshold watches, with the kubelet's names.
type Signal string

// The signals tug observes.
const (
	SignalMemoryAvailable   Signal = "memory.available"
	SignalNodeFsAvailable   Signal = "nodefs.available"
	SignalNodeFsInodesFree  Signal = "nodefs.inodesFree"
	SignalImageFsAvailable  Signal = "imagefs.available"
	SignalImageFsInodesFree Signal = "imagefs.inodesFree"
	SignalPIDAvailable      Signal = "pid.available"
)

// signalOrder is the order in which met thresholds are acted on: memory
// first (the kubelet's evictionSignalToPriority puts memory before disk).
var signalOrder = []Signal{SignalMemoryAvailable, SignalNodeFsAvailable, SignalNodeFsInodesFree, SignalImageFsAvailable, SignalImageFsInodesFree, SignalPIDAvailable}

// resource is the name of what a signal is short of, as the kubelet's
// eviction messages spell it.
var resource = map[Signal]string{
	SignalMemoryAvailable:   "memory",
	SignalNodeFsAvailable:   "ephemeral-storage",
	SignalNodeFsInodesFree:  "inodes",
	SignalImageFsAvailable:  "ephemeral-storage",
	SignalImageFsInodesFree: "inodes",
	SignalPIDAvailable:      "pids",
}

// DefaultHard is the kubelet's default --eviction-hard on Linux plus
// pid.available<10%: the kubelet documents pid.available but sets no
// default for it, and a device whose pods exhaust the node's pids can no
// longer start anything, tug's own processes included. Its memory.available
// follows the node's memory (DefaultMemoryShare). As in the kubelet,
// DefaultHard applies only when --eviction-hard is not given at all: a
// value given replaces all of it.
const DefaultHard = "memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%,imagefs.available<15%,pid.available<10%"

// DefaultMemoryShare and DefaultMemoryFloor bound the default
// memory.available threshold by the node's memory: the kubelet's 100Mi is
// made for servers, and on a device with 256 MiB (about 200 MiB after the
// kernel) it is half of what there is, met by ten idle pods, so the
// eviction manager would evict pods that fit. The threshold is 10% of the
// memory, but not under 48Mi: near 30 MiB available, on a device with
// 256 MiB, the kernel already drops the pages of the running programs (tug,
// containerd, the shims, systemd) and reads them back, and the device
// stalls before tug can act; 48Mi leaves tug the time of a few passes. So:
// 100Mi from 1 GiB of memory up, about 51 MiB on 512 MiB, 48 MiB on 256 MiB.
const (
	DefaultMemoryShare = 0.10
	DefaultMemoryFloor = 48 << 20
)

// Threshold is one parsed threshold: the signal is met when what is
// available falls below Quantity bytes (or count), or below Percentage of
// the capacity when Quantity is 0. With both (the default memory.available)
// it is Percentage of the capacity, at least Floor and at most Quantity.
type Threshold struct {
	Signal      Signal
	Quantity    int64
	Percentage  float64 // 0..1
	Floor       int64
	GracePeriod time.Duration
	Hard        bool
}

// value returns the threshold in the signal's unit for a capacity.
func (t Threshold) value(capacity int64) int64 {
	share := int64(t.Percentage * float64(capacity))
	switch {
	case t.Quantity > 0 && t.Percentage > 0:
		return min(t.Quantity, max(t.Floor, share))
	case t.Quantity > 0:
		return t.Quantity
	}
	return share
}

// String prints the threshold in the flag syntax; one with both bounds as
// "signal<min(quantity,max(floor,percent%))".
func (t Threshold) String() string {
	pct := strconv.FormatFloat(t.Percentage*100, 'f', -1, 64) + "%"
	switch {
	case t.Quantity > 0 && t.Percentage > 0:
		return fmt.Sprintf("%s<min(%s,max(%s,%s))", t.Signal, formatQuantity(t.Signal, t.Quantity), formatQuantity(t.Signal, t.Floor), pct)
	case t.Quantity > 0:
		return fmt.Sprintf("%s<%s", t.Signal, formatQuantity(t.Signal, t.Quantity))
	}
	return fmt.Sprintf("%s<%s", t.Signal, pct)
}

// ParseThresholds parses the kubelet's --eviction-hard, --eviction-soft and
// --eviction-soft-grace-period values (comma-separated; thresholds
// "signal<quantity" or "signal<percent%", grace periods "signal=duration").
// An empty hard is DefaultHard, its memory.available bounded by
// DefaultMemoryShare and DefaultMemoryFloor; "none" means no hard threshold. Every soft
// threshold needs a grace period and every grace period a soft threshold.
func ParseThresholds(hard, soft, grace string) ([]Threshold, error) {
	byDefault := hard == ""
	if byDefault {
		hard = DefaultHard
	}
	if hard == "none" {
		hard = ""
	}
	out, err := parseList(hard, true)
	if err != nil {
		return nil, fmt.Errorf("--eviction-hard: %w", err)
	}
	for i := range out {
		if byDefault && out[i].Signal == SignalMemoryAvailable {
			out[i].Percentage, out[i].Floor = DefaultMemoryShare, DefaultMemoryFloor
		}
	}
	softs, err := parseList(soft, false)
	if err != nil {
		return nil, fmt.Errorf("--eviction-soft: %w", err)
	}
	graces := map[Signal]time.Duration{}
	for item := range splitList(grace) {
		name, val, ok := strings.Cut(item, "=")
		sig := Signal(strings.TrimSpace(name))
		if !ok || resource[sig] == "" {
			return nil, fmt.Errorf("--eviction-soft-grace-period: %w: %q", ErrInvalidThreshold, item)
		}
		d, err := time.ParseDuration(strings.TrimSpace(val))
		if err != nil || d < 0 {
			return nil, fmt.Errorf("--eviction-soft-grace-period: %w: %q", ErrInvalidThreshold, item)
		}
		graces[sig] = d
	}
	for i := range softs {
		d, ok := graces[softs[i].Signal]
		if !ok {
			return nil, fmt.Errorf("--eviction-soft: %w: %s has no grace period", ErrInvalidThreshold, softs[i].Signal)
		}
		softs[i].GracePeriod = d
		delete(graces, softs[i].Signal)
	}
	for sig := range graces {
		return nil, fmt.Errorf("--eviction-soft-grace-period: %w: %s has no soft threshold", ErrInvalidThreshold, sig)
	}
	return append(out, softs...), nil
}

func splitList(s string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for item := range strings.SplitSeq(s, ",") {
			if item = strings.TrimSpace(item); item != "" && !yield(item) {
				return
			}
		}
	}
}

func parseList(s string, hard bool) ([]Threshold, error) {
	var out []Threshold
	for item := range splitList(s) {
		name, val, ok := strings.Cut(item, "<")
		sig := Signal(strings.TrimSpace(name))
		val = strings.TrimSpace(val)
		if !ok || resource[sig] == "" {
			return nil, fmt.Errorf("%w: %q (want signal<quantity with a signal of %v)", ErrInvalidThreshold, item, signalOrder)
		}
		if slices.ContainsFunc(out, func(t Threshold) bool { return t.Signal == sig }) {
			return nil, fmt.Errorf("%w: %s given twice", ErrInvalidThreshold, sig)
		}
		t := Threshold{Signal: sig, Hard: hard}
		if pct, ok := strings.CutSuffix(val, "%"); ok {
			f, err := strconv.ParseFloat(pct, 64)
			if err != nil || f <= 0 || f > 100 {
				return nil, fmt.Errorf("%w: %q (a percentage in (0,100])", ErrInvalidThreshold, item)
			}
			t.Percentage = f / 100
		} else {
			q, err := pod.ParseQuantity(val)
			if err != nil || q.Value() <= 0 {
				return nil, fmt.Errorf("%w: %q (a positive quantity)", ErrInvalidThreshold, item)
			}
			t.Quantity = q.Value()
		}
		out = append(out, t)
	}
	slices.SortStableFunc(out, func(a, b Threshold) int {
		return cmp.Compare(slices.Index(signalOrder, a.Signal), slices.Index(signalOrder, b.Signal))
	})
	return out, nil
}

// formatQuantity prints an amount the way a Kubernetes quantity does:
// bytes in the largest binary unit that divides them, counts plainly.
func formatQuantity(sig Signal, v int64) string {
	if r := resource[sig]; r != "memory" && r != "ephemeral-storage" {
		return strconv.FormatInt(v, 10)
	}
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"Ti", 1 << 40}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}} {
		if v != 0 && v%u.size == 0 {
			return strconv.FormatInt(v/u.size, 10) + u.suffix
		}
	}
	if v > 1<<10 {
		return strconv.FormatInt(v/(1<<10), 10) + "Ki"
	}
	return strconv.FormatInt(v, 10)
}

// Reserve returns the bytes (or count) that the thresholds of the given
// signals, hard and soft, keep available on a filesystem of capacity: the
// largest of them, 0 when none watches it. An image pull must leave the
// image filesystem this much (images.Room), or it would meet a threshold
// and evict the pods it was to update.
func Reserve(th []Threshold, capacity int64, signals ...Signal) int64 {
	var r int64
	for _, t := range th {
		if slices.Contains(signals, t.Signal) {
			r = max(r, t.value(capacity))
		}
	}
	return r
}
