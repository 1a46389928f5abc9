package clock

import (
	"testing"
	"time"
)

func TestNow(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name  string
		clock Clock
		check func(time.Time) bool
	}{
		{"zero is the system clock", nil, func(got time.Time) bool { return time.Since(got).Abs() < time.Minute }},
		{"injected", func() time.Time { return t0 }, func(got time.Time) bool { return got.Equal(t0) }},
		{"time.Now", time.Now, func(got time.Time) bool { return time.Since(got).Abs() < time.Minute }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.clock.Now(); !tt.check(got) {
				t.Errorf("Now() = %v", got)
			}
		})
	}
}

func TestAnchor(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name string
		t    time.Time
		want time.Duration // t's distance from now after Anchor
	}{
		{"an hour ago", now.Add(-time.Hour).Round(0), -time.Hour},
		{"a little ahead, within the tolerance", now.Add(5 * time.Second).Round(0), 5 * time.Second},
		{"a day ahead: unknown, counts from now", now.Add(24 * time.Hour).Round(0), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Anchor(now, tt.t, 10*time.Second)
			if d := got.Sub(now); d != tt.want {
				t.Errorf("Anchor: %v from now, want %v", d, tt.want)
			}
			if got.Round(0) == got { // no monotonic reading
				t.Errorf("Anchor(%v) = %v carries no monotonic reading", tt.t, got)
			}
		})
	}
	if got := Anchor(now, time.Time{}, time.Second); !got.IsZero() {
		t.Errorf("Anchor(zero) = %v", got)
	}
}
