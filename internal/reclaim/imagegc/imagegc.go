package imagegc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"tug/internal/clock"
)

// Image is one image of the store: all the names (refs) that point at the
// same content, which are removed together.
type Image struct {
	ID        string   // content identity (the target digest)
	Refs      []string // names of this image in the store
	Size      int64    // bytes it takes on the image filesystem
	Pinned    bool     // never collected (a sideloaded archive still present)
	CreatedAt time.Time
}

// Images lists and removes the images of the store.
type Images interface {
	ListImages(ctx context.Context) ([]Image, error)
	// RemoveImage removes one name; a missing name is not an error.
	RemoveImage(ctx context.Context, ref string) error
}

// InUse reports the images that must be kept: for every container that
// exists, every pod wanted by a source and every pod of the URL
// checkpoint, its image ref and (when known) its image ID.
type InUse interface {
	ImagesInUse(ctx context.Context) (map[string]bool, error)
}

// FS reports the image filesystem's capacity and available bytes.
type FS interface {
	ImageFS(ctx context.Context) (capacity, available uint64, err error)
}

// Leftovers are what failed pulls keep for the next pull to resume from:
// content no image names, which the GC attributes and frees first.
type Leftovers interface {
	// PullLeftovers returns the bytes failed pulls keep.
	PullLeftovers(ctx context.Context) (int64, error)
	// FreePullLeftovers frees them and returns the bytes freed.
	FreePullLeftovers(ctx context.Context) (int64, error)
}

// Policy holds the thresholds. The zero Policy is the kubelet's default:
// high 85, low 80, no minimum age, every 5 minutes.
type Policy struct {
	HighThresholdPercent int           // collect when usage is at or above; 0 means 85, 100 disables
	LowThresholdPercent  int           // collect down to; 0 means 80
	MinAge               time.Duration // an image is kept this long after it was first seen
	Period               time.Duration // how often Run collects; 0 means 5m
}

func (p Policy) withDefaults() Policy {
	if p.HighThresholdPercent == 0 {
		p.HighThresholdPercent = 85
	}
	if p.LowThresholdPercent == 0 {
		p.LowThresholdPercent = 80
	}
	if p.Period == 0 {
		p.Period = 5 * time.Minute
	}
	return p
}

// Validate reports whether the thresholds are usable.
func (p Policy) Validate() error {
	p = p.withDefaults()
	switch {
	case p.HighThresholdPercent < 0 || p.HighThresholdPercent > 100:
		return fmt.Errorf("%w: high threshold %d not in 0..100", ErrInvalidPolicy, p.HighThresholdPercent)
	case p.LowThresholdPercent < 0 || p.LowThresholdPercent > 100:
		return fmt.Errorf("%w: low threshold %d not in 0..100", ErrInvalidPolicy, p.LowThresholdPercent)
	case p.LowThresholdPercent > p.HighThresholdPercent:
		return fmt.Errorf("%w: low threshold %d above high threshold %d", ErrInvalidPolicy, p.LowThresholdPercent, p.HighThresholdPercent)
	case p.MinAge < 0:
		return fmt.Errorf("%w: negative minimum age", ErrInvalidPolicy)
	}
	return nil
}

// Config is what New needs. Images, InUse and FS are required.
type Config struct {
	Policy Policy
	Images Images
	InUse  InUse
	FS     FS
	// Leftovers, when set, are freed before any image when room is
	// needed, and their bytes are shown (tug_image_pull_leftover_bytes).
	Leftovers Leftovers
	Log       *slog.Logger
	Clock     clock.Clock
	// Registerer, when set, gets kubelet_image_garbage_collected_total
	// and, with Leftovers, tug_image_pull_leftover_bytes.
	Registerer prometheus.Registerer
}

// record is what the manager remembers of an image between collections.
type record struct {
	firstDetected time.Time
	lastUsed      time.Time
}

// Manager collects images. Its methods are safe for concurrent use; one
// collection runs at a time.
type Manager struct {
	cfg       Config
	mu        sync.Mutex // serialises collections and guards records
	records   map[string]*record
	collected *prometheus.CounterVec
	leftover  prometheus.Gauge
}

