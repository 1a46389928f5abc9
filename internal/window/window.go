// Package window owns the syntax and the arithmetic of update windows:
// the times of the week (or of a cron schedule) at which a device may
// download or apply an update. It answers two questions of a parsed
// Window for an instant it is given: is it open, and when does it open
// next. It keeps no clock of its own, so that tests inject the time.
//
// A window is one of:
//
//	Mon-Fri 02:00-04:00            each of those days, 02:00 to 04:00
//	Sat 22:00-Sun 06:00            one span across days
//	daily 23:00-01:00              every day; an end before the start is the next day
//	Mon,Wed,Sat 01:30-02:00        a list of days
//	cron:0 2 * * 1-5 for 2h        a 5-field cron schedule, open for a duration from each time
//
// followed by optional words: tz=<zone> (a name of the device's time zone
// database, /usr/share/zoneinfo as CronJobs read it; default the device's
// local zone) and jitter=<duration> (the largest start offset: each device
// shifts the whole window by a stable offset below it, from a hash of its
// node name, so that a fleet does not start in the same second). Times are
// wall-clock times in the zone: a span that falls in a skipped hour (the
// spring daylight-saving change) opens when the clock reaches a time inside
// it.
//
// The empty string is no window: always open.
//
// It imports cronspec and the standard library.
package window

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"tug/internal/cronspec"
)

// ErrSyntax is the class of every error of Parse.
var ErrSyntax = errors.New("window: bad syntax")

// Window is a parsed window. The zero Window is always open.
type Window struct {
	spec   string
	loc    *time.Location
	jitter time.Duration // the largest offset
	offset time.Duration // this device's, in [0, jitter)

	// A weekly window: spans in minutes from Monday 00:00; end may pass
	// the week's end (a span across Sunday midnight).
	spans []span
	// A cron window: open for dur from each time of sched.
	cron  bool
	sched cronspec.Schedule
	dur   time.Duration
}

type span struct{ start, end int }

const (
	day  = 24 * 60
	week = 7 * day
)

var days = map[string]int{"mon": 0, "tue": 1, "wed": 2, "thu": 3, "fri": 4, "sat": 5, "sun": 6}

// Parse reads a window (see the package doc). Its errors wrap ErrSyntax,
// or say that the time zone is unknown.
func Parse(s string) (Window, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Window{}, nil
	}
	w := Window{spec: s, loc: time.Local}
	words := strings.Fields(s)
	// Options are the trailing key=value words.
	for len(words) > 0 && strings.Contains(words[len(words)-1], "=") {
		k, v, _ := strings.Cut(words[len(words)-1], "=")
		words = words[:len(words)-1]
		switch strings.ToLower(k) {
		case "tz":
			loc, err := time.LoadLocation(v)
			if err != nil || v == "" {
				return Window{}, fmt.Errorf("window %q: unknown time zone %q: not in the device's time zone database (/usr/share/zoneinfo; the tzdata package)", s, v)
			}
			w.loc = loc
		case "jitter":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return Window{}, fmt.Errorf("%w: %q: jitter %q is not a duration of at least 0", ErrSyntax, s, v)
			}
			w.jitter = d
		default:
			return Window{}, fmt.Errorf("%w: %q: unknown option %q (want tz= or jitter=)", ErrSyntax, s, k)
		}
	}
	body := strings.Join(words, " ")
	var err error
	if rest, ok := strings.CutPrefix(body, "cron:"); ok {
		err = w.parseCron(rest)
	} else {
		err = w.parseWeekly(words)
	}
	if err != nil {
		return Window{}, fmt.Errorf("%w: %q: %w", ErrSyntax, s, err)
	}
	return w, nil
}

// MustParse is Parse for literals in tests and defaults; it panics on an
// error.
func MustParse(s string) Window {
	w, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return w
}

func (w *Window) parseCron(s string) error {
	expr, d, ok := strings.Cut(s, " for ")
	if !ok {
		return errors.New(`a cron window needs a duration: "cron:<5 fields> for <duration>"`)
	}
	dur, err := time.ParseDuration(strings.TrimSpace(d))
	if err != nil || dur <= 0 {
		return fmt.Errorf("duration %q is not a positive duration", strings.TrimSpace(d))
	}
	if strings.HasPrefix(strings.TrimSpace(expr), "@") {
		return errors.New("cron macros are not windows; write the 5 fields")
	}
	sched, err := cronspec.Parse(expr)
	if err != nil {
		return err
	}
	w.cron, w.sched, w.dur = true, sched, dur
	return nil
}

