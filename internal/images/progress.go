package images

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/containerd/containerd/v2/core/content"
	ctrimages "github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/remotes"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Timing of the progress of a registry pull.
const (
	// DefaultPullProgressDeadline is how long a pull may fetch no new byte
	// before it is cut, when Config gives none (the kubelet's
	// --image-pull-progress-deadline had the same default).
	DefaultPullProgressDeadline = time.Minute
	// progressAfter is when a pull's progress is first read: a pull that
	// is over sooner costs no read of containerd's ingests, and shows no
	// byte counts.
	progressAfter = 3 * time.Second
	// progressInterval is how often it is read after that.
	progressInterval = time.Second
	// progressLogEvery is how often a long pull logs its progress (Debug).
	progressLogEvery = 10 * time.Second
	// pullEventAfter is when a caller waiting on a pull first records a
	// Pulling event with its progress, pullEventEvery how often after
	// that.
	pullEventAfter = 5 * time.Second
	pullEventEvery = 10 * time.Second
)

// sample is one reading of a pull's progress.
type sample struct {
	// Done is the bytes fetched of the blobs the pull has met, Total
	// their size. Total grows as the pull reads manifests and meets their
	// config and layers.
	Done, Total int64
	// Fetching reports whether a blob is still to be fetched (or none is
	// known yet: the reference is being resolved). When false, what is
	// left is unpacking, which moves no bytes.
	Fetching bool
}

// String is "12.3 MB of 45.6 MB".
func (s sample) String() string {
	return humanBytes(s.Done) + " of " + humanBytes(s.Total)
}

// humanBytes writes n in decimal units with one decimal, as docker and
// ctr show sizes: "512 B", "1.2 kB", "12.3 MB".
func humanBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTP"[exp])
}

// watchdog decides when a pull is cut, from the samples it is shown: when
// the bytes fetched have not grown for stall while something is being
// fetched, or, if timeout is not 0, when the pull has run for timeout. A
// pull that only unpacks is never cut for a stall. It reads no clock: the
// caller passes the time of each sample. Not safe for concurrent use.
type watchdog struct {
	stall, timeout time.Duration
	start          time.Time
	lastProgress   time.Time // the last sample with new bytes, or start
	best           int64     // the most bytes seen
	unpacking      bool      // the last sample had nothing left to fetch
}

func newWatchdog(stall, timeout time.Duration, start time.Time) *watchdog {
	return &watchdog{stall: stall, timeout: timeout, start: start, lastProgress: start}
}

// observe takes the sample read at now and returns nil, or why the pull
// must be cut (an error wrapping ErrPullStalled or ErrPullTimeout).
// Bytes count as progress only beyond the most seen: a fetch that starts
// a blob over is not progress until it passes where it was. A sample that
// finds nothing left to fetch, and the first one that finds fetching again
// after it, count as progress too.
func (w *watchdog) observe(now time.Time, s sample) error {
	if s.Done > w.best || !s.Fetching || w.unpacking {
		w.best = max(w.best, s.Done)
		w.lastProgress = now
	}
	w.unpacking = !s.Fetching
	if w.timeout > 0 && now.Sub(w.start) >= w.timeout {
		return fmt.Errorf("%w: still pulling after %s (%s)", ErrPullTimeout, w.timeout, s)
	}
	if w.stall > 0 && now.Sub(w.lastProgress) >= w.stall {
		return fmt.Errorf("%w: no progress for %s (%s)", ErrPullStalled, now.Sub(w.lastProgress).Round(time.Second), s)
	}
	return nil
}

// progressSource reads a pull's progress.
type progressSource interface {
	measure(ctx context.Context) (sample, error)
}

// watch reads src after progressAfter, then every progressInterval, shows
// each sample to w and to seen, and returns the watchdog's verdict, or nil
// when ctx is done (the pull is over). A failed read counts as no new
// bytes.
func watch(ctx context.Context, src progressSource, w *watchdog, seen func(sample)) error {
	timer := time.NewTimer(progressAfter)
	defer timer.Stop()
	var last sample
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		if s, err := src.measure(ctx); err == nil {
			last = s
			seen(s)
		} else if ctx.Err() != nil {
			return nil
		}
		if err := w.observe(time.Now(), last); err != nil {
			return err
		}
		timer.Reset(progressInterval)
	}
}

// ingestLister lists containerd's ingests under way (implemented by
// containerd's content store).
type ingestLister interface {
	ListStatuses(ctx context.Context, filters ...string) ([]content.Status, error)
}

// pullProgress follows the blobs of one registry pull, as ctr's progress
// display does: the descriptors the pull's handlers meet (index,
// manifest, config and layers, the latter as soon as their manifest is
// read), which of them are fetched, and, for the others, the bytes written
// so far to their ingest in containerd's content store. Safe for
// concurrent use.
type pullProgress struct {
	ingests ingestLister

	mu    sync.Mutex
	blobs map[string]*blob // by digest
}

// blob is one descriptor of a pull.
type blob struct {
	ref     string // its ingest's ref (remotes.MakeRefKey)
	size    int64
	fetched bool
}

func newPullProgress(ingests ingestLister) *pullProgress {
	return &pullProgress{ingests: ingests, blobs: map[string]*blob{}}
}

// wrap returns h recording each descriptor it is given and its children.
// In a pull that unpacks, it goes inside containerd's unpacker, so it sees
// a manifest's layers as its children and each layer's fetch.
func (pp *pullProgress) wrap(h ctrimages.Handler) ctrimages.Handler {
	return ctrimages.HandlerFunc(func(ctx context.Context, desc ocispec.Descriptor) ([]ocispec.Descriptor, error) {
		pp.add(ctx, desc)
		children, err := h.Handle(ctx, desc)
		if err == nil || errors.Is(err, ctrimages.ErrSkipDesc) {
			pp.mu.Lock()
			pp.blobs[desc.Digest.String()].fetched = true
			pp.mu.Unlock()
		}
		for _, c := range children {
			pp.add(ctx, c)
		}
		return children, err
	})
}

func (pp *pullProgress) add(ctx context.Context, desc ocispec.Descriptor) {
	ref := remotes.MakeRefKey(ctx, desc)
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if _, ok := pp.blobs[desc.Digest.String()]; !ok {
		pp.blobs[desc.Digest.String()] = &blob{ref: ref, size: desc.Size}
	}
}

// measure reads the pull's progress: the fetched blobs whole, the others
// as far as their ingests have got.
func (pp *pullProgress) measure(ctx context.Context) (sample, error) {
	statuses, err := pp.ingests.ListStatuses(ctx)
	if err != nil {
		return sample{}, fmt.Errorf("list ingests: %w", err)
	}
	offsets := make(map[string]int64, len(statuses))
	for _, st := range statuses {
		offsets[st.Ref] = st.Offset
	}
	pp.mu.Lock()
	defer pp.mu.Unlock()
	s := sample{Fetching: len(pp.blobs) == 0}
	for _, b := range pp.blobs {
		s.Total += b.size
		if b.fetched {
			s.Done += b.size
			continue
		}
		s.Fetching = true
		s.Done += min(offsets[b.ref], b.size)
	}
	return s, nil
}
