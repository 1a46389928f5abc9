package images

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/containerd/containerd/v2/core/content"
	ctrimages "github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/remotes"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// step is one sample shown to the watchdog, at an offset from the pull's
// start.
type step struct {
	at time.Duration
	s  sample
}

// fetching returns a sample of done bytes of total, with blobs left.
func fetching(done, total int64) sample { return sample{Done: done, Total: total, Fetching: true} }

func TestWatchdogObserve(t *testing.T) {
	sec := time.Second
	tests := []struct {
		name           string
		stall, timeout time.Duration
		steps          []step
		wantCutAt      int   // index of the step that cuts; -1: none
		wantErr        error // what the cut wraps
	}{
		{"steady progress is never cut", 3 * sec, 0, []step{
			{1 * sec, fetching(10, 100)}, {3 * sec, fetching(20, 100)}, {5 * sec, fetching(30, 100)},
			{7 * sec, fetching(40, 100)}, {9 * sec, fetching(50, 100)}, {60 * sec, fetching(60, 100)},
		}, -1, nil},
		{"slow but progressing for longer than the deadline", 3 * sec, 0, []step{
			{2 * sec, fetching(1, 100)}, {4 * sec, fetching(2, 100)}, {6 * sec, fetching(3, 100)},
			{8 * sec, fetching(4, 100)}, {10 * sec, fetching(5, 100)},
		}, -1, nil},
		{"stall cut once the deadline passes", 3 * sec, 0, []step{
			{1 * sec, fetching(10, 100)}, {2 * sec, fetching(10, 100)}, {3 * sec, fetching(10, 100)},
			{4 * sec, fetching(10, 100)},
		}, 3, ErrPullStalled},
		{"no byte at all from the start", 3 * sec, 0, []step{
			{1 * sec, fetching(0, 0)}, {2 * sec, fetching(0, 0)}, {3 * sec, fetching(0, 0)},
		}, 2, ErrPullStalled},
		{"a blob started over is no progress", 3 * sec, 0, []step{
			{1 * sec, fetching(50, 100)}, {2 * sec, fetching(10, 100)}, {3 * sec, fetching(40, 100)},
			{4 * sec, fetching(50, 100)},
		}, 3, ErrPullStalled},
		{"unpacking is never a stall", 3 * sec, 0, []step{
			{1 * sec, fetching(100, 100)}, {2 * sec, sample{Done: 100, Total: 100}},
			{30 * sec, sample{Done: 100, Total: 100}}, {90 * sec, sample{Done: 100, Total: 100}},
		}, -1, nil},
		{"a stall after unpacking started counts from the last sample", 3 * sec, 0, []step{
			{1 * sec, sample{Done: 100, Total: 100}}, {10 * sec, fetching(100, 200)},
			{12 * sec, fetching(100, 200)}, {13 * sec, fetching(100, 200)},
		}, 3, ErrPullStalled},
		{"overall timeout cuts steady progress", 3 * sec, 5 * sec, []step{
			{1 * sec, fetching(10, 100)}, {2 * sec, fetching(20, 100)}, {4 * sec, fetching(30, 100)},
			{5 * sec, fetching(40, 100)}, {6 * sec, fetching(50, 100)},
		}, 3, ErrPullTimeout},
		{"overall timeout cuts unpacking", 3 * sec, 5 * sec, []step{
			{1 * sec, sample{Done: 100, Total: 100}}, {6 * sec, sample{Done: 100, Total: 100}},
		}, 1, ErrPullTimeout},
	}
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWatchdog(tt.stall, tt.timeout, start)
			cutAt := -1
			var err error
			for i, st := range tt.steps {
				if err = w.observe(start.Add(st.at), st.s); err != nil {
					cutAt = i
					break
				}
			}
			if cutAt != tt.wantCutAt {
				t.Fatalf("cut at step %d (%v), want %d", cutAt, err, tt.wantCutAt)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("cut with %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// fakeSource is a progress source whose bytes grow by rate per second of
// the (fake) clock until stallAt, and then stay.
type fakeSource struct {
	start   time.Time
	rate    int64
	stallAt time.Duration // 0: never
	reads   int
}

func (f *fakeSource) measure(context.Context) (sample, error) {
	f.reads++
	d := time.Since(f.start)
	if f.stallAt > 0 && d > f.stallAt {
		d = f.stallAt
	}
	return fetching(f.rate*int64(d/time.Second), 1<<30), nil
}

// TestWatch runs the watchdog's loop on the fake clock of synctest.
func TestWatch(t *testing.T) {
	tests := []struct {
		name           string
		stall, timeout time.Duration
		stallAt        time.Duration // when the source stops growing; 0: never
		runFor         time.Duration // how long the pull lasts if not cut
		wantErr        error
		wantCutAfter   time.Duration // bounds of when it is cut
		wantCutBefore  time.Duration
	}{
		{name: "steady progress runs to its end", stall: 3 * time.Second, runFor: 2 * time.Minute},
		{name: "stall cut after the deadline", stall: 3 * time.Second, stallAt: 10 * time.Second, runFor: time.Hour,
			wantErr: ErrPullStalled, wantCutAfter: 13 * time.Second, wantCutBefore: 15 * time.Second},
		{name: "overall timeout", stall: 3 * time.Second, timeout: 30 * time.Second, runFor: time.Hour,
			wantErr: ErrPullTimeout, wantCutAfter: 30 * time.Second, wantCutBefore: 32 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				src := &fakeSource{start: start, rate: 1000, stallAt: tt.stallAt}
				ctx, cancel := context.WithTimeout(t.Context(), tt.runFor)
				defer cancel()
				var seen []sample
				err := watch(ctx, src, newWatchdog(tt.stall, tt.timeout, start), func(s sample) { seen = append(seen, s) })
				took := time.Since(start)
				if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
					t.Fatalf("watch = %v after %s, want %v", err, took, tt.wantErr)
				}
				if tt.wantErr != nil && (took < tt.wantCutAfter || took > tt.wantCutBefore) {
					t.Errorf("cut after %s, want between %s and %s", took, tt.wantCutAfter, tt.wantCutBefore)
				}
				if tt.wantErr == nil && took != tt.runFor {
					t.Errorf("watch returned after %s, want when the pull ended (%s)", took, tt.runFor)
				}
				if len(seen) == 0 || seen[0].Done != 3000 {
					t.Errorf("first sample %v, want the bytes at %s", seen, progressAfter)
				}
			})
		})
	}
}

