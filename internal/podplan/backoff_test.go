package podplan

import (
	"testing"
	"time"

	"tug/internal/pod"
)

// TestCrashBackoffSequence checks the kubelet's restart delays for a
// container that keeps exiting at once: 0, 10, 20, 40 s ... capped at the
// maximum, and back to 0 after a run of Reset or longer.
func TestCrashBackoffSequence(t *testing.T) {
	b := &CrashBackoff{Initial: 10 * time.Second, Max: 40 * time.Second, Reset: 10 * time.Minute}
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
	if d := b.Due(rec).Sub(rec.FinishedAt); d != 0 {
		t.Errorf("after Forget: delay %v, want 0", d)
	}
}
