package kit

import (
	"testing"
	"time"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestSummarise(t *testing.T) {
	tests := []struct {
		name string
		in   []time.Duration
		want Summary
		str  string
	}{
		{"none", nil, Summary{-1, -1, -1}, "n/a"},
		{"odd", []time.Duration{ms(30), ms(10), ms(20)}, Summary{ms(20), ms(10), ms(30)}, "20 ms (10–30)"},
		{"even: mean of the middle two", []time.Duration{ms(40), ms(10), ms(20), ms(30)}, Summary{ms(25), ms(10), ms(40)}, "25 ms (10–40)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]time.Duration(nil), tt.in...)
			got := Summarise(in)
			if got != tt.want || got.String() != tt.str {
				t.Errorf("Summarise = %+v %q, want %+v %q", got, got, tt.want, tt.str)
			}
			for i := range in {
				if in[i] != tt.in[i] {
					t.Fatal("Summarise sorted its input")
				}
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	ds := []time.Duration{ms(5), ms(1), ms(4), ms(2), ms(3), ms(6), ms(7), ms(8), ms(9), ms(10)}
	tests := []struct {
		q    float64
		want time.Duration
	}{
		{0, ms(1)}, {0.5, ms(6)}, {0.9, ms(10)}, {1, ms(10)}, {2, ms(10)}, {-1, ms(1)},
	}
	for _, tt := range tests {
		if got := Percentile(ds, tt.q); got != tt.want {
			t.Errorf("Percentile(%g) = %v, want %v", tt.q, got, tt.want)
		}
	}
	if got := Percentile(nil, 0.5); got != 0 {
		t.Errorf("Percentile(nil) = %v", got)
	}
	if ds[0] != ms(5) {
		t.Error("Percentile sorted its input")
	}
}

func TestRatio(t *testing.T) {
	tests := []struct {
		a, b float64
		want string
	}{
		{119, 118, "1.01"}, {1873, 1748, "1.07"}, {1, 0, "n/a"}, {-1, 5, "n/a"}, {0, 5, "0.00"},
	}
	for _, tt := range tests {
		if got := RatioString(tt.a, tt.b); got != tt.want {
			t.Errorf("RatioString(%g, %g) = %q, want %q", tt.a, tt.b, got, tt.want)
		}
	}
	if got := DurationRatio(ms(30), -1); got != "n/a" {
		t.Errorf("DurationRatio against an unknown = %q", got)
	}
	if r, ok := Ratio(3, 2); !ok || r != 1.5 {
		t.Errorf("Ratio(3, 2) = %g, %v", r, ok)
	}
}

func TestFormats(t *testing.T) {
	tests := []struct{ got, want string }{
		{MS(ms(119)), "119 ms"},
		{MS(-1), "n/a"},
		{MSNum(1500 * time.Microsecond), "2"},
		{MS2(1234 * time.Microsecond), "1.23 ms"},
		{Verdict(true), "PASS"},
		{Verdict(false), "FAIL"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
