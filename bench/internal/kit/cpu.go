package kit

import (
	"fmt"
	"time"
)

// ProcSet is one process or a set of like processes (the shims of a
// namespace, say), measured together.
type ProcSet struct {
	Name string
	PIDs []int
}

// CPUWindow measures the CPU time of process sets between StartCPU and
// Stop.
type CPUWindow struct {
	sets   []ProcSet
	ticks  []uint64
	start  time.Time
	clkTck uint64
}

// StartCPU reads the CPU time of every set: the start of the window.
func StartCPU(sets ...ProcSet) (*CPUWindow, error) {
	w := &CPUWindow{sets: sets, clkTck: ClockTicks()}
	for _, s := range sets {
		t, err := SumTicks(s.PIDs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		w.ticks = append(w.ticks, t)
	}
	w.start = time.Now()
	return w, nil
}

// ClockTicks returns the clock ticks per second the window counts in.
func (w *CPUWindow) ClockTicks() uint64 { return w.clkTck }

// Usage is the CPU one process set used over a window.
type Usage struct {
	Set     ProcSet
	Percent float64 // of one core
}

// Stop reads the CPU time of every set again and returns, in the order of
// StartCPU, what each used over the window as % of one core, and the
// window's length.
func (w *CPUWindow) Stop() ([]Usage, time.Duration, error) {
	window := time.Since(w.start)
	out := make([]Usage, 0, len(w.sets))
	for i, s := range w.sets {
		end, err := SumTicks(s.PIDs)
		if err != nil {
			return nil, window, fmt.Errorf("%s: %w", s.Name, err)
		}
		out = append(out, Usage{Set: s, Percent: CPUPercent(end-w.ticks[i], w.clkTck, window)})
	}
	return out, window, nil
}

// CPUPercent is ticks of CPU time over a window, as % of one core.
func CPUPercent(ticks, clkTck uint64, window time.Duration) float64 {
	if clkTck == 0 || window <= 0 {
		return 0
	}
	return 100 * float64(ticks) / float64(clkTck) / window.Seconds()
}
