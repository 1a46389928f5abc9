package sdnotify

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tug/internal/pod"
	"tug/internal/podview"
)

// fakes: what the notifier watches, changed by the test.
type fakes struct {
	ready   atomic.Bool
	loopAt  atomic.Int64 // UnixNano of the loop's last turn
	relist  atomic.Int64
	plegErr atomic.Pointer[error]
}

func (f *fakes) AllReady() (bool, []string) {
	if f.ready.Load() {
		return true, nil
	}
	return false, []string{"http:https://fleet.example/pods"}
}
func (f *fakes) LastIteration() time.Time { return unix(f.loopAt.Load()) }
func (f *fakes) LastRelist() time.Time    { return unix(f.relist.Load()) }
func (f *fakes) Healthy() error {
	if p := f.plegErr.Load(); p != nil {
		return *p
	}
	return nil
}
func (f *fakes) Pods() []podview.View {
	v := func(ph pod.Phase) podview.View { var x podview.View; x.Status.Phase = ph; return x }
	return []podview.View{v(pod.PhaseRunning), v(pod.PhaseRunning), v(pod.PhasePending)}
}

func unix(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// turn makes the loop and the PLEG look as if they ran now.
func (f *fakes) turn() {
	now := time.Now().UnixNano()
	f.loopAt.Store(now)
	f.relist.Store(now)
}

// sent records the notifications in order.
type sent struct {
	mu    sync.Mutex
	lines []string
}

func (s *sent) notify(state string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines = append(s.lines, state)
	return nil
}

func (s *sent) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.lines)
}

// waitFor waits until a notification starting with prefix was sent after
// the first `after` ones, and returns its index.
func (s *sent) waitFor(t *testing.T, prefix string, after int) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for i, l := range s.all() {
			if i >= after && strings.HasPrefix(l, prefix) {
				return i
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no %q after notification %d; sent: %q", prefix, after, s.all())
	return 0
}

func start(t *testing.T, f *fakes, deadline time.Duration) (*sent, func()) {
	t.Helper()
	s := &sent{}
	n := New(Config{Sources: f, Loop: f, PLEG: f, Pods: f, LoopStale: 200 * time.Millisecond,
		Log: slog.New(slog.DiscardHandler), Notify: s.notify,
		ReadyPoll: 5 * time.Millisecond, ReadyDeadline: deadline, StatusPeriod: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	return s, func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}

// TestReady: READY=1 waits for every source and then for a turn of the
// loop and a relist after that; STATUS= counts the pods; STOPPING=1 ends.
func TestReady(t *testing.T) {
	t.Setenv("WATCHDOG_USEC", "")
	f := &fakes{}
	f.turn() // the loop and the PLEG run, the sources have not reported
	s, stop := start(t, f, time.Hour)
	time.Sleep(50 * time.Millisecond)
	if got := s.all(); len(got) != 0 {
		t.Fatalf("sent %q before the sources reported", got)
	}
	f.ready.Store(true)
	time.Sleep(50 * time.Millisecond)
	if got := s.all(); len(got) != 0 {
		t.Fatalf("sent %q before the loop turned after the sources reported", got)
	}
	f.turn()
	i := s.waitFor(t, "READY=1", 0)
	if want := "READY=1\nSTATUS=3 pods: 2 running, 1 pending, 0 failed, 0 succeeded"; s.all()[i] != want {
		t.Errorf("ready: %q, want %q", s.all()[i], want)
	}
	s.waitFor(t, "STATUS=3 pods", i+1) // refreshed while healthy
	stop()
	if got := s.all(); got[len(got)-1] != "STOPPING=1\nSTATUS=stopping; pods keep running" {
		t.Errorf("last notification %q", got[len(got)-1])
	}
}

// TestReadyAtTheDeadline: a source that never reports delays READY=1 only
// until the deadline, and STATUS= names it.
func TestReadyAtTheDeadline(t *testing.T) {
	t.Setenv("WATCHDOG_USEC", "")
	f := &fakes{}
	f.turn()
	s, stop := start(t, f, 100*time.Millisecond)
	defer stop()
	i := s.waitFor(t, "READY=1", 0)
	if got := s.all()[i]; !strings.Contains(got, "sources not reported yet: http:https://fleet.example/pods; 3 pods") {
		t.Errorf("ready: %q", got)
	}
}

// TestWatchdog: WATCHDOG=1 while healthy; a loop that stops turning, or
// a PLEG that is unhealthy, stops it and says why in STATUS=; it comes
// back when they are healthy again.
func TestWatchdog(t *testing.T) {
	t.Setenv("WATCHDOG_USEC", "40000") // WATCHDOG=1 every 20 ms
	t.Setenv("WATCHDOG_PID", "")
	f := &fakes{}
	f.ready.Store(true)
	keepTurning := func(stop <-chan struct{}) {
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
				f.turn()
			}
		}
	}
	turning := make(chan struct{})
	go keepTurning(turning)
	s, stop := start(t, f, time.Hour)
	defer stop()
	i := s.waitFor(t, "WATCHDOG=1", 0)

	close(turning) // the loop is wedged
	j := s.waitFor(t, "STATUS=unhealthy: sync loop has not turned", i)
	pe := errors.New("pleg was last seen active 4m0s ago")
	f.plegErr.Store(&pe)
	f.turn()
	time.Sleep(100 * time.Millisecond) // five watchdog periods
	for _, l := range s.all()[j:] {
		if l == "WATCHDOG=1" {
			t.Fatalf("WATCHDOG=1 while unhealthy: %q", s.all()[j:])
		}
	}
	f.plegErr.Store(nil)
	turning = make(chan struct{})
	defer close(turning)
	go keepTurning(turning)
	s.waitFor(t, "WATCHDOG=1", j)
}
