package cronspec

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func mustLoad(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return loc
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		spec, want string
	}{
		{"* * * *", "expected 5 fields"},
		{"* * * * * *", "expected 5 fields"},
		{"60 * * * *", "minute field \"60\": 60 is out of range 0-59"},
		{"* 24 * * *", "hour field"},
		{"* * 0 * *", "day of month field"},
		{"* * * 13 *", "month field"},
		{"* * * * 7", "day of week field"},
		{"*/0 * * * *", "step \"0\" must be a positive number"},
		{"5-1 * * * *", "the start is after the end"},
		{"a * * * *", "\"a\" is not a number"},
		{"* * * foo *", "\"foo\" is not a number"},
		{"@every 5m", "unknown macro"},
		{"@fortnightly", "unknown macro"},
		{"CRON_TZ=UTC 0 * * * *", "cannot use TZ or CRON_TZ"},
		{"TZ=Europe/Paris 0 * * * *", "cannot use TZ or CRON_TZ"},
		{"", "expected 5 fields"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			_, err := Parse(tt.spec)
			if err == nil || !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse(%q) = %v, want ErrSyntax with %q", tt.spec, err, tt.want)
			}
		})
	}
}

func TestNext(t *testing.T) {
	utc := time.UTC
	ny := mustLoad(t, "America/New_York")
	berlin := mustLoad(t, "Europe/Berlin")
	at := func(loc *time.Location, y int, mo time.Month, d, h, mi int) time.Time {
		return time.Date(y, mo, d, h, mi, 0, 0, loc)
	}
	tests := []struct {
		name string
		spec string
		loc  *time.Location
		from time.Time
		want []time.Time // the next times in order
	}{
		{"every minute", "*/1 * * * *", utc, at(utc, 2026, 3, 1, 10, 0).Add(30 * time.Second),
			[]time.Time{at(utc, 2026, 3, 1, 10, 1), at(utc, 2026, 3, 1, 10, 2)}},
		{"strictly after an exact slot", "* * * * *", utc, at(utc, 2026, 3, 1, 10, 0),
			[]time.Time{at(utc, 2026, 3, 1, 10, 1)}},
		{"steps and lists", "0,30 */6 * * *", utc, at(utc, 2026, 3, 1, 5, 59),
			[]time.Time{at(utc, 2026, 3, 1, 6, 0), at(utc, 2026, 3, 1, 6, 30), at(utc, 2026, 3, 1, 12, 0)}},
		{"range with step", "10-20/5 * * * *", utc, at(utc, 2026, 3, 1, 5, 11),
			[]time.Time{at(utc, 2026, 3, 1, 5, 15), at(utc, 2026, 3, 1, 5, 20), at(utc, 2026, 3, 1, 6, 10)}},
		{"start with step", "50/5 * * * *", utc, at(utc, 2026, 3, 1, 5, 0),
			[]time.Time{at(utc, 2026, 3, 1, 5, 50), at(utc, 2026, 3, 1, 5, 55), at(utc, 2026, 3, 1, 6, 50)}},
		{"names", "0 12 * jan-feb mon", utc, at(utc, 2026, 2, 20, 0, 0),
			[]time.Time{at(utc, 2026, 2, 23, 12, 0), at(utc, 2027, 1, 4, 12, 0)}},
		{"hourly", "@hourly", utc, at(utc, 2026, 12, 31, 23, 5),
			[]time.Time{at(utc, 2027, 1, 1, 0, 0)}},
		{"daily", "@daily", utc, at(utc, 2026, 2, 28, 1, 0),
			[]time.Time{at(utc, 2026, 3, 1, 0, 0)}},
		{"weekly is sunday", "@weekly", utc, at(utc, 2026, 3, 2, 0, 0), // a Monday
			[]time.Time{at(utc, 2026, 3, 8, 0, 0)}},
		{"monthly", "@monthly", utc, at(utc, 2026, 1, 15, 0, 0),
			[]time.Time{at(utc, 2026, 2, 1, 0, 0)}},
		{"yearly", "@yearly", utc, at(utc, 2026, 1, 1, 0, 0),
			[]time.Time{at(utc, 2027, 1, 1, 0, 0)}},
		{"annually", "@annually", utc, at(utc, 2026, 6, 1, 0, 0),
			[]time.Time{at(utc, 2027, 1, 1, 0, 0)}},
		{"leap day", "0 0 29 2 *", utc, at(utc, 2026, 1, 1, 0, 0),
			[]time.Time{at(utc, 2028, 2, 29, 0, 0)}},
		{"never", "0 0 30 2 *", utc, at(utc, 2026, 1, 1, 0, 0), []time.Time{{}}},
		{"day of month or day of week", "0 0 13 * fri", utc, at(utc, 2026, 2, 1, 0, 0),
			[]time.Time{at(utc, 2026, 2, 6, 0, 0), at(utc, 2026, 2, 13, 0, 0), at(utc, 2026, 2, 20, 0, 0)}},
		{"day of week with star day of month", "0 0 * * 5", utc, at(utc, 2026, 2, 1, 0, 0),
			[]time.Time{at(utc, 2026, 2, 6, 0, 0), at(utc, 2026, 2, 13, 0, 0)}},
		{"time zone wall clock", "0 9 * * *", ny, at(utc, 2026, 1, 10, 12, 0),
			[]time.Time{at(utc, 2026, 1, 10, 14, 0), at(utc, 2026, 1, 11, 14, 0)}},
		// 2026-03-08 02:30 does not exist in New York: skipped that day,
		// as the CronJob controller skips it.
		{"DST gap is skipped", "30 2 * * *", ny, at(ny, 2026, 3, 7, 3, 0),
			[]time.Time{at(ny, 2026, 3, 9, 2, 30)}},
		// 2026-10-25 02:00-03:00 happens twice in Berlin: two runs, as
		// the CronJob controller has them.
		{"DST overlap comes twice", "30 2 * * *", berlin, at(berlin, 2026, 10, 24, 3, 0),
			[]time.Time{time.Date(2026, 10, 25, 0, 30, 0, 0, utc), time.Date(2026, 10, 25, 1, 30, 0, 0, utc), at(berlin, 2026, 10, 26, 2, 30)}},
		{"hourly across DST end", "0 * * * *", berlin, time.Date(2026, 10, 25, 0, 30, 0, 0, utc),
			[]time.Time{time.Date(2026, 10, 25, 1, 0, 0, 0, utc), time.Date(2026, 10, 25, 2, 0, 0, 0, utc)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(tt.spec)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			from := tt.from
			for i, want := range tt.want {
				got := s.Next(from, tt.loc)
				if !got.Equal(want) {
					t.Fatalf("next #%d after %v = %v, want %v", i, from, got, want)
				}
				from = got
			}
		})
	}
}

func TestMissed(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		spec     string
		after    time.Time
		now      time.Time
		wantLast time.Time
		wantN    int
	}{
		{"none yet", "* * * * *", t0, t0.Add(59 * time.Second), time.Time{}, 0},
		{"one", "* * * * *", t0, t0.Add(61 * time.Second), t0.Add(time.Minute), 1},
		{"slot at now counts", "* * * * *", t0, t0.Add(2 * time.Minute), t0.Add(2 * time.Minute), 2},
		{"several", "*/5 * * * *", t0, t0.Add(17 * time.Minute), t0.Add(15 * time.Minute), 3},
		{"too many", "* * * * *", t0, t0.Add(1000*time.Minute + 30*time.Second), t0.Add(1000 * time.Minute), MaxMissed + 1},
		{"too many hourly", "0 * * * *", t0, t0.Add(24 * 365 * time.Hour), t0.Add(24 * 365 * time.Hour), MaxMissed + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			last, n := s.Missed(tt.after, tt.now, time.UTC)
			if !last.Equal(tt.wantLast) || n != tt.wantN {
				t.Fatalf("Missed = %v, %d; want %v, %d", last, n, tt.wantLast, tt.wantN)
			}
		})
	}
}
