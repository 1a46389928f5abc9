package images

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	ctrimages "github.com/containerd/containerd/v2/core/images"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"tug/internal/pod"
)

// Room on the image filesystem. A registry pull must not fill the
// filesystem containerd keeps its content and snapshots on: past the
// imagefs eviction threshold the eviction manager evicts running pods,
// and at 100 % containerd's own writes fail. So a pull checks, once it has
// read the manifest of the node's platform and before it fetches a layer,
// that what it still needs fits in the room above the threshold (Room.Free):
// the compressed sizes of the layers not in the content store plus their
// unpacked size, estimated as unpackFactor times the compressed size of a
// compressed layer (a tar layer: its size). When it does not fit, the image
// GC is asked to make room (Room.MakeRoom: the leftovers of failed pulls
// first, then unused images) and the room is read again; when it still
// does not fit, the pull fails with a *PullDeferredError (pod.ErrImagePullDeferred)
// and fetches nothing more. While the pull runs, the room is read every
// roomEvery and the pull is cut (also a *PullDeferredError) when the next
// reading would find it gone at the rate it shrinks: an estimate too low,
// or another writer, never takes the filesystem past the threshold
// (runsOut).

// Room is the image filesystem's room for pulls (the agent's: statfs of
// containerd's snapshotter root less the imagefs eviction thresholds, and
// the image GC).
type Room interface {
	// Free returns the bytes available on the image filesystem above its
	// eviction thresholds (negative when below them).
	Free(ctx context.Context) (int64, error)
	// MakeRoom asks the image GC to free need bytes (the leftovers of failed
	// pulls first, then unused images) and returns the bytes it freed.
	MakeRoom(ctx context.Context, need int64) (int64, error)
}

// unpackFactor is the estimated ratio of a compressed layer's unpacked size
// to its compressed size: gzip and zstd shrink the files of an image's
// layers (binaries, libraries, text) to about a half to a third, so
// compressed plus unpacked is about three times the compressed size. An
// image whose layers compress less is over-estimated (a deferred pull that
// would have fit is the safer error on a small disk); one whose layers
// compress more is caught by the watch while the pull runs.
const unpackFactor = 2

// roomEvery is how often a running pull reads the room left.
const roomEvery = 500 * time.Millisecond

// PullDeferredError is a pull that does not fit on the image filesystem
// above its eviction thresholds: Need bytes, Free bytes of room. It wraps
// pod.ErrImagePullDeferred.
type PullDeferredError struct {
	Need, Free int64
}

// Error is "needs 720.0 MB, 230.5 MB free above the threshold".
func (e *PullDeferredError) Error() string {
	return fmt.Sprintf("needs %s, %s free above the threshold", humanBytes(e.Need), humanBytes(max(e.Free, 0)))
}

func (e *PullDeferredError) Unwrap() error { return pod.ErrImagePullDeferred }

// layerKind reports whether a descriptor's media type is a layer's, and
// whether that layer is compressed.
func layerKind(mediaType string) (layer, compressed bool) {
	if !ctrimages.IsLayerType(mediaType) {
		return false, false
	}
	switch {
	case strings.HasSuffix(mediaType, "+gzip"), strings.HasSuffix(mediaType, "+zstd"),
		strings.HasSuffix(mediaType, ".gzip"), strings.HasSuffix(mediaType, ".zstd"):
		return true, true
	case strings.HasSuffix(mediaType, ".tar"):
		return true, false
	}
	return true, true // an unknown compression: counted as compressed
}

// neededBytes estimates what pulling the children of a manifest (its
// config and layers) still writes to the image filesystem: for each layer
// that has does not find present, its compressed size and its estimated
// unpacked size (unpackFactor times it when compressed, its size when
// not). A layer present in the content store was unpacked by the pull that
// fetched it; the config is too small to count.
func neededBytes(children []ocispec.Descriptor, has func(ocispec.Descriptor) bool) int64 {
	var need int64
	seen := map[string]bool{}
	for _, d := range children {
		layer, compressed := layerKind(d.MediaType)
		if !layer || d.Size <= 0 || seen[d.Digest.String()] || has(d) {
			continue
		}
		seen[d.Digest.String()] = true
		need += d.Size
		if compressed {
			need += unpackFactor * d.Size
		} else {
			need += d.Size
		}
	}
	return need
}

// fits decides a pull that needs need bytes with free bytes of room: nil,
// or the *PullDeferredError that defers it. A pull that writes nothing
// fits whatever the room.
func fits(need, free int64) error {
	if need <= 0 || need <= free {
		return nil
	}
	return &PullDeferredError{Need: need, Free: free}
}

// runsOut reports whether a running pull must be cut, from the room it
// was checked against (start), its estimate (need) and two readings of the
// room roomEvery apart (prev, cur): when the room is gone; and once the
// room has shrunk by more than the estimate and an eighth of it (the pull
// writes more than estimated, or another writer took room; the eighth is
// what the filesystem's own blocks and containerd's metadata add to an
// exact estimate), when it would be gone by the reading after the next at
// the rate it shrinks. Within that a pull is not cut but at the threshold:
// the check let it start because the estimate fits, and a cut on the rate
// alone would stop a fast pull that ends with little room to spare.
func runsOut(start, need, prev, cur int64) bool {
	if cur <= 0 {
		return true
	}
	if start-cur <= need+need/8 {
		return false
	}
	drop := prev - cur
	return drop > 0 && cur-2*drop <= 0
}

