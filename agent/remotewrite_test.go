package main

import (
	"testing"
	"time"
)

func TestKeepIdle(t *testing.T) {
	for _, tt := range []struct {
		period, want time.Duration
	}{
		{2 * time.Second, 90 * time.Second},
		{2 * time.Minute, 4*time.Minute + 12*time.Second},
		{5 * time.Minute, 10*time.Minute + 30*time.Second},
		{30 * time.Minute, 90 * time.Second}, // the metered heartbeat reconnects
		{time.Hour, 90 * time.Second},
	} {
		if got := keepIdle(tt.period); got != tt.want {
			t.Errorf("keepIdle(%v) = %v, want %v", tt.period, got, tt.want)
		}
	}
}
