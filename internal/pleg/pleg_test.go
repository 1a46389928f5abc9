package pleg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"tug/internal/pod"
)

// fakeLister is a runtime with settable state: ListContainers returns a
// copy of containers, or err. While block is non-nil, a call waits until
// it is closed (or its context is done).
type fakeLister struct {
	mu         sync.Mutex
	containers []pod.RuntimeContainer
	err        error
	block      chan struct{}
	calls      int
}

func (f *fakeLister) ListContainers(ctx context.Context) ([]pod.RuntimeContainer, error) {
	f.mu.Lock()
	f.calls++
	block := f.block
	f.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	return slices.Clone(f.containers), nil
}

func (f *fakeLister) set(cs ...pod.RuntimeContainer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.containers, f.err = cs, nil
}

func (f *fakeLister) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

func (f *fakeLister) setBlock(ch chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.block = ch
}

func (f *fakeLister) numCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// fakeClock is a clock that moves only when told.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// logRecorder is a slog.Handler that keeps the records, to check that a
// state is logged once when it changes.
type logRecorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecorder) WithGroup(string) slog.Handler      { return h }

func (h *logRecorder) count(level slog.Level, msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.recs {
		if r.Level == level && r.Message == msg {
			n++
		}
	}
	return n
}

type fixture struct {
	lister *fakeLister
	clock  *fakeClock
	logs   *logRecorder
	p      *PLEG
}

func newFixture(cfg Config) *fixture {
	f := &fixture{lister: &fakeLister{}, clock: &fakeClock{now: t0}, logs: &logRecorder{}}
	cfg.Lister, cfg.Log = f.lister, slog.New(f.logs)
	if cfg.Clock == nil {
		cfg.Clock = f.clock.Now
	}
	f.p = New(cfg)
	return f
}

// drain returns the events waiting in the channel.
func drain(p *PLEG) []Event {
	var evs []Event
	for {
		select {
		case e := <-p.Events():
			evs = append(evs, e)
		default:
			return evs
		}
	}
}

type evKey struct {
	typ EventType
	id  string
}

func keys(evs []Event) []evKey {
	var ks []evKey
	for _, e := range evs {
		ks = append(ks, evKey{e.Type, e.ContainerID})
	}
	return ks
}