// roomCheck is the check of one pull: fitWrap checks its manifest's layers
// before they are fetched, guard watches the room while it runs. A nil
// Room checks nothing.
type roomCheck struct {
	m     *Manager
	ref   string
	cut   func(error)
	need  atomic.Int64 // what check found the pull needs; 0 before
	start atomic.Int64 // the room check found it fit in
}

// wrap returns h failing a manifest whose layers do not fit (after the
// image GC was asked to make room), before any layer is fetched; cut is
// given the same *PullDeferredError so that the pull reports it.
func (rc *roomCheck) wrap(h ctrimages.Handler) ctrimages.Handler {
	return ctrimages.HandlerFunc(func(ctx context.Context, desc ocispec.Descriptor) ([]ocispec.Descriptor, error) {
		children, err := h.Handle(ctx, desc)
		if err != nil || !ctrimages.IsManifestType(desc.MediaType) {
			return children, err
		}
		if err := rc.check(ctx, children); err != nil {
			rc.cut(err)
			return nil, err
		}
		return children, nil
	})
}

// check reads the room for a manifest's children, asking the image GC to
// make room when they do not fit. A room it cannot read does not stop the
// pull (the watch and the eviction manager still hold).
func (rc *roomCheck) check(ctx context.Context, children []ocispec.Descriptor) error {
	room := rc.m.cfg.Room
	if room == nil {
		return nil
	}
	cs := rc.m.client.ContentStore()
	need := neededBytes(children, func(d ocispec.Descriptor) bool {
		_, err := cs.Info(ctx, d.Digest)
		return err == nil
	})
	rc.need.Store(need)
	if need == 0 {
		return nil
	}
	free, err := room.Free(ctx)
	if err != nil {
		rc.m.log.Warn("read the room on the image filesystem", "image", rc.ref, "err", err)
		return nil
	}
	if fits(need, free) == nil {
		rc.start.Store(free)
		return nil
	}
	freed, err := room.MakeRoom(ctx, need-free)
	if err != nil {
		rc.m.log.Warn("make room for an image pull", "image", rc.ref, "err", err)
	}
	if free, err = room.Free(ctx); err != nil {
		rc.m.log.Warn("read the room on the image filesystem", "image", rc.ref, "err", err)
		return nil
	}
	derr := fits(need, free)
	if derr == nil {
		rc.start.Store(free)
	} else {
		rc.m.log.Warn("image pull deferred: it does not fit on the image filesystem above the eviction thresholds",
			"image", rc.ref, "need", need, "free", free, "freed", freed)
	}
	return derr
}

// guard reads the room every roomEvery until ctx is done, and cuts the
// pull when runsOut says so, once check has found layers to fetch (a pull
// of layers all present writes next to nothing).
func (rc *roomCheck) guard(ctx context.Context) {
	room := rc.m.cfg.Room
	if room == nil {
		return
	}
	t := time.NewTicker(roomEvery)
	defer t.Stop()
	prev, err := room.Free(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cur, cerr := room.Free(ctx)
		if cerr != nil {
			err = cerr
			continue
		}
		if need := rc.need.Load(); need > 0 && err == nil && runsOut(rc.start.Load(), need, prev, cur) {
			rc.m.log.Warn("cutting image pull: the image filesystem is near its eviction threshold", "image", rc.ref, "free", cur, "need", need)
			rc.cut(&PullDeferredError{Need: need, Free: cur})
			return
		}
		prev, err = cur, nil
	}
}

// deferredKey names one container's wait for an image.
func deferredKey(r request) string {
	uid := ""
	if r.pod != nil {
		uid = r.pod.Metadata.UID
	}
	return uid + "\x00" + r.container + "\x00" + r.image
}

// deferred records the ImagePullDeferred warning of r's pull, once per
// wait: not again while it stays deferred.
func (m *Manager) deferred(r request, err error) bool {
	var derr *PullDeferredError
	if !errors.As(err, &derr) {
		return false
	}
	m.pullMu.Lock()
	if m.deferredWaits == nil {
		m.deferredWaits = map[string]bool{}
	}
	key := deferredKey(r)
	again := m.deferredWaits[key]
	m.deferredWaits[key] = true
	m.pullMu.Unlock()
	if !again {
		m.event(r.pod, r.container, eventWarning, pod.ReasonImagePullDeferred,
			fmt.Sprintf("Pull of image %q deferred: %s", r.image, derr))
	}
	return true
}

// undeferred ends r's wait, if any: its pull ran.
func (m *Manager) undeferred(r request) {
	m.pullMu.Lock()
	delete(m.deferredWaits, deferredKey(r))
	m.pullMu.Unlock()
}
