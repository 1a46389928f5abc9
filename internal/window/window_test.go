package window

import (
	"errors"
	"testing"
	"time"
)

func mustLoc(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("time zone %s: %v (install tzdata)", name, err)
	}
	return loc
}

func TestOpenAndNext(t *testing.T) {
	berlin := mustLoc(t, "Europe/Berlin")
	at := func(s string, loc *time.Location) time.Time {
		tm, err := time.ParseInLocation("2006-01-02 15:04:05", s, loc)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	utc := func(s string) time.Time { return at(s, time.UTC) }
	ber := func(s string) time.Time { return at(s, berlin) }
	tests := []struct {
		name, spec string
		now        time.Time
		open       bool
		next       time.Time
	}{
		// 2026-11-30 is a Monday.
		{"weekday range, inside", "Mon-Fri 02:00-04:00 tz=UTC", utc("2026-11-30 03:00:00"), true, utc("2026-12-01 02:00:00")},
		{"weekday range, before", "Mon-Fri 02:00-04:00 tz=UTC", utc("2026-11-30 01:59:59"), false, utc("2026-11-30 02:00:00")},
		{"weekday range, end is excluded", "Mon-Fri 02:00-04:00 tz=UTC", utc("2026-11-30 04:00:00"), false, utc("2026-12-01 02:00:00")},
		{"weekday range, Friday evening waits for Monday", "Mon-Fri 02:00-04:00 tz=UTC", utc("2026-12-04 05:00:00"), false, utc("2026-12-07 02:00:00")},
		{"weekend range, Sunday morning is inside", "Sat 22:00-Sun 06:00 tz=UTC", utc("2026-12-06 05:59:00"), true, utc("2026-12-12 22:00:00")},
		{"week wrap, Sunday night to Monday", "Sun 23:00-Mon 01:00 tz=UTC", utc("2026-11-30 00:30:00"), true, utc("2026-12-06 23:00:00")},
		{"week wrap, before", "Sun 23:00-Mon 01:00 tz=UTC", utc("2026-12-06 22:00:00"), false, utc("2026-12-06 23:00:00")},
		{"daily past midnight", "daily 23:00-01:00 tz=UTC", utc("2026-12-01 00:10:00"), true, utc("2026-12-01 23:00:00")},
		{"day list", "Mon,Wed 10:00-11:00 tz=UTC", utc("2026-11-30 12:00:00"), false, utc("2026-12-02 10:00:00")},
		{"day range across the week's end", "Fri-Mon 10:00-11:00 tz=UTC", utc("2026-12-01 12:00:00"), false, utc("2026-12-04 10:00:00")},
		{"zone", "daily 02:00-04:00 tz=Europe/Berlin", utc("2026-11-30 00:30:00"), false, utc("2026-11-30 01:00:00")},
		// DST: Europe/Berlin skips 02:00-03:00 on 2026-03-29 and repeats it on 2026-10-25.
		{"spring forward: the skipped hour opens at 03:00", "daily 02:00-04:00 tz=Europe/Berlin", ber("2026-03-29 01:30:00"), false, ber("2026-03-29 03:00:00")},
		{"spring forward: inside after the jump", "daily 02:00-04:00 tz=Europe/Berlin", ber("2026-03-29 03:30:00"), true, ber("2026-03-30 02:00:00")},
		{"fall back: the wall-clock span is 3 hours long", "daily 02:00-04:00 tz=Europe/Berlin", ber("2026-10-25 01:59:00").Add(2 * time.Hour), true, ber("2026-10-26 02:00:00")},
		{"cron, inside the duration", "cron:0 2 * * * for 2h tz=UTC", utc("2026-11-30 03:59:00"), true, utc("2026-12-01 02:00:00")},
		{"cron, after the duration", "cron:0 2 * * * for 2h tz=UTC", utc("2026-11-30 04:00:00"), false, utc("2026-12-01 02:00:00")},
		{"cron, weekdays only", "cron:30 1 * * 1-5 for 30m tz=UTC", utc("2026-12-04 02:00:00"), false, utc("2026-12-07 01:30:00")},
		{"cron, overlapping times open once", "cron:* * * * * for 1h tz=UTC", utc("2026-11-30 02:00:00"), true, time.Time{}},
		{"cron: a time the clock skips does not fire, as for CronJobs", "cron:30 2 * * * for 1h tz=Europe/Berlin", ber("2026-03-29 01:00:00"), false, ber("2026-03-30 02:30:00")},
		{"no window is always open", "", utc("2026-11-30 03:00:00"), true, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := Parse(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			if got := w.Open(tt.now); got != tt.open {
				t.Errorf("Open(%s) = %v, want %v", tt.now, got, tt.open)
			}
			wantFrom := tt.next
			if tt.open {
				wantFrom = tt.now
			}
			if got := w.OpenFrom(tt.now); !got.Equal(wantFrom) && tt.spec != "cron:* * * * * for 1h tz=UTC" {
				t.Errorf("OpenFrom(%s) = %s, want %s", tt.now, got, wantFrom)
			}
			if tt.spec == "cron:* * * * * for 1h tz=UTC" {
				return // every minute is inside an earlier minute's hour: no opening to find
			}
			if got := w.Next(tt.now); !got.Equal(tt.next) {
				t.Errorf("Next(%s) = %s, want %s", tt.now, got, tt.next)
			}
			if n := w.Next(tt.now); !n.IsZero() && !w.Open(n) {
				t.Errorf("not open at its next opening %s", n)
			}
		})
	}
}

func TestJitter(t *testing.T) {
	w := MustParse("Mon-Fri 02:00-04:00 tz=UTC jitter=30m")
	now := time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)
	seen := map[time.Duration]bool{}
	for _, node := range []string{"kiosk-1", "kiosk-2", "kiosk-3", "gw-a", "gw-b", "cam-17"} {
		wn := w.ForNode(node)
		off := wn.Offset()
		if off < 0 || off >= 30*time.Minute {
			t.Errorf("%s: offset %s outside [0, 30m)", node, off)
		}
		if again := w.ForNode(node).Offset(); again != off {
			t.Errorf("%s: offset %s then %s: not stable", node, off, again)
		}
		seen[off] = true
		open := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC).Add(off)
		if got := wn.Next(now); !got.Equal(open) {
			t.Errorf("%s: Next = %s, want %s", node, got, open)
		}
		if wn.Open(open.Add(-time.Second)) || !wn.Open(open) || !wn.Open(open.Add(2*time.Hour-time.Second)) || wn.Open(open.Add(2*time.Hour)) {
			t.Errorf("%s: the window is not [%s, +2h)", node, open)
		}
	}
	if len(seen) < 4 {
		t.Errorf("offsets of 6 nodes take only %d values: %v", len(seen), seen)
	}
	if off := MustParse("daily 02:00-04:00").ForNode("kiosk-1").Offset(); off != 0 {
		t.Errorf("no jitter: offset %s", off)
	}
}

func TestParseErrors(t *testing.T) {
	for _, spec := range []string{
		"Mon-Fri",
		"Mon-Fri 02:00",
		"Funday 02:00-03:00",
		"Mon 25:00-26:00",
		"Mon 2:00-3:00",
		"Mon 02:00-Tue",
		"cron:0 2 * * *",
		"cron:0 2 * * * for -1h",
		"cron:0 2 * * for 1h",
		"cron:@daily for 1h",
		"daily 02:00-04:00 jitter=soon",
		"daily 02:00-04:00 color=red",
	} {
		if _, err := Parse(spec); !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q) = %v, want ErrSyntax", spec, err)
		}
	}
	if _, err := Parse("daily 02:00-04:00 tz=Mars/Olympus"); err == nil {
		t.Error("unknown zone accepted")
	}
}
