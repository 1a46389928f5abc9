package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"syscall"

	"tug/internal/config"
	"tug/internal/pleg"
	"tug/internal/pod"
	"tug/internal/podconfig"
	"tug/internal/podruntime"
	"tug/internal/reclaim/eviction"
	"tug/internal/reclaim/imagegc"
)

// imageGCAdapter gives the image GC what it reads: the runtime's images
// and image filesystem, and the images in use (every container's, and every
// pod's the sources want, which for the URL source is its checkpoint: the
// images offline boot needs).
type imageGCAdapter struct {
	rt    *podruntime.Runtime
	store *podconfig.Store
	cache *pleg.PLEG
	// sources must all have reported (the URL source: from the server or
	// its checkpoint) before any image counts as unused.
	sources []string
	log     *slog.Logger
}

var (
	_ imagegc.Images = imageGCAdapter{}
	_ imagegc.InUse  = imageGCAdapter{}
	_ imagegc.FS     = imageGCAdapter{}
)

func (a imageGCAdapter) ListImages(ctx context.Context) ([]imagegc.Image, error) {
	list, err := a.rt.StoredImages(ctx)
	out := make([]imagegc.Image, 0, len(list))
	for _, si := range list {
		out = append(out, imagegc.Image{ID: si.Digest, Refs: si.Names, Size: si.Size, Pinned: si.Pinned, CreatedAt: si.CreatedAt})
	}
	return out, err
}

func (a imageGCAdapter) RemoveImage(ctx context.Context, ref string) error {
	return a.rt.RemoveImage(ctx, ref)
}

func (a imageGCAdapter) ImagesInUse(context.Context) (map[string]bool, error) {
	for _, src := range a.sources {
		if !a.store.Ready(src) {
			return nil, fmt.Errorf("source %s has not reported yet: %w", src, errNotReady)
		}
	}
	used := map[string]bool{}
	add := func(ref string) {
		used[ref] = true
		if n, err := podruntime.NormalizeRef(ref); err == nil {
			used[n] = true
		}
	}
	for _, c := range a.cache.All() {
		add(c.Image)
		if c.ImageID != "" {
			used[c.ImageID] = true
		}
	}
	for _, p := range a.store.Pods() {
		for _, list := range [][]pod.Container{p.Spec.InitContainers, p.Spec.Containers} {
			for _, c := range list {
				add(c.Image)
			}
		}
	}
	return used, nil
}

func (a imageGCAdapter) ImageFS(ctx context.Context) (capacity, available uint64, err error) {
	path, err := a.rt.ImageFSPath(ctx)
	if err != nil {
		return 0, 0, err
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, 0, err
	}
	return st.Blocks * uint64(st.Bsize), st.Bavail * uint64(st.Bsize), nil
}

// errNotReady defers the image GC until every source has reported.
var errNotReady = errors.New("not every source has reported")

// newImageGC builds the image GC of --image-gc-high-threshold,
// --image-gc-low-threshold and --minimum-image-ttl-duration.
// TODO(lead): pass the agent's prometheus.Registerer (Config.Registerer)
// once /metrics uses client_golang, and give the eviction manager
// (internal/reclaim/eviction) gc.DeleteUnusedImages as a disk reclaimer.
func newImageGC(cfg config.Config, rt *podruntime.Runtime, store *podconfig.Store, cache *pleg.PLEG, sources []string, log *slog.Logger) (*imagegc.Manager, error) {
	a := imageGCAdapter{rt: rt, store: store, cache: cache, sources: sources, log: log}
	return imagegc.New(imagegc.Config{
		Policy: imagegc.Policy{
			HighThresholdPercent: cfg.ImageGCHighThresholdPercent,
			LowThresholdPercent:  cfg.ImageGCLowThresholdPercent,
			MinAge:               cfg.MinimumImageTTLDuration,
		},
		Images: a, InUse: a, FS: a,
		Log: log,
	})
}

// evictionThresholds parses --eviction-hard, --eviction-soft and
// --eviction-soft-grace-period, so that a bad value stops tug at start.
// TODO(lead): build eviction.New with these thresholds, an
// eviction.NodeObserver{NodeFS: cfg.RootDir, ImageFS: rt.ImageFSPath},
// the image GC's DeleteUnusedImages in ReclaimDisk, a Pods adapter (the
// store's pods with their cgroup working set and their emptyDir and
// writable-layer usage) and an Evicter in reconcile (stop the pod's
// containers within the given grace, show Failed/Evicted with the message,
// and start it again only when Manager.Admit lets it); run it as a
// component and serve Manager.Conditions in GET /node.
func evictionThresholds(cfg config.Config) ([]eviction.Threshold, error) {
	return eviction.ParseThresholds(cfg.EvictionHard, cfg.EvictionSoft, cfg.EvictionSoftGracePeriod)
}
