package windowgate

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"tug/internal/pod"
	"tug/internal/window"
)

type sink struct {
	mu   sync.Mutex
	last map[string][]pod.SourceFile
	sets int
}

func (s *sink) Set(source string, files []pod.SourceFile) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		s.last = map[string][]pod.SourceFile{}
	}
	s.last[source] = files
	s.sets++
}

// hashes returns the hashes the sink last got from source, sorted.
func (s *sink) hashes(source string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, f := range s.last[source] {
		out = append(out, f.File+"="+f.Hash)
	}
	slices.Sort(out)
	return out
}

type prefetcher struct {
	calls [][]*pod.Pod
	err   error
}

func (p *prefetcher) Prefetch(_ context.Context, pods []*pod.Pod) error {
	p.calls = append(p.calls, pods)
	return p.err
}

const url = "https://fleet.example/pods"

func file(name, hash string, version uint64) pod.SourceFile {
	p := &pod.Pod{}
	p.Metadata.Name = "web-" + hash
	return pod.SourceFile{Origin: pod.Origin{Source: url, File: name}, Hash: hash, Version: version, Pods: []*pod.Pod{p}}
}

// A fixed week: 2026-11-30 is a Monday; the window is 02:00-04:00 UTC daily.
var (
	closed   = time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)
	opening  = time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	inWindow = time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
)

type fixture struct {
	now  time.Time
	sink *sink
	pf   *prefetcher
	gate *Gate
}

func newFixture(t *testing.T, update, download string, gated func(string) bool) *fixture {
	t.Helper()
	f := &fixture{now: closed, sink: &sink{}, pf: &prefetcher{}}
	f.gate = New(Config{Sink: f.sink, Update: window.MustParse(update), Download: window.MustParse(download),
		Node: "kiosk-1", Gated: gated, Prefetch: f.pf, Clock: func() time.Time { return f.now }})
	return f
}

func TestHoldUntilTheUpdateWindow(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "daily 02:00-04:00 tz=UTC", "", nil)
	g := f.gate
	// A fresh device runs its first content at once.
	g.Set(url, []pod.SourceFile{file(url, "v1", 1)})
	if got := f.sink.hashes(url); !slices.Equal(got, []string{url + "=v1"}) {
		t.Fatalf("first content: sink has %v", got)
	}
	// An update outside the window is held: the store keeps v1.
	g.Set(url, []pod.SourceFile{file(url, "v2", 2)})
	if got := f.sink.hashes(url); !slices.Equal(got, []string{url + "=v1"}) {
		t.Fatalf("held update: sink has %v", got)
	}
	if !g.Holds(url, "v2") || g.Holds(url, "v1") {
		t.Errorf("Holds(v2) = %v, Holds(v1) = %v; want v2 held only", g.Holds(url, "v2"), g.Holds(url, "v1"))
	}
	waits := g.Waits()
	if len(waits) != 1 || waits[0].File != url || waits[0].Hash != "v2" || waits[0].Version != 2 || !waits[0].Opens.Equal(opening) {
		t.Fatalf("Waits = %+v, want v2 waiting for %s", waits, opening)
	}
	// A fetch error while held passes (the store keeps its last good pods);
	// the update stays held, and so not checkpointed.
	failing := pod.SourceFile{Origin: pod.Origin{Source: url, File: url}, Hash: "v2", Err: errors.New("unreachable")}
	g.Set(url, []pod.SourceFile{failing})
	if last := f.sink.last[url]; len(last) != 1 || last[0].Err == nil {
		t.Fatalf("fetch error not passed on: %+v", last)
	}
	if !g.Holds(url, "v2") || len(g.Waits()) != 1 {
		t.Fatalf("after a fetch error: Holds(v2) = %v, Waits %+v; want v2 still held", g.Holds(url, "v2"), g.Waits())
	}
	g.Set(url, []pod.SourceFile{file(url, "v2", 2)})
	// Still closed: nothing passes.
	if sleep := g.step(ctx); sleep <= 0 || sleep > maxSleep {
		t.Errorf("step slept %s", sleep)
	}
	if got := f.sink.hashes(url); !slices.Equal(got, []string{url + "=v1"}) {
		t.Fatalf("closed window: sink has %v", got)
	}
	// The window opens: v2 passes and nothing waits.
	f.now = opening
	g.step(ctx)
	if got := f.sink.hashes(url); !slices.Equal(got, []string{url + "=v2"}) {
		t.Fatalf("open window: sink has %v", got)
	}
	if w := g.Waits(); len(w) != 0 || g.Holds(url, "v2") {
		t.Fatalf("Waits after the opening = %+v, Holds(v2) = %v", w, g.Holds(url, "v2"))
	}
	// Inside the window an update passes at once.
	f.now = inWindow
	g.Set(url, []pod.SourceFile{file(url, "v3", 3)})
	if got := f.sink.hashes(url); !slices.Equal(got, []string{url + "=v3"}) {
		t.Fatalf("update inside the window: sink has %v", got)
	}
}