func TestRelist(t *testing.T) {
	f := newFixture(Config{})
	p, ctx := f.p, context.Background()
	if p.All() != nil || p.PodContainers("u1") != nil || !p.LastRelist().IsZero() {
		t.Fatal("cache not empty before the first relist")
	}

	a, b := ctr("u1", "a", pod.RunRunning), ctr("u2", "b", pod.RunCreated)
	f.lister.set(b, a) // the Lister's order is kept
	if err := p.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	evs := drain(p)
	if got, want := keys(evs), []evKey{{ContainerStarted, "a"}, {ContainerChanged, "b"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("first relist: %v, want %v", got, want)
	}
	for _, e := range evs {
		if !e.At.Equal(t0) {
			t.Errorf("event At = %v, want the clock's %v", e.At, t0)
		}
	}
	if got := p.All(); !reflect.DeepEqual(got, []pod.RuntimeContainer{b, a}) {
		t.Errorf("All = %+v", got)
	}
	if got := p.PodContainers("u1"); !reflect.DeepEqual(got, []pod.RuntimeContainer{a}) {
		t.Errorf("PodContainers(u1) = %+v", got)
	}
	if got := p.PodContainers("nope"); got != nil {
		t.Errorf("PodContainers(nope) = %+v", got)
	}
	if !p.LastRelist().Equal(t0) {
		t.Errorf("LastRelist = %v, want %v", p.LastRelist(), t0)
	}
	// The returned slices are the caller's.
	all := p.All()
	all[0].State = pod.RunUnknown
	pc := p.PodContainers("u1")
	pc[0].ExitCode = 99
	if p.All()[0].State != pod.RunCreated || p.PodContainers("u1")[0].ExitCode != 0 {
		t.Error("changing a returned slice changed the cache")
	}

	// Nothing changed: no events.
	f.clock.advance(time.Second)
	if err := p.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	if evs := drain(p); len(evs) != 0 {
		t.Errorf("unchanged relist: %v", evs)
	}

	// a dies OOM-killed, b starts.
	f.clock.advance(time.Second)
	aDead := with(ctr("u1", "a", pod.RunExited), func(c *pod.RuntimeContainer) { c.ExitCode, c.OOMKilled = 137, true })
	bRun := ctr("u2", "b", pod.RunRunning)
	f.lister.set(bRun, aDead)
	if err := p.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	want := []Event{
		{Type: ContainerDied, PodUID: "u1", ContainerID: "a", Name: "n-a", ExitCode: 137, OOMKilled: true, At: t0.Add(2 * time.Second)},
		{Type: ContainerStarted, PodUID: "u2", ContainerID: "b", Name: "n-b", At: t0.Add(2 * time.Second)},
	}
	if evs := drain(p); !reflect.DeepEqual(evs, want) {
		t.Errorf("events =\n%+v\nwant\n%+v", evs, want)
	}
	if got := p.PodContainers("u1"); len(got) != 1 || got[0] != aDead {
		t.Errorf("cache after death: %+v", got)
	}

	// Everything removed.
	f.lister.set()
	if err := p.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := keys(drain(p)), []evKey{{ContainerRemoved, "a"}, {ContainerDied, "b"}, {ContainerRemoved, "b"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("removal: %v, want %v", got, want)
	}
	if got := p.All(); got != nil {
		t.Errorf("All after removal = %+v", got)
	}
}

// A failed relist changes nothing: no Removed events, the cache and
// LastRelist keep the last good listing. The next good relist reports what
// changed since that listing.
func TestRelistFailureKeepsCache(t *testing.T) {
	f := newFixture(Config{})
	p, ctx := f.p, context.Background()
	a, b := ctr("u1", "a", pod.RunRunning), ctr("u1", "b", pod.RunRunning)
	f.lister.set(a, b)
	if err := p.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	drain(p)

	boom := errors.New("containerd: connection refused")
	f.lister.fail(boom)
	for range 3 {
		f.clock.advance(time.Second)
		if err := p.Relist(ctx); !errors.Is(err, boom) {
			t.Fatalf("Relist = %v, want %v", err, boom)
		}
	}
	if evs := drain(p); len(evs) != 0 {
		t.Errorf("failed relists sent %v", evs)
	}
	if got := p.All(); !reflect.DeepEqual(got, []pod.RuntimeContainer{a, b}) {
		t.Errorf("cache after failures = %+v", got)
	}
	if !p.LastRelist().Equal(t0) {
		t.Errorf("LastRelist = %v, want the last success %v", p.LastRelist(), t0)
	}
	if n := f.logs.count(slog.LevelWarn, "relist failing; keeping the last good listing"); n != 1 {
		t.Errorf("%d warnings for 3 failures, want 1 (state changes only)", n)
	}

	f.clock.advance(time.Second)
	f.lister.set(with(ctr("u1", "a", pod.RunExited), func(c *pod.RuntimeContainer) { c.ExitCode = 1 }), b)
	if err := p.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := keys(drain(p)), []evKey{{ContainerDied, "a"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("after recovery: %v, want %v", got, want)
	}
	if n := f.logs.count(slog.LevelInfo, "relist recovered"); n != 1 {
		t.Errorf("%d recovery logs, want 1", n)
	}
	// Failing again warns again: a new state change.
	f.lister.fail(boom)
	p.Relist(ctx)
	if n := f.logs.count(slog.LevelWarn, "relist failing; keeping the last good listing"); n != 2 {
		t.Errorf("%d warnings after a second failure episode, want 2", n)
	}
}

func TestHealthy(t *testing.T) {
	f := newFixture(Config{HealthyAfter: 3 * time.Minute})
	p, ctx := f.p, context.Background()
	if err := p.Healthy(); !errors.Is(err, ErrUnhealthy) {
		t.Errorf("Healthy before any relist = %v, want ErrUnhealthy", err)
	}
	if err := p.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Healthy(); err != nil {
		t.Errorf("Healthy after a relist = %v", err)
	}
	f.lister.fail(errors.New("down"))
	f.clock.advance(3 * time.Minute)
	p.Relist(ctx)
	if err := p.Healthy(); err != nil {
		t.Errorf("Healthy at exactly the threshold = %v", err)
	}
	f.clock.advance(time.Second)
	p.Relist(ctx)
	err := p.Healthy()
	if !errors.Is(err, ErrUnhealthy) {
		t.Fatalf("Healthy past the threshold = %v, want ErrUnhealthy", err)
	}
	if want := "pleg: not healthy: last successful relist 3m1s ago (threshold 3m0s)"; err.Error() != want {
		t.Errorf("Healthy = %q, want %q", err, want)
	}
	f.lister.set()
	if err := p.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Healthy(); err != nil {
		t.Errorf("Healthy after recovery = %v", err)
	}
}

// A full channel drops (and counts) instead of blocking the relist.
func TestChannelFullDrops(t *testing.T) {
	f := newFixture(Config{ChannelSize: 2})
	p, ctx := f.p, context.Background()
	var cs []pod.RuntimeContainer
	for i := range 5 {
		cs = append(cs, ctr("u", fmt.Sprintf("c%d", i), pod.RunRunning))
	}
	f.lister.set(cs...)
	done := make(chan error)
	go func() { done <- p.Relist(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Relist blocked on a full channel")
	}
	if got := p.Dropped(); got != 3 {
		t.Errorf("Dropped = %d, want 3", got)
	}
	if got := keys(drain(p)); !reflect.DeepEqual(got, []evKey{{ContainerStarted, "c0"}, {ContainerStarted, "c1"}}) {
		t.Errorf("delivered %v, want the first two", got)
	}
	if len(p.All()) != 5 {
		t.Errorf("the cache holds %d containers, want all 5 despite the drops", len(p.All()))
	}
	if n := f.logs.count(slog.LevelWarn, "event channel full; dropping events"); n != 1 {
		t.Errorf("%d drop warnings, want 1", n)
	}
	cs[0].State, cs[0].PID = pod.RunExited, 0
	f.lister.set(cs...)
	if err := p.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	if got := keys(drain(p)); !reflect.DeepEqual(got, []evKey{{ContainerDied, "c0"}}) {
		t.Errorf("after draining: %v", got)
	}
	if p.Dropped() != 3 || f.logs.count(slog.LevelInfo, "event channel has room again") != 1 {
		t.Errorf("Dropped = %d; room-again logs = %d", p.Dropped(), f.logs.count(slog.LevelInfo, "event channel has room again"))
	}
}

func TestNewDefaults(t *testing.T) {
	p := New(Config{Lister: &fakeLister{}})
	if p.period != DefaultPeriod || p.healthyAfter != DefaultHealthyAfter || cap(p.events) != DefaultChannelSize || p.clock.Now().IsZero() || p.log == nil {
		t.Errorf("defaults: period %v, healthyAfter %v, channel %d", p.period, p.healthyAfter, cap(p.events))
	}
	defer func() {
		if recover() == nil {
			t.Error("New without a Lister did not panic")
		}
	}()
	New(Config{})
}

// runPLEG starts p.Run in the bubble and returns a function that stops it
// and checks that it returned nil.
func runPLEG(t *testing.T, p *PLEG) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	return func() {
		t.Helper()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	}
}

func TestRunPeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(Config{Period: time.Second, Clock: time.Now})
		f.lister.set(ctr("u", "a", pod.RunRunning))
		start := time.Now()
		stop := runPLEG(t, f.p)
		synctest.Wait()
		if n := f.lister.numCalls(); n != 1 {
			t.Fatalf("%d relists at start, want 1 at once", n)
		}
		if got := keys(drain(f.p)); !reflect.DeepEqual(got, []evKey{{ContainerStarted, "a"}}) {
			t.Errorf("events = %v", got)
		}
		time.Sleep(999 * time.Millisecond)
		synctest.Wait()
		if n := f.lister.numCalls(); n != 1 {
			t.Errorf("%d relists before the period, want 1", n)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if n := f.lister.numCalls(); n != 2 {
			t.Errorf("%d relists after one period, want 2", n)
		}
		f.lister.set(with(ctr("u", "a", pod.RunExited), func(c *pod.RuntimeContainer) { c.ExitCode = 2 }))
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if n := f.lister.numCalls(); n != 5 {
			t.Errorf("%d relists after 4 periods, want 5", n)
		}
		evs := drain(f.p)
		if len(evs) != 1 || evs[0].Type != ContainerDied || evs[0].ExitCode != 2 || !evs[0].At.Equal(start.Add(2*time.Second)) {
			t.Errorf("events = %+v, want Died 2 at +2s", evs)
		}
		if got := f.p.LastRelist(); !got.Equal(start.Add(4 * time.Second)) {
			t.Errorf("LastRelist = %v, want start+4s", got.Sub(start))
		}
		stop()
	})
}

// Failing relists are retried every period; Healthy turns false after
// HealthyAfter without success, and true again after one.
func TestRunRetriesAndHealthy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(Config{Period: time.Second, HealthyAfter: 3 * time.Minute, Clock: time.Now})
		f.lister.set(ctr("u", "a", pod.RunRunning))
		stop := runPLEG(t, f.p)
		synctest.Wait()
		drain(f.p)
		if err := f.p.Healthy(); err != nil {
			t.Fatalf("Healthy = %v", err)
		}
		f.lister.fail(errors.New("containerd restarting"))
		time.Sleep(3 * time.Minute)
		synctest.Wait()
		if err := f.p.Healthy(); err != nil {
			t.Errorf("Healthy at 3m = %v", err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if err := f.p.Healthy(); !errors.Is(err, ErrUnhealthy) {
			t.Errorf("Healthy at 3m1s = %v, want ErrUnhealthy", err)
		}
		if n := f.lister.numCalls(); n != 182 {
			t.Errorf("%d relists in 3m1s, want 182 (one per period)", n)
		}
		if evs := drain(f.p); len(evs) != 0 {
			t.Errorf("failed relists sent %v", evs)
		}
		if n := f.logs.count(slog.LevelWarn, "relist failing; keeping the last good listing"); n != 1 {
			t.Errorf("%d warnings, want 1", n)
		}
		f.lister.set(ctr("u", "a", pod.RunRunning))
		time.Sleep(time.Second)
		synctest.Wait()
		if err := f.p.Healthy(); err != nil {
			t.Errorf("Healthy after recovery = %v", err)
		}
		if n := f.logs.count(slog.LevelInfo, "relist recovered"); n != 1 {
			t.Errorf("%d recovery logs, want 1", n)
		}
		stop()
	})
}

