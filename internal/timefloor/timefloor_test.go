package timefloor

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"tug/internal/testutil"
)

// fakeClocks is a wall clock a test steps and a monotonic clock it only
// advances.
type fakeClocks struct {
	mu       sync.Mutex
	wall     time.Time
	mono     time.Duration
	unsynced bool // the kernel's STA_UNSYNC: set by hand, not by NTP
}

func (c *fakeClocks) synced() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.unsynced
}

func (c *fakeClocks) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wall
}

func (c *fakeClocks) elapsed() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mono
}

// advance moves both clocks by d; step moves the wall clock alone.
func (c *fakeClocks) advance(d time.Duration) {
	c.mu.Lock()
	c.wall, c.mono = c.wall.Add(d), c.mono+d
	c.mu.Unlock()
}
func (c *fakeClocks) step(d time.Duration) { c.mu.Lock(); c.wall = c.wall.Add(d); c.mu.Unlock() }

// logBuffer keeps the text of every log line.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) Logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

func newLogBuffer() *logBuffer { return &logBuffer{} }

type recorded struct{ eventType, reason, message string }

type fakeEvents struct {
	mu  sync.Mutex
	got []recorded
}

func (e *fakeEvents) NodeEvent(eventType, reason, message string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, recorded{eventType, reason, message})
}

var (
	build = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	epoch = time.Unix(0, 0).UTC()
)

func newFloor(t *testing.T, file string, c *fakeClocks, ev *fakeEvents, log *logBuffer) *Floor {
	t.Helper()
	return New(Config{File: file, Build: build, Clock: c.now, Mono: c.elapsed, Synced: c.synced, Events: ev, Log: log.Logger()})
}

func writeFloor(t *testing.T, file string, at time.Time) {
	t.Helper()
	if err := os.WriteFile(file, []byte(at.Format(time.RFC3339Nano)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func readFloor(t *testing.T, file string) time.Time {
	t.Helper()
	got, err := read(file)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestBehindAtStart: a clock below the build time or the persisted time
// is behind from the first reading: one Warn, one Warning event, the
// condition True; a clock at the floor (within the tolerance) is not.
func TestBehindAtStart(t *testing.T) {
	tests := []struct {
		name       string
		persisted  time.Time // zero: no file
		wall       time.Time
		wantBehind bool
	}{
		{"1970, no file", time.Time{}, epoch, true},
		{"1970, a file", build.Add(30 * 24 * time.Hour), epoch, true},
		{"after the build, before the persisted time", build.Add(30 * 24 * time.Hour), build.Add(24 * time.Hour), true},
		{"after both", build.Add(24 * time.Hour), build.Add(48 * time.Hour), false},
		{"within the tolerance below", build.Add(24 * time.Hour), build.Add(24*time.Hour - DefaultTolerance/2), false},
		{"just after the build, no file", time.Time{}, build.Add(time.Second), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "timefloor")
			if !tt.persisted.IsZero() {
				writeFloor(t, file, tt.persisted)
			}
			c := &fakeClocks{wall: tt.wall}
			ev := &fakeEvents{}
			log := newLogBuffer()
			f := newFloor(t, file, c, ev, log)
			if f.Sane() == tt.wantBehind {
				t.Errorf("Sane() = %v, want %v", f.Sane(), !tt.wantBehind)
			}
			cond := f.Conditions()
			if len(cond) != 1 || cond[0].Type != ConditionType || (cond[0].Status == "True") != tt.wantBehind {
				t.Errorf("Conditions() = %+v, want ClockBehind %v", cond, tt.wantBehind)
			}
			warns := strings.Count(log.String(), "level=WARN")
			if tt.wantBehind && (warns != 1 || len(ev.got) != 1 || ev.got[0].reason != ReasonBehind || ev.got[0].eventType != "Warning") {
				t.Errorf("behind: %d Warn lines, events %+v; want one each\n%s", warns, ev.got, log)
			}
			if !tt.wantBehind && (warns != 0 || len(ev.got) != 0) {
				t.Errorf("sane: %d Warn lines, events %+v; want none\n%s", warns, ev.got, log)
			}
			// Still behind a second later: said once.
			c.advance(time.Second)
			f.check()
			if n := strings.Count(log.String(), "level=WARN"); n != warns || len(ev.got) > 1 {
				t.Errorf("a second check said it again: %d Warn lines, events %+v", n, ev.got)
			}
		})
	}
}

// TestBehindThenSet: the clock set while behind (NTP after boot) clears
// the condition with an Info line and a Normal event, and the floor is
// written with the true time.
func TestBehindThenSet(t *testing.T) {
	file := filepath.Join(t.TempDir(), "timefloor")
	c := &fakeClocks{wall: epoch}
	ev := &fakeEvents{}
	log := newLogBuffer()
	f := newFloor(t, file, c, ev, log)
	if f.Sane() {
		t.Fatal("sane at 1970")
	}
	if _, err := os.Stat(file); err == nil {
		t.Error("the floor was written with a clock at 1970")
	}
	c.advance(time.Minute)
	truth := build.Add(100 * 24 * time.Hour)
	c.step(truth.Sub(c.now()))
	f.check()
	if !f.Sane() || f.Conditions()[0].Status != "False" {
		t.Fatalf("after the clock was set: Sane() = %v, condition %+v", f.Sane(), f.Conditions())
	}
	if len(ev.got) != 2 || ev.got[1].reason != ReasonSane || ev.got[1].eventType != "Normal" {
		t.Errorf("events %+v, want Warning then Normal", ev.got)
	}
	if !strings.Contains(log.String(), "again") {
		t.Errorf("no line saying the clock is sane again:\n%s", log)
	}
	if got := readFloor(t, file); !got.Equal(truth) {
		t.Errorf("floor file = %v, want %v", got, truth)
	}
}

// TestStepBackWhileSane: a clock that was ahead and is corrected back by a
// day while tug runs stays sane (the floor follows it down, and the file
// says so at once); one stepped back below the build time is behind.
func TestStepBackWhileSane(t *testing.T) {
	tests := []struct {
		name       string
		back       time.Duration
		wantBehind bool
	}{
		{"a day", 24 * time.Hour, false},
		{"a year", 365 * 24 * time.Hour, false},
		{"below the build time", 3 * 365 * 24 * time.Hour, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "timefloor")
			start := build.Add(2 * 365 * 24 * time.Hour)
			c := &fakeClocks{wall: start}
			ev := &fakeEvents{}
			f := newFloor(t, file, c, ev, newLogBuffer())
			c.advance(2 * time.Hour) // the floor follows the clock, and is written
			f.check()
			if got := readFloor(t, file); !got.Equal(c.now()) {
				t.Fatalf("floor file = %v after two hours, want %v", got, c.now())
			}
			c.step(-tt.back)
			f.check()
			if f.Sane() == tt.wantBehind {
				t.Errorf("Sane() = %v after a step back of %v", f.Sane(), tt.back)
			}
			if !tt.wantBehind {
				if got := readFloor(t, file); !got.Equal(c.now()) {
					t.Errorf("floor file = %v after the step, want %v (a restart must not find the clock behind)", got, c.now())
				}
			}
		})
	}
}