func TestWhatIsNotHeld(t *testing.T) {
	tests := []struct {
		name   string
		update string
		gated  func(string) bool
		next   []pod.SourceFile
		want   []string
	}{
		{"a return to the applied content", "daily 02:00-04:00 tz=UTC", nil,
			[]pod.SourceFile{file(url, "v1", 1)}, []string{url + "=v1"}},
		{"no window", "", nil,
			[]pod.SourceFile{file(url, "v2", 2)}, []string{url + "=v2"}},
		{"a source that is not gated", "daily 02:00-04:00 tz=UTC", func(s string) bool { return s != url },
			[]pod.SourceFile{file(url, "v2", 2)}, []string{url + "=v2"}},
		{"a bundle whose own window is open", "daily 02:00-04:00 tz=UTC", nil,
			[]pod.SourceFile{withWindow(file(url, "v2", 2), "daily 00:00-01:30 tz=UTC")}, []string{url + "=v2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.update, "", tt.gated)
			f.gate.Set(url, []pod.SourceFile{file(url, "v1", 1)})
			f.gate.Set(url, tt.next)
			if got := f.sink.hashes(url); !slices.Equal(got, tt.want) {
				t.Fatalf("sink has %v, want %v", got, tt.want)
			}
			if w := f.gate.Waits(); len(w) != 0 {
				t.Fatalf("Waits = %+v", w)
			}
		})
	}
}

func withWindow(f pod.SourceFile, update string) pod.SourceFile {
	f.Windows.Update = update
	return f
}

func TestBundleWindowReplacesTheDevices(t *testing.T) {
	f := newFixture(t, "", "", nil) // the device has none: always open
	f.gate.Set(url, []pod.SourceFile{file(url, "v1", 1)})
	f.gate.Set(url, []pod.SourceFile{withWindow(file(url, "v2", 2), "Sat 22:00-Sun 06:00 tz=UTC")})
	if got := f.sink.hashes(url); !slices.Equal(got, []string{url + "=v1"}) {
		t.Fatalf("sink has %v, want v1 held back by the bundle's window", got)
	}
	w := f.gate.Waits()
	if len(w) != 1 || !w[0].Opens.Equal(time.Date(2026, 12, 5, 22, 0, 0, 0, time.UTC)) || w[0].Window != "Sat 22:00-Sun 06:00 tz=UTC" {
		t.Fatalf("Waits = %+v", w)
	}
}

func TestFilesOfADirectory(t *testing.T) {
	f := newFixture(t, "daily 02:00-04:00 tz=UTC", "", nil)
	a, b := file("/m/a.yaml", "a1", 0), file("/m/b.yaml", "b1", 0)
	f.gate.Set(url, []pod.SourceFile{a, b})
	// a changes, b is removed, c is new, d is broken: only d passes.
	broken := pod.SourceFile{Origin: pod.Origin{Source: url, File: "/m/d.yaml"}, Hash: "d0", Err: errors.New("parse")}
	f.gate.Set(url, []pod.SourceFile{file("/m/a.yaml", "a2", 0), file("/m/c.yaml", "c1", 0), broken})
	if got, want := f.sink.hashes(url), []string{"/m/a.yaml=a1", "/m/b.yaml=b1", "/m/d.yaml=d0"}; !slices.Equal(got, want) {
		t.Fatalf("sink has %v, want %v", got, want)
	}
	var held []string
	for _, w := range f.gate.Waits() {
		held = append(held, w.File+"="+w.Hash)
	}
	if want := []string{"/m/a.yaml=a2", "/m/b.yaml=", "/m/c.yaml=c1"}; !slices.Equal(held, want) {
		t.Fatalf("held %v, want %v", held, want)
	}
	f.now = opening
	f.gate.step(context.Background())
	if got, want := f.sink.hashes(url), []string{"/m/a.yaml=a2", "/m/c.yaml=c1", "/m/d.yaml=d0"}; !slices.Equal(got, want) {
		t.Fatalf("after the opening sink has %v, want %v", got, want)
	}
}

func TestPrefetchInTheDownloadWindow(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "daily 02:00-04:00 tz=UTC", "daily 01:30-02:00 tz=UTC", nil)
	f.gate.Set(url, []pod.SourceFile{file(url, "v1", 1)})
	f.gate.Set(url, []pod.SourceFile{file(url, "v2", 2)})
	f.gate.step(ctx) // 01:00: the download window is closed
	if len(f.pf.calls) != 0 {
		t.Fatalf("prefetched outside the download window: %d calls", len(f.pf.calls))
	}
	f.now = time.Date(2026, 11, 30, 1, 45, 0, 0, time.UTC)
	f.pf.err = errors.New("registry down")
	f.gate.step(ctx)
	f.pf.err = nil
	f.gate.step(ctx)
	f.gate.step(ctx) // done once: not again
	if len(f.pf.calls) != 2 || len(f.pf.calls[1]) != 1 || f.pf.calls[1][0].Metadata.Name != "web-v2" {
		t.Fatalf("prefetch calls %v, want a failed one then one of v2's pods", f.pf.calls)
	}
	if w := f.gate.Waits(); len(w) != 1 || !w[0].Prefetched {
		t.Fatalf("Waits = %+v, want v2 prefetched", w)
	}
	if got := f.sink.hashes(url); !slices.Equal(got, []string{url + "=v1"}) {
		t.Fatalf("prefetch applied: sink has %v", got)
	}
}

func TestRunPassesAtTheOpening(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The bubble's clock starts at 2000-01-01 00:00 UTC.
		s := &sink{}
		g := New(Config{Sink: s, Update: window.MustParse("daily 00:10-00:20 tz=UTC")})
		g.Set(url, []pod.SourceFile{file(url, "v1", 1)})
		g.Set(url, []pod.SourceFile{file(url, "v2", 2)})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- g.Run(ctx) }()
		time.Sleep(10*time.Minute - time.Second)
		synctest.Wait()
		if got := s.hashes(url); !slices.Equal(got, []string{url + "=v1"}) {
			t.Fatalf("at %s sink has %v, want v1", time.Now(), got)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if got := s.hashes(url); !slices.Equal(got, []string{url + "=v2"}) {
			t.Fatalf("at %s sink has %v, want v2", time.Now(), got)
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Run returned %v", err)
		}
	})
}
