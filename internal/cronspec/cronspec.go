// Package cronspec owns the cron schedule syntax of a CronJob's
// spec.schedule, read as Kubernetes reads it (robfig/cron's standard
// parser): five fields (minute, hour, day of month, month, day of week)
// with lists, ranges, steps and the names of months and days, or one of the
// macros @yearly, @annually, @monthly, @weekly, @daily, @midnight and
// @hourly. A "TZ=" or "CRON_TZ=" prefix is refused as the API server
// refuses it: the time zone is spec.timeZone. It computes the next times
// of a schedule in a time zone, across DST changes.
//
// It imports only the standard library; manifest (to validate) and
// cronjob (to schedule) use it. It has no state.
package cronspec

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrSyntax is the class of every error of Parse.
var ErrSyntax = errors.New("cronspec: invalid schedule")

// Schedule is a parsed schedule: one bit per allowed value of each field.
// The zero Schedule matches nothing.
type Schedule struct {
	minute, hour, dom, month, dow uint64
	// domStar and dowStar report a day field written as "*" or "?": then
	// the other day field alone decides; when both are restricted, a day
	// matches either (cron's rule).
	domStar, dowStar bool
}

// field is one field's bounds and names.
type field struct {
	name     string
	min, max int
	names    map[string]int
}

var (
	minuteField = field{name: "minute", min: 0, max: 59}
	hourField   = field{name: "hour", min: 0, max: 23}
	domField    = field{name: "day of month", min: 1, max: 31}
	monthField  = field{name: "month", min: 1, max: 12, names: map[string]int{
		"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
		"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}}
	dowField = field{name: "day of week", min: 0, max: 6, names: map[string]int{
		"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}}
)

// macros are the @ forms and the five fields they stand for.
var macros = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

// Parse reads a schedule. Its errors wrap ErrSyntax and say which field
// is wrong.
func Parse(spec string) (Schedule, error) {
	spec = strings.TrimSpace(spec)
	if strings.Contains(spec, "TZ") {
		return Schedule{}, fmt.Errorf("%w: cannot use TZ or CRON_TZ in schedule, use the timeZone field instead", ErrSyntax)
	}
	if strings.HasPrefix(spec, "@") {
		m, ok := macros[strings.ToLower(spec)]
		if !ok {
			return Schedule{}, fmt.Errorf("%w: unknown macro %q (use @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly)", ErrSyntax, truncate(spec))
		}
		spec = m
	}
	fields := strings.Fields(spec)
	if len(fields) != 5 {
		return Schedule{}, fmt.Errorf("%w: expected 5 fields (minute hour day-of-month month day-of-week), found %d", ErrSyntax, len(fields))
	}
	var s Schedule
	var err error
	set := func(dst *uint64, f field, expr string) {
		if err == nil {
			*dst, err = f.parse(expr)
		}
	}
	set(&s.minute, minuteField, fields[0])
	set(&s.hour, hourField, fields[1])
	set(&s.dom, domField, fields[2])
	set(&s.month, monthField, fields[3])
	set(&s.dow, dowField, fields[4])
	if err != nil {
		return Schedule{}, err
	}
	s.domStar = fields[2] == "*" || fields[2] == "?"
	s.dowStar = fields[4] == "*" || fields[4] == "?"
	return s, nil
}

// parse reads one field: a comma-separated list of "*", "?", "a", "a-b",
// each with an optional "/step" ("a/step" is "a-max/step").
func (f field) parse(expr string) (uint64, error) {
	var bits uint64
	for _, part := range strings.Split(expr, ",") {
		b, err := f.parsePart(part)
		if err != nil {
			return 0, fmt.Errorf("%w: %s field %q: %w", ErrSyntax, f.name, truncate(expr), err)
		}
		bits |= b
	}
	return bits, nil
}

func (f field) parsePart(part string) (uint64, error) {
	rng, stepText, hasStep := strings.Cut(part, "/")
	step := 1
	if hasStep {
		n, err := strconv.Atoi(stepText)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("step %q must be a positive number", truncate(stepText))
		}
		step = n
	}
	var lo, hi int
	switch {
	case rng == "*" || rng == "?":
		lo, hi = f.min, f.max
	default:
		a, b, isRange := strings.Cut(rng, "-")
		var err error
		if lo, err = f.value(a); err != nil {
			return 0, err
		}
		hi = lo
		if isRange {
			if hi, err = f.value(b); err != nil {
				return 0, err
			}
		} else if hasStep {
			hi = f.max
		}
		if lo > hi {
			return 0, fmt.Errorf("range %d-%d: the start is after the end", lo, hi)
		}
	}
	if step > f.max-f.min+1 && hasStep {
		return 0, fmt.Errorf("step %d is beyond the field's %d-%d", step, f.min, f.max)
	}
	var bits uint64
	for v := lo; v <= hi; v += step {
		bits |= 1 << uint(v)
	}
	return bits, nil
}

// value reads a number or a name within the field's bounds.
func (f field) value(s string) (int, error) {
	if v, ok := f.names[strings.ToLower(s)]; ok {
		return v, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", truncate(s))
	}
	if v < f.min || v > f.max {
		return 0, fmt.Errorf("%d is out of range %d-%d", v, f.min, f.max)
	}
	return v, nil
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// dayMatches reports whether t's day is one of the schedule's.
func (s Schedule) dayMatches(t time.Time) bool {
	dom := s.dom&(1<<uint(t.Day())) != 0
	dow := s.dow&(1<<uint(t.Weekday())) != 0
	if s.domStar || s.dowStar {
		return dom && dow
	}
	return dom || dow
}

// Next returns the first time of the schedule strictly after t, read on
// the wall clock of loc (nil: t's own location), in t's location. A wall
// time skipped by a DST change is run at the same minute of the next hour
// that exists, and one repeated by a DST change runs once (cron's rule).
// It returns the zero time when the schedule has no time within five years
// (a day that no month has, such as "0 0 30 2 *").
func (s Schedule) Next(t time.Time, loc *time.Location) time.Time {
	orig := t.Location()
	if loc == nil {
		loc = orig
	}
	t = t.In(loc)
	// The next whole minute after t.
	t = t.Add(time.Minute - time.Duration(t.Second())*time.Second - time.Duration(t.Nanosecond()))
	reset := false // whether lower fields were set to their start
	limit := t.Year() + 5
wrap:
	if t.Year() > limit {
		return time.Time{}
	}
	for s.month&(1<<uint(t.Month())) == 0 {
		if !reset {
			reset = true
			t = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, loc)
		}
		t = t.AddDate(0, 1, 0)
		if t.Month() == time.January {
			goto wrap
		}
	}
	for !s.dayMatches(t) {
		if !reset {
			reset = true
			t = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc)
		}
		t = t.AddDate(0, 0, 1)
		// Midnight may not exist (or be an hour off) across DST.
		if h := t.Hour(); h != 0 {
			if h > 12 {
				t = t.Add(time.Duration(24-h) * time.Hour)
			} else {
				t = t.Add(-time.Duration(h) * time.Hour)
			}
		}
		if t.Day() == 1 {
			goto wrap
		}
	}
	for s.hour&(1<<uint(t.Hour())) == 0 {
		if !reset {
			reset = true
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), 0, 0, 0, loc)
		}
		t = t.Add(time.Hour)
		if t.Hour() == 0 {
			goto wrap
		}
	}
	for s.minute&(1<<uint(t.Minute())) == 0 {
		reset = true
		t = t.Add(time.Minute)
		if t.Minute() == 0 {
			goto wrap
		}
	}
	return t.In(orig)
}