// New returns a Manager; it fails on an invalid policy or a Registerer
// that refuses the metric.
func New(cfg Config) (*Manager, error) {
	if err := cfg.Policy.Validate(); err != nil {
		return nil, err
	}
	cfg.Policy = cfg.Policy.withDefaults()
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	m := &Manager{cfg: cfg, records: map[string]*record{}}
	m.collected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "kubelet",
		Name:      "image_garbage_collected_total",
		Help:      "Total number of images garbage collected by the kubelet, whether through disk usage or image age.",
	}, []string{"reason"})
	m.leftover = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "tug_image_pull_leftover_bytes",
		Help: "Bytes that failed image pulls keep on the image filesystem for a later pull to resume from, as of the last image garbage collection.",
	})
	if cfg.Registerer != nil {
		cs := []prometheus.Collector{m.collected}
		if cfg.Leftovers != nil {
			cs = append(cs, m.leftover)
		}
		for _, c := range cs {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("register image gc metric: %w", err)
			}
		}
	}
	return m, nil
}

// Run collects every Policy.Period until ctx is done; a failed collection
// is logged and retried next period. It returns ctx's error.
func (m *Manager) Run(ctx context.Context) error {
	t := time.NewTicker(m.cfg.Policy.Period)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		err := m.GarbageCollect(ctx)
		switch {
		case err != nil && !failing:
			m.cfg.Log.Warn("image garbage collection failed: "+FailureReason(err), "err", err)
		case err == nil && failing:
			m.cfg.Log.Info("image garbage collection works again")
		}
		failing = err != nil
	}
}

// FailureReason is the kubelet's event reason for a failed collection:
// FreeDiskSpaceFailed when it could not free enough (ErrNotEnoughFreed),
// ImageGCFailed otherwise. Each removed image is logged ("removed unused
// image"); these are node-level, so they are log lines, not pod events.
func FailureReason(err error) string {
	if errors.Is(err, ErrNotEnoughFreed) {
		return "FreeDiskSpaceFailed"
	}
	return "ImageGCFailed"
}

// GarbageCollect removes unused images, least recently used first, when the
// image filesystem's usage is at or above the high threshold, until it is
// under the low threshold. It returns ErrNotEnoughFreed when it could not
// get there.
func (m *Manager) GarbageCollect(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	capacity, available, err := m.cfg.FS.ImageFS(ctx)
	if err != nil {
		return fmt.Errorf("image filesystem stats: %w", err)
	}
	if capacity == 0 {
		return fmt.Errorf("image filesystem stats: zero capacity")
	}
	if m.cfg.Policy.HighThresholdPercent >= 100 {
		return nil
	}
	usage := int64(capacity) - int64(min(available, capacity))
	percent := int(usage * 100 / int64(capacity))
	m.countLeftovers(ctx, percent)
	if percent < m.cfg.Policy.HighThresholdPercent {
		_, err := m.detect(ctx) // keep lastUsed current between collections
		return err
	}
	toFree := usage - int64(capacity)*int64(m.cfg.Policy.LowThresholdPercent)/100
	m.cfg.Log.Info("image filesystem above the high threshold", "usage_percent", percent, "high", m.cfg.Policy.HighThresholdPercent, "to_free", toFree)
	freed, err := m.freeSpace(ctx, toFree)
	if err != nil {
		return err
	}
	if freed < toFree {
		return fmt.Errorf("%w: freed %d of %d bytes", ErrNotEnoughFreed, freed, toFree)
	}
	return nil
}

// DeleteUnusedImages removes every image nothing needs that is older than
// the minimum age, whatever the usage: the eviction manager's reclaim step
// under disk pressure. It returns the bytes freed.
func (m *Manager) DeleteUnusedImages(ctx context.Context) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.freeSpace(ctx, math.MaxInt64)
}

// MakeRoom frees need bytes of the image filesystem for a pull that does
// not fit, whatever the thresholds: failed pulls' leftovers first, then
// unused images, least recently used first, as a collection does. It
// returns the bytes freed.
func (m *Manager) MakeRoom(ctx context.Context, need int64) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	freed, err := m.freeSpace(ctx, need)
	m.cfg.Log.Info("made room for an image pull", "need", need, "freed", freed)
	return freed, err
}

