package podplan

import (
	"strings"
	"testing"
	"time"

	"tug/internal/pod"
)

// TestCrashBackoffSequence checks the kubelet's restart delays for a
// container that keeps exiting at once: 0, 10, 20, 40 s ... capped at the
// maximum, and back to 0 after a run of Reset or longer.
func TestCrashBackoffSequence(t *testing.T) {
	var now time.Time // each exit is seen as it happens
	b := &CrashBackoff{Initial: 10 * time.Second, Max: 40 * time.Second, Reset: 10 * time.Minute, Clock: func() time.Time { return now }}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		attempt   int
		ranFor    time.Duration
		wantDelay time.Duration
	}{
		{0, time.Second, 0},
		{1, time.Second, 10 * time.Second},
		{2, time.Second, 20 * time.Second},
		{3, time.Second, 40 * time.Second},
		{4, time.Second, 40 * time.Second}, // capped
		{5, 11 * time.Minute, 0},           // ran long enough: reset
		{6, time.Second, 10 * time.Second},
	}
	at := t0
	for _, tt := range tests {
		rec := &pod.RuntimeContainer{PodUID: "u", Name: "app", Attempt: tt.attempt, StartedAt: at, FinishedAt: at.Add(tt.ranFor)}
		now = rec.FinishedAt
		due := b.Due(rec)
		if got := due.Sub(rec.FinishedAt); got != tt.wantDelay {
			t.Errorf("attempt %d: delay %v, want %v", tt.attempt, got, tt.wantDelay)
		}
		if again := b.Due(rec); !again.Equal(due) {
			t.Errorf("attempt %d: asking again moved the due time %v -> %v", tt.attempt, due, again)
		}
		at = due.Add(time.Second)
	}
	b.Forget("u")
	rec := &pod.RuntimeContainer{PodUID: "u", Name: "app", Attempt: 9, StartedAt: at, FinishedAt: at.Add(time.Second)}
	now = rec.FinishedAt
	if d := b.Due(rec).Sub(rec.FinishedAt); d != 0 {
		t.Errorf("after Forget: delay %v, want 0", d)
	}
}

// TestCrashBackoffClockStep: a back-off counts on the monotonic clock. The
// wall clock stepping after the exit (a year ahead, a day back) neither
// fires the restart early nor holds it back: the due time is the exit's
// delay from when the exit is seen, and a step after that moves nothing.
func TestCrashBackoffClockStep(t *testing.T) {
	const delay = 10 * time.Second
	tests := []struct {
		name     string
		finished time.Duration // the exit's wall time, from the wall clock when Due is first asked
		wantLeft time.Duration // how long from then the restart waits
	}{
		{"seen as it happens", 0, delay},
		{"seen 4s later", -4 * time.Second, delay - 4*time.Second},
		{"the clock stepped a year ahead since: no early restart beyond what it knows", -365 * 24 * time.Hour, 0},
		{"the clock stepped a day back since: the exit is just now, not a day away", 24 * time.Hour, delay},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &CrashBackoff{Initial: delay, Max: time.Minute, Reset: 10 * time.Minute}
			start := time.Now()
			first := &pod.RuntimeContainer{PodUID: "u", Name: "app", Attempt: 0, StartedAt: start.Add(-time.Second), FinishedAt: start}
			b.Due(first)                                     // the first exit restarts at once
			finished := time.Now().Add(tt.finished).Round(0) // containerd's times are wall times
			rec := &pod.RuntimeContainer{PodUID: "u", Name: "app", Attempt: 1, StartedAt: finished.Add(-time.Second), FinishedAt: finished}
			seen := time.Now()
			due := b.Due(rec)
			left := due.Sub(seen) // monotonic: both carry the reading
			if tt.wantLeft == 0 {
				if left > 0 {
					t.Errorf("the restart waits %v, want none (the delay is over as far as tug knows)", left)
				}
				return
			}
			if left < tt.wantLeft-time.Second || left > tt.wantLeft+time.Second {
				t.Errorf("the restart waits %v from when the exit is seen, want %v", left, tt.wantLeft)
			}
			if left > delay+time.Second {
				t.Errorf("the restart waits %v, more than the delay %v", left, delay)
			}
			// A later step of the wall clock: the due time is held on the
			// monotonic clock (the reading Go compares when both times
			// carry one), so the wall value does not decide it.
			if !strings.Contains(due.String(), " m=") {
				t.Errorf("the due time %v carries no monotonic reading", due)
			}
		})
	}
}