// TestWatchQuickPullReadsNothing: a pull over within progressAfter costs
// no read of containerd's ingests.
func TestWatchQuickPullReadsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{start: time.Now(), rate: 1}
		ctx, cancel := context.WithTimeout(t.Context(), progressAfter-time.Millisecond)
		defer cancel()
		if err := watch(ctx, src, newWatchdog(time.Second, 0, time.Now()), func(sample) {}); err != nil || src.reads != 0 {
			t.Fatalf("watch = %v with %d reads, want nil and none", err, src.reads)
		}
	})
}

// fakeIngests is containerd's ingest list, settable.
type fakeIngests struct {
	mu       sync.Mutex
	statuses []content.Status
}

func (f *fakeIngests) ListStatuses(context.Context, ...string) ([]content.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]content.Status(nil), f.statuses...), nil
}

func TestPullProgress(t *testing.T) {
	ctx := context.Background()
	desc := func(mt, data string, size int64) ocispec.Descriptor {
		return ocispec.Descriptor{MediaType: mt, Digest: digest.FromString(data), Size: size}
	}
	manifest := desc(ocispec.MediaTypeImageManifest, "m", 500)
	config := desc(ocispec.MediaTypeImageConfig, "c", 200)
	layer1 := desc(ocispec.MediaTypeImageLayerGzip, "l1", 10_000)
	layer2 := desc(ocispec.MediaTypeImageLayerGzip, "l2", 20_000)

	ingests := &fakeIngests{}
	pp := newPullProgress(ingests)
	if s, _ := pp.measure(ctx); !s.Fetching || s.Total != 0 {
		t.Fatalf("before anything: %+v, want fetching (resolving) with nothing known", s)
	}
	// The handler a pull runs: a manifest's children are its config and
	// layers, fetched later.
	h := pp.wrap(ctrimages.HandlerFunc(func(_ context.Context, d ocispec.Descriptor) ([]ocispec.Descriptor, error) {
		if d.Digest == manifest.Digest {
			return []ocispec.Descriptor{config, layer1, layer2}, nil
		}
		return nil, nil
	}))
	for _, d := range []ocispec.Descriptor{manifest, config} {
		if _, err := h.Handle(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	ingests.statuses = []content.Status{
		{Ref: remotes.MakeRefKey(ctx, layer1), Offset: 4000, Total: layer1.Size},
		{Ref: "layer-sha256:another-pull", Offset: 99_999},
	}
	s, err := pp.measure(ctx)
	if want := (sample{Done: 500 + 200 + 4000, Total: 30_700, Fetching: true}); err != nil || s != want {
		t.Fatalf("mid-pull: %+v (%v), want %+v", s, err, want)
	}
	if got := s.String(); got != "4.7 kB of 30.7 kB" {
		t.Errorf("String() = %q", got)
	}
	for _, d := range []ocispec.Descriptor{layer1, layer2} {
		if _, err := h.Handle(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	ingests.statuses = nil
	if s, _ := pp.measure(ctx); s != (sample{Done: 30_700, Total: 30_700}) {
		t.Errorf("all fetched: %+v, want every byte and nothing left to fetch", s)
	}
}

func TestHumanBytes(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {999, "999 B"}, {1000, "1.0 kB"}, {12_345_678, "12.3 MB"},
		{45_600_000, "45.6 MB"}, {2_500_000_000, "2.5 GB"},
	}
	for _, tt := range tests {
		if got := humanBytes(tt.n); got != tt.want {
			t.Errorf("humanBytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
