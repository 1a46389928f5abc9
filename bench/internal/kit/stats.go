package kit

import (
	"fmt"
	"slices"
	"time"
)

// Summary is the median, minimum and maximum of some durations; all -1
// when there are none.
type Summary struct{ Med, Min, Max time.Duration }

// Summarise returns the median (the mean of the middle two of an even
// count), minimum and maximum of ds.
func Summarise(ds []time.Duration) Summary {
	if len(ds) == 0 {
		return Summary{-1, -1, -1}
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	med := ds[len(ds)/2]
	if len(ds)%2 == 0 {
		med = (ds[len(ds)/2-1] + ds[len(ds)/2]) / 2
	}
	return Summary{Med: med, Min: ds[0], Max: ds[len(ds)-1]}
}

// String is "123 ms (100–150)", or "n/a".
func (s Summary) String() string {
	if s.Med < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%s (%s–%s)", MS(s.Med), MSNum(s.Min), MSNum(s.Max))
}

// Percentile returns the element of rank floor(q*len) of the sorted ds (the
// largest for q >= 1), 0 for none. benchnet's "median" is Percentile 0.5:
// for an even count the upper of the middle two, not their mean.
func Percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[max(0, min(len(s)-1, int(q*float64(len(s)))))]
}

// Ratio returns a / b, false when either is unknown (negative) or b is 0:
// a figure against its baseline measured in the same run.
func Ratio(a, b float64) (float64, bool) {
	if a < 0 || b <= 0 {
		return 0, false
	}
	return a / b, true
}

// RatioString formats Ratio to two decimals, "n/a" when there is none.
func RatioString(a, b float64) string {
	r, ok := Ratio(a, b)
	if !ok {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", r)
}

// DurationRatio is RatioString of two durations (-1: unknown).
func DurationRatio(a, b time.Duration) string { return RatioString(float64(a), float64(b)) }

// MS formats a duration as whole milliseconds ("123 ms"), "n/a" when
// negative.
func MS(d time.Duration) string {
	if d < 0 {
		return "n/a"
	}
	return MSNum(d) + " ms"
}

// MSNum is MS without the unit.
func MSNum(d time.Duration) string { return fmt.Sprintf("%.0f", float64(d)/float64(time.Millisecond)) }

// MS2 formats a duration in milliseconds with two decimals ("0.42 ms"),
// for the sub-millisecond figures.
func MS2(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

// Verdict is "PASS" or "FAIL".
func Verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}
