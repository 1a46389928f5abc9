package imagehooks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"tug/internal/clock"
	"tug/internal/pod"
)

// Repair answers a start that failed because its image is damaged
// (pod.ErrImageDamaged: files or content a power cut left empty or
// missing): it removes the image and pulls or imports it again, then the
// start is tried again; at most once per back-off period per image. It is
// the sync loop's StartFailedHook. Build it with NewRepair.
type Repair struct {
	cfg     RepairConfig
	backoff repairBackoff
}

// RepairConfig is what a Repair needs.
type RepairConfig struct {
	// Repair removes c's damaged image and pulls or imports it again
	// (podruntime.Runtime.RepairImage).
	Repair func(ctx context.Context, p *pod.Pod, c *pod.Container, damage error) error
	// Events receives the repair's Warning events (nil: none).
	Events Events
	// Log is where repairs are logged (nil: nowhere).
	Log *slog.Logger
	// Clock times the back-off; the zero Clock is the system clock.
	Clock clock.Clock
}

// Events receives Kubernetes-shaped events about pods (events.Ring).
type Events interface {
	Event(p *pod.Pod, container, eventType, reason, message string)
}

// NewRepair returns a Repair with cfg.
func NewRepair(cfg RepairConfig) *Repair {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Repair{cfg: cfg}
}

// Name names the hook in logs.
func (*Repair) Name() string { return "image repair" }

// Bounds of image repairs: an image is repaired at once the first time it
// is found damaged, then at most once per period that starts at
// repairInitial and doubles up to repairMax, so that an image that is
// broken as published (or a command that names no file of the image) costs
// a pull per period, not a pull per start. An image with no repair for
// repairForget starts over.
const (
	repairInitial = 5 * time.Minute
	repairMax     = time.Hour
	repairForget  = 24 * time.Hour
)

// ReasonImageRepaired and friends (tug's own) are the Warning events of a
// damaged image: repaired, not repaired (it failed), or left for later.
const (
	ReasonImageRepaired     = "ImageRepaired"
	ReasonImageRepairFailed = "ImageRepairFailed"
	ReasonImageDamaged      = "ImageDamaged"
)

// repairBackoff decides when an image may be repaired again, by the image
// reference as the manifest writes it. Safe for concurrent use.
type repairBackoff struct {
	mu      sync.Mutex
	entries map[string]repairEntry
}

type repairEntry struct {
	at   time.Time     // the last repair
	wait time.Duration // before the next one may run
}

// allow reports whether image may be repaired at now and, if so, records a
// repair at now. If not, it returns when it may.
func (b *repairBackoff) allow(image string, now time.Time) (bool, time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.entries == nil {
		b.entries = map[string]repairEntry{}
	}
	e, ok := b.entries[image]
	if ok && now.Sub(e.at) < repairForget {
		if next := e.at.Add(e.wait); now.Before(next) {
			return false, next
		}
		e.wait = min(2*e.wait, repairMax)
	} else {
		e.wait = repairInitial
	}
	e.at = now
	b.entries[image] = e
	return true, time.Time{}
}

// StartFailed answers a start of c that failed with err: when err is
// pod.ErrImageDamaged it repairs c's image if the back-off allows (a
// Warning event ImageRepaired and a Warn log line, or ImageRepairFailed)
// and reports whether the start may be tried again at once. An image
// repaired within its back-off period is not repaired again; an
// ImageDamaged warning says when it may be.
func (r *Repair) StartFailed(ctx context.Context, p *pod.Pod, c *pod.Container, err error) bool {
	if !errors.Is(err, pod.ErrImageDamaged) {
		return false
	}
	ok, next := r.backoff.allow(c.Image, r.cfg.Clock.Now())
	if !ok {
		r.event(p, c.Name, ReasonImageDamaged, fmt.Sprintf(
			"Image %q is damaged (%v); it was repaired lately, the next repair may run at %s", c.Image, err, next.UTC().Format(time.RFC3339)))
		return false
	}
	if rerr := r.cfg.Repair(ctx, p, c, err); rerr != nil {
		r.event(p, c.Name, ReasonImageRepairFailed, fmt.Sprintf("Image %q is damaged (%v); repair failed: %v", c.Image, err, rerr))
		r.cfg.Log.Warn("damaged image not repaired", "pod", p.FullName(), "uid", p.Metadata.UID, "container", c.Name, "image", c.Image, "err", rerr)
		return false
	}
	r.event(p, c.Name, ReasonImageRepaired, fmt.Sprintf(
		"Image %q was damaged (%v): its snapshots and content were removed and it was fetched again", c.Image, err))
	r.cfg.Log.Warn("repaired damaged image", "pod", p.FullName(), "uid", p.Metadata.UID, "container", c.Name, "image", c.Image, "err", err)
	return true
}

// event records a Warning event when the hook has a recorder.
func (r *Repair) event(p *pod.Pod, container, reason, message string) {
	if r.cfg.Events != nil {
		r.cfg.Events.Event(p, container, "Warning", reason, message)
	}
}