// parseWeekly reads "<days> HH:MM-HH:MM" or "<day> HH:MM-<day> HH:MM".
func (w *Window) parseWeekly(words []string) error {
	switch len(words) {
	case 2:
		ds, err := parseDays(words[0])
		if err != nil {
			return err
		}
		from, to, ok := strings.Cut(words[1], "-")
		if !ok {
			return fmt.Errorf("%q: want HH:MM-HH:MM", words[1])
		}
		a, err := parseClock(from)
		if err != nil {
			return err
		}
		b, err := parseClock(to)
		if err != nil {
			return err
		}
		if b <= a {
			b += day // ends the next day
		}
		for _, d := range ds {
			w.spans = append(w.spans, span{d*day + a, d*day + b})
		}
		return nil
	case 3:
		d1, ok1 := days[strings.ToLower(words[0])]
		t1, t2, ok := strings.Cut(words[1], "-")
		d2, ok2 := days[strings.ToLower(t2)]
		if !ok1 || !ok || !ok2 {
			return errors.New(`want "<days> HH:MM-HH:MM", "<day> HH:MM-<day> HH:MM" or "cron:<5 fields> for <duration>"`)
		}
		a, err := parseClock(t1)
		if err != nil {
			return err
		}
		b, err := parseClock(words[2])
		if err != nil {
			return err
		}
		start, end := d1*day+a, d2*day+b
		if end <= start {
			end += week
		}
		w.spans = []span{{start, end}}
		return nil
	}
	return errors.New(`want "<days> HH:MM-HH:MM", "<day> HH:MM-<day> HH:MM" or "cron:<5 fields> for <duration>"`)
}

// parseDays reads "daily", "*", "Mon", "Mon-Fri", "Sat-Sun", "Mon,Wed,Fri"
// (a range may wrap: "Fri-Mon").
func parseDays(s string) ([]int, error) {
	if l := strings.ToLower(s); l == "daily" || l == "*" {
		return []int{0, 1, 2, 3, 4, 5, 6}, nil
	}
	var out []int
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		a, b, isRange := strings.Cut(strings.ToLower(part), "-")
		da, ok := days[a]
		if !ok {
			return nil, fmt.Errorf("%q is not a day (Mon, Tue, Wed, Thu, Fri, Sat, Sun, or daily)", part)
		}
		db := da
		if isRange {
			if db, ok = days[b]; !ok {
				return nil, fmt.Errorf("%q is not a day (Mon, Tue, Wed, Thu, Fri, Sat, Sun)", b)
			}
		}
		for d := da; ; d = (d + 1) % 7 {
			if !seen[d] {
				seen[d] = true
				out = append(out, d)
			}
			if d == db {
				break
			}
		}
	}
	return out, nil
}

// parseClock reads HH:MM (00:00 to 24:00) as minutes of the day.
func parseClock(s string) (int, error) {
	var h, m int
	if len(s) != 5 || s[2] != ':' {
		return 0, fmt.Errorf("%q is not a time HH:MM", s)
	}
	if _, err := fmt.Sscanf(s, "%02d:%02d", &h, &m); err != nil || h > 24 || m > 59 || (h == 24 && m != 0) {
		return 0, fmt.Errorf("%q is not a time HH:MM", s)
	}
	return h*60 + m, nil
}

// IsZero reports whether w is no window (always open).
func (w Window) IsZero() bool { return w.spec == "" }

// String returns the window as it was written ("" for none).
func (w Window) String() string { return w.spec }

// ForNode returns w shifted by node's offset: a hash of the name, below
// the window's jitter. The same name always gives the same offset.
func (w Window) ForNode(node string) Window {
	if w.jitter <= 0 {
		w.offset = 0
		return w
	}
	h := fnv.New64a()
	h.Write([]byte(node))
	w.offset = time.Duration(h.Sum64() % uint64(w.jitter))
	return w
}

// Offset is the device's start offset (ForNode).
func (w Window) Offset() time.Duration { return w.offset }

// Open reports whether the window is open at now.
func (w Window) Open(now time.Time) bool {
	if w.IsZero() {
		return true
	}
	t := now.Add(-w.offset)
	if w.cron {
		last, _ := w.sched.Missed(t.Add(-w.dur), t, w.loc)
		return !last.IsZero()
	}
	return w.openWall(t)
}

// openWall reports whether the wall-clock time of t in the window's zone
// is inside a span.
func (w Window) openWall(t time.Time) bool {
	lt := t.In(w.loc)
	m := (int(lt.Weekday())+6)%7*day + lt.Hour()*60 + lt.Minute()
	for _, s := range w.spans {
		if (m >= s.start && m < s.end) || (m+week >= s.start && m+week < s.end) {
			return true
		}
	}
	return false
}

// OpenFrom returns the first instant at or after t at which the window is
// open: t itself when it is open then, else its next opening (zero when
// it never opens).
func (w Window) OpenFrom(t time.Time) time.Time {
	if w.Open(t) {
		return t
	}
	return w.Next(t)
}

// Next returns the next opening strictly after now, offset applied: the
// first instant at which the window opens (goes from closed to open). It
// returns the zero time for no window, and for a cron schedule with no
// time within five years.
func (w Window) Next(now time.Time) time.Time {
	if w.IsZero() {
		return time.Time{}
	}
	t := now.Add(-w.offset)
	if w.cron {
		for f := w.sched.Next(t, w.loc); !f.IsZero(); f = w.sched.Next(f, w.loc) {
			// A time inside the window of an earlier one does not open it.
			if last, _ := w.sched.Missed(f.Add(-w.dur), f.Add(-time.Nanosecond), w.loc); last.IsZero() {
				return f.Add(w.offset)
			}
		}
		return time.Time{}
	}
	// Spans open and close at wall-clock minutes: look at each minute of
	// the next eight days for the first that is open after a closed one.
	u := t.Truncate(time.Minute)
	prev := w.openWall(u)
	for i := 0; i <= 8*day; i++ {
		u = u.Add(time.Minute)
		open := w.openWall(u)
		if open && !prev {
			return u.Add(w.offset)
		}
		prev = open
	}
	return time.Time{}
}
