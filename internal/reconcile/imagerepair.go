package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"tug/internal/pod"
)

// ImageRepairer removes a container's image found damaged
// (pod.ErrImageDamaged: files or content a power cut left empty or
// missing) and pulls or imports it again (implemented by
// podruntime.Runtime).
type ImageRepairer interface {
	RepairImage(ctx context.Context, p *pod.Pod, c *pod.Container, damage error) error
}

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

// reasonImageRepaired and friends (tug's own) are the Warning events of a
// damaged image: repaired, not repaired (it failed), or left for later.
const (
	reasonImageRepaired     = "ImageRepaired"
	reasonImageRepairFailed = "ImageRepairFailed"
	reasonImageDamaged      = "ImageDamaged"
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

// repairImage answers a start of c that failed with damage: it repairs
// c's image when the back-off allows (a Warning event ImageRepaired and a
// Warn log line, or ImageRepairFailed) and reports whether the start may
// be tried again at once. An image repaired within its back-off period is
// not repaired again; an ImageDamaged warning says when it may be.
func (s *podSyncer) repairImage(ctx context.Context, p *pod.Pod, c *pod.Container, damage error) bool {
	if s.repairer == nil || !errors.Is(damage, pod.ErrImageDamaged) {
		return false
	}
	ok, next := s.repairs.allow(c.Image, s.now.Now())
	if !ok {
		s.event(p, c.Name, eventWarning, reasonImageDamaged, fmt.Sprintf(
			"Image %q is damaged (%v); it was repaired lately, the next repair may run at %s", c.Image, damage, next.UTC().Format(time.RFC3339)))
		return false
	}
	if err := s.repairer.RepairImage(ctx, p, c, damage); err != nil {
		s.event(p, c.Name, eventWarning, reasonImageRepairFailed, fmt.Sprintf("Image %q is damaged (%v); repair failed: %v", c.Image, damage, err))
		s.log.Warn("damaged image not repaired", "pod", p.FullName(), "uid", p.Metadata.UID, "container", c.Name, "image", c.Image, "err", err)
		return false
	}
	s.event(p, c.Name, eventWarning, reasonImageRepaired, fmt.Sprintf(
		"Image %q was damaged (%v): its snapshots and content were removed and it was fetched again", c.Image, damage))
	s.log.Warn("repaired damaged image", "pod", p.FullName(), "uid", p.Metadata.UID, "container", c.Name, "image", c.Image, "err", damage)
	return true
}
