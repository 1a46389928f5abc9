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