// Wake-ups coalesce: many that arrive before Run gets to them (before it
// starts, or while it relists) make one relist.
func TestWakeCoalesces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(Config{Period: time.Hour, Clock: time.Now})
		for range 10 {
			f.p.Wake()
		}
		stop := runPLEG(t, f.p)
		synctest.Wait()
		if n := f.lister.numCalls(); n != 2 {
			t.Fatalf("%d relists after 10 wake-ups before Run, want 2 (the first, then one)", n)
		}
		gate := make(chan struct{})
		f.lister.setBlock(gate)
		f.p.Wake()
		synctest.Wait() // Run is inside relist 3
		for range 10 {
			f.p.Wake()
		}
		f.lister.setBlock(nil)
		close(gate)
		synctest.Wait()
		if n := f.lister.numCalls(); n != 4 {
			t.Errorf("%d relists, want 4 (10 wake-ups during relist 3 make one)", n)
		}
		stop()
	})
}

// A wake-up during a relist causes another relist right after it: the
// change that caused it may have come after the listing.
func TestWakeDuringRelist(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(Config{Period: time.Hour, Clock: time.Now})
		gate := make(chan struct{})
		f.lister.setBlock(gate)
		stop := runPLEG(t, f.p)
		synctest.Wait() // Run is inside the first relist
		f.p.Wake()
		f.p.Wake()
		f.lister.setBlock(nil)
		f.lister.set(ctr("u", "a", pod.RunRunning)) // the change behind the wake-up
		close(gate)
		synctest.Wait()
		if n := f.lister.numCalls(); n != 2 {
			t.Errorf("%d relists, want 2 (the blocked one, then one for the wake-ups)", n)
		}
		if got := keys(drain(f.p)); !reflect.DeepEqual(got, []evKey{{ContainerStarted, "a"}}) {
			t.Errorf("events = %v", got)
		}
		stop()
	})
}