// countLeftovers shows the bytes failed pulls keep (the gauge, and a log
// line when there are some). Called with mu held.
func (m *Manager) countLeftovers(ctx context.Context, percent int) {
	if m.cfg.Leftovers == nil {
		return
	}
	n, err := m.cfg.Leftovers.PullLeftovers(ctx)
	if err != nil {
		m.cfg.Log.Warn("count failed pulls' leftovers", "err", err)
		return
	}
	m.leftover.Set(float64(n))
	if n > 0 {
		m.cfg.Log.Info("failed image pulls keep content for resuming", "bytes", n, "usage_percent", percent)
	}
}

// freeLeftovers frees what failed pulls keep, the first thing freed when
// room is needed. Called with mu held.
func (m *Manager) freeLeftovers(ctx context.Context) (int64, error) {
	if m.cfg.Leftovers == nil {
		return 0, nil
	}
	n, err := m.cfg.Leftovers.FreePullLeftovers(ctx)
	if n > 0 {
		m.cfg.Log.Info("freed failed pulls' leftovers", "bytes", n)
	}
	m.leftover.Set(0)
	if err != nil {
		return n, fmt.Errorf("free failed pulls' leftovers: %w", err)
	}
	return n, nil
}

// detect lists the images, updates the records and returns the images
// that may be removed, least recently used first. Called with mu held.
func (m *Manager) detect(ctx context.Context) ([]Image, error) {
	imgs, err := m.cfg.Images.ListImages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	used, err := m.cfg.InUse.ImagesInUse(ctx)
	if err != nil {
		return nil, fmt.Errorf("images in use: %w", err)
	}
	now := m.cfg.Clock.Now()
	seen := make(map[string]bool, len(imgs))
	var candidates []Image
	for _, img := range imgs {
		seen[img.ID] = true
		r := m.records[img.ID]
		if r == nil {
			r = &record{firstDetected: now}
			m.records[img.ID] = r
		}
		if needed(img, used) {
			r.lastUsed = now
			continue
		}
		candidates = append(candidates, img)
	}
	for id := range m.records {
		if !seen[id] {
			delete(m.records, id)
		}
	}
	slices.SortStableFunc(candidates, func(a, b Image) int {
		ra, rb := m.records[a.ID], m.records[b.ID]
		return cmp.Or(ra.lastUsed.Compare(rb.lastUsed), ra.firstDetected.Compare(rb.firstDetected), cmp.Compare(a.ID, b.ID))
	})
	return candidates, nil
}

// needed reports whether img is pinned or any of its names or its ID is in
// use.
func needed(img Image, used map[string]bool) bool {
	if img.Pinned || used[img.ID] {
		return true
	}
	return slices.ContainsFunc(img.Refs, func(r string) bool { return used[r] })
}

// freeSpace frees what failed pulls keep, then removes candidates until
// toFree bytes are freed. Called with mu held.
func (m *Manager) freeSpace(ctx context.Context, toFree int64) (int64, error) {
	freed, lerr := m.freeLeftovers(ctx)
	var errs []error
	if lerr != nil {
		errs = append(errs, lerr)
	}
	if freed >= toFree {
		return freed, errors.Join(errs...)
	}
	candidates, err := m.detect(ctx)
	if err != nil {
		return freed, errors.Join(append(errs, err)...)
	}
	now := m.cfg.Clock.Now()
	for _, img := range candidates {
		if freed >= toFree {
			break
		}
		if now.Sub(m.records[img.ID].firstDetected) < m.cfg.Policy.MinAge {
			continue
		}
		var rmErr error
		for _, ref := range img.Refs {
			if err := m.cfg.Images.RemoveImage(ctx, ref); err != nil {
				rmErr = fmt.Errorf("remove image %q: %w", ref, err)
				break
			}
		}
		if rmErr != nil {
			errs = append(errs, rmErr)
			continue
		}
		m.cfg.Log.Info("removed unused image", "image", firstRef(img), "bytes", img.Size)
		m.collected.WithLabelValues("space").Inc()
		delete(m.records, img.ID)
		freed += img.Size
	}
	return freed, errors.Join(errs...)
}

func firstRef(img Image) string {
	if len(img.Refs) > 0 {
		return img.Refs[0]
	}
	return img.ID
}
