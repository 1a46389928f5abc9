package main

import (
	"math"
	"testing"
)

func TestQuantile(t *testing.T) {
	inf := math.Inf(1)
	bounds := []float64{0.001, 0.002, 0.005, inf}
	tests := []struct {
		name        string
		q           float64
		counts      []float64
		value, high float64
	}{
		{"in the first bucket, from 0", 0.5, []float64{100, 100, 100, 100}, 0.0005, 0.001},
		{"interpolated in the second bucket", 0.5, []float64{0, 100, 100, 100}, 0.0015, 0.002},
		{"p99 at the top of a bucket", 0.99, []float64{0, 99, 100, 100}, 0.002, 0.002},
		{"p99 in the third bucket", 0.99, []float64{50, 90, 100, 100}, 0.0047, 0.005},
		{"in +Inf: not available", 0.99, []float64{0, 0, 0, 100}, math.NaN(), math.NaN()},
		{"no observations", 0.99, []float64{0, 0, 0, 0}, math.NaN(), math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, b := quantile(tt.q, bounds, tt.counts)
			if !near(v, tt.value) || !near(b, tt.high) {
				t.Errorf("quantile(%v) = %v, %v; want %v, %v", tt.q, v, b, tt.value, tt.high)
			}
		})
	}
}

func near(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) < 1e-9
}