// MaxMissed is how many missed times Missed counts before it stops
// counting (the CronJob controller complains beyond 100).
const MaxMissed = 100

// Missed returns the most recent time of the schedule in (after, now] and
// how many times fell in that interval, counted up to MaxMissed+1 (more
// than MaxMissed means "too many"). The zero time and 0 mean none.
func (s Schedule) Missed(after, now time.Time, loc *time.Location) (last time.Time, n int) {
	for t := s.Next(after, loc); !t.IsZero() && !t.After(now); t = s.Next(t, loc) {
		last, n = t, n+1
		if n > MaxMissed {
			return s.mostRecent(last, now, loc), n
		}
	}
	return last, n
}

// mostRecent returns the last time of the schedule in [from, now], from
// being one: it looks back from now by doubling spans until one holds a
// time, so that a long outage costs a few dozen Next calls.
func (s Schedule) mostRecent(from, now time.Time, loc *time.Location) time.Time {
	for d := time.Minute; ; d *= 2 {
		start := now.Add(-d)
		if !start.After(from) {
			start = from
		}
		var last time.Time
		for t := s.Next(start, loc); !t.IsZero() && !t.After(now); t = s.Next(t, loc) {
			last = t
		}
		if !last.IsZero() {
			return last
		}
		if start.Equal(from) {
			return from
		}
	}
}