// TestStepForwardTrusted: a step forward (NTP after a boot at a stale
// RTC) moves the floor forward; the file is written at most every
// SaveEvery, and when Run ends.
func TestStepForwardTrusted(t *testing.T) {
	file := filepath.Join(t.TempDir(), "timefloor")
	c := &fakeClocks{wall: build.Add(time.Hour)}
	f := newFloor(t, file, c, &fakeEvents{}, newLogBuffer())
	first := readFloor(t, file)
	c.advance(time.Second)
	c.step(365 * 24 * time.Hour)
	f.check()
	if !f.Floor().Equal(c.now()) {
		t.Errorf("Floor() = %v, want %v", f.Floor(), c.now())
	}
	if got := readFloor(t, file); !got.Equal(first) {
		t.Errorf("the file was written %v after a second; want at most hourly", got)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := f.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if got := readFloor(t, file); !got.Equal(c.now()) {
		t.Errorf("floor file = %v after Run ended, want %v", got, c.now())
	}
}

// TestDamagedFile: each damage is a Warn naming the file and the build
// time as the floor; the file is rewritten at the first sane reading.
func TestDamagedFile(t *testing.T) {
	for _, d := range testutil.Damages {
		t.Run(string(d), func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "timefloor")
			writeFloor(t, file, build.Add(1000*24*time.Hour))
			testutil.DamageFile(t, file, d)
			c := &fakeClocks{wall: build.Add(time.Hour)}
			log := newLogBuffer()
			f := newFloor(t, file, c, &fakeEvents{}, log)
			if !f.Sane() {
				t.Errorf("behind with a damaged file: floor %v", f.Floor())
			}
			if d != testutil.DamageMissing && !strings.Contains(log.String(), "level=WARN") {
				t.Errorf("no Warn:\n%s", log)
			}
			if got := readFloor(t, file); !got.Equal(c.now()) {
				t.Errorf("file = %v, want rewritten with %v", got, c.now())
			}
		})
	}
}

// TestUnsyncedClockNotWritten: a clock that reads a sane time the kernel
// does not count as synchronized (an RTC a year ahead, set by hand) moves
// the floor in memory but is never written, so that once it is corrected
// while tug is stopped the next start is not behind; a synchronized
// reading is written.
func TestUnsyncedClockNotWritten(t *testing.T) {
	file := filepath.Join(t.TempDir(), "timefloor")
	c := &fakeClocks{wall: build.Add(365 * 24 * time.Hour), unsynced: true}
	f := newFloor(t, file, c, &fakeEvents{}, newLogBuffer())
	c.advance(2 * time.Hour)
	f.check()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := f.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if got := readFloor(t, file); !got.Equal(build) {
		t.Errorf("floor file = %v after an unsynchronized year ahead, want the build time %v", got, build)
	}

	c = &fakeClocks{wall: build.Add(time.Hour), unsynced: true}
	f = newFloor(t, file, c, &fakeEvents{}, newLogBuffer())
	if !f.Sane() {
		t.Fatalf("the corrected clock %v counts as behind the floor %v", c.now(), f.Floor())
	}
	c.mu.Lock()
	c.unsynced = false
	c.mu.Unlock()
	c.advance(2 * time.Hour)
	f.check()
	if got := readFloor(t, file); !got.Equal(c.now()) {
		t.Errorf("floor file = %v after a synchronized reading past SaveEvery, want %v", got, c.now())
	}
}
