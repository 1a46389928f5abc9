// Package clock owns how tug's packages read the time for their logic: one
// small type, Clock, injected wherever a decision or a recorded time depends
// on "now" (back-off, status and event times, health, expiry), so that a
// test sets the time instead of sleeping.
//
// The rule, across packages (docs/decisions.md, "Vocabulary"): a package
// whose logic reads the time takes a Clock (a Config field, or an option)
// and calls its Now method; the zero Clock is the system clock, so a
// component built without one runs on real time and needs no default. Code
// that only waits (timers and tickers of Run loops, a debounce) uses the time
// package directly, and its tests use testing/synctest, which fakes both.
// time.Now in a log line, in agent/ (the CLI's display) or in tests is fine.
//
// Anchor is the other half of the rule: a time read back from a file is a
// wall time, which a step of the clock (NTP after a boot at 1970, or
// correcting a clock a year ahead) moves; anchored to a reading of now, a
// duration counted from it is on the monotonic clock, and one in the
// future is taken as unknown ("from now"), never as "not yet".
//
// It imports only the standard library and no internal package, so every
// package may use it. It has no state.
package clock

import "time"

// Clock tells the current time. The zero Clock (nil) is the system clock;
// a test passes a function of its own, such as
//
//	clock.Clock(func() time.Time { return t0 })
//
// A Clock must be safe for concurrent use when the component it is given to
// is.
type Clock func() time.Time

// Now returns the current time: c's, or time.Now's when c is nil.
func (c Clock) Now() time.Time {
	if c == nil {
		return time.Now()
	}
	return c()
}

// Anchor returns t, a time read back from a file (a wall time, with no
// monotonic reading), as a time that carries now's monotonic reading and
// the same distance from now on the wall clock, so that durations counted
// from it afterwards ignore any step of the wall clock. A t later than now
// by more than tolerance cannot be right (the clock stepped back since it
// was written): it is unknown, and counts from now. The zero time stays
// zero. now is a reading of the system clock (time.Now), or a test's.
func Anchor(now, t time.Time, tolerance time.Duration) time.Time {
	if t.IsZero() {
		return t
	}
	d := t.Round(0).Sub(now.Round(0))
	if d > tolerance {
		return now
	}
	return now.Add(d)
}