func TestWakeNeverBlocks(t *testing.T) {
	p := New(Config{Lister: &fakeLister{}})
	done := make(chan struct{})
	go func() {
		for range 10000 {
			p.Wake()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Wake blocked without Run")
	}
}

// Run returns nil promptly when ctx is done, even inside a relist, and that
// is not logged as a failure.
func TestRunStopsInsideRelist(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(Config{Clock: time.Now})
		f.lister.setBlock(make(chan struct{})) // never released
		stop := runPLEG(t, f.p)
		synctest.Wait()
		stop()
		if n := f.logs.count(slog.LevelWarn, "relist failing; keeping the last good listing"); n != 0 {
			t.Errorf("stopping logged %d relist failures", n)
		}
	})
}

// A listing that hangs (a wedged containerd) is given up after listTimeout
// and counts as a failure; the next period retries.
func TestRelistTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(Config{Period: time.Second, Clock: time.Now})
		f.lister.setBlock(make(chan struct{})) // never released
		stop := runPLEG(t, f.p)
		time.Sleep(listTimeout)
		synctest.Wait()
		if n := f.logs.count(slog.LevelWarn, "relist failing; keeping the last good listing"); n != 1 {
			t.Errorf("%d warnings after a hung listing, want 1", n)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if n := f.lister.numCalls(); n != 2 {
			t.Errorf("%d listings, want 2 (retried after the period)", n)
		}
		stop()
	})
}

// BenchmarkRelist measures a whole relist against a fake Lister that hands
// over a fresh listing each time (as podruntime does): the PLEG's own cost,
// without containerd's.
func BenchmarkRelist(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("containers=%d", n), func(b *testing.B) {
			var cs []pod.RuntimeContainer
			for _, c := range listing(n) {
				cs = append(cs, c)
			}
			f := &fakeLister{containers: cs}
			p := New(Config{Lister: f})
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Relist(ctx); err != nil {
					b.Fatal(err)
				}
				drain(p)
			}
		})
	}
}
