package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"tug/internal/cgstats"
	"tug/internal/config"
	"tug/internal/devices"
	"tug/internal/events"
	"tug/internal/images"
	"tug/internal/pleg"
	"tug/internal/pod"
	"tug/internal/podconfig"
	"tug/internal/podview"
	"tug/internal/qos"
	"tug/internal/reclaim/eviction"
	"tug/internal/reclaim/imagegc"
	"tug/internal/reconcile"
	"tug/internal/timefloor"
	"tug/internal/volume"
)

// imageGCAdapter gives the image GC what it reads: the runtime's images
// and image filesystem, and the images in use (every container's, every
// mounted image volume's, and every pod's the sources want (its image
// volumes' too), which for the URL source is its checkpoint: the
// images offline boot needs).
type imageGCAdapter struct {
	images  *images.Manager
	volumes *volume.Manager
	store   *podconfig.Store
	cache   *pleg.PLEG
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
	list, err := a.images.Stored(ctx)
	out := make([]imagegc.Image, 0, len(list))
	for _, si := range list {
		out = append(out, imagegc.Image{ID: si.Digest, Refs: si.Names, Size: si.Size, Pinned: si.Pinned, CreatedAt: si.CreatedAt})
	}
	return out, err
}

func (a imageGCAdapter) RemoveImage(ctx context.Context, ref string) error {
	return a.images.Remove(ctx, ref)
}

func (a imageGCAdapter) ImagesInUse(ctx context.Context) (map[string]bool, error) {
	for _, src := range a.sources {
		if !a.store.Ready(src) {
			return nil, fmt.Errorf("source %s has not reported yet: %w", src, errNotReady)
		}
	}
	// The images of mounted image volumes, by name and digest.
	vols, err := a.volumes.ImageVolumeImages(ctx)
	if err != nil {
		return nil, err
	}
	return imagegc.InUseOf(a.cache.All(), a.store.Pods(), vols, images.NormalizeRef), nil
}

func (a imageGCAdapter) ImageFS(ctx context.Context) (capacity, available uint64, err error) {
	path, err := a.images.FSPath(ctx)
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
// kubelet_image_garbage_collected_total goes to reg.
func newImageGC(cfg config.Config, rp runtimeParts, store *podconfig.Store, cache *pleg.PLEG, sources []string, reg prometheus.Registerer, log *slog.Logger) (*imagegc.Manager, error) {
	a := imageGCAdapter{images: rp.images, volumes: rp.volumes, store: store, cache: cache, sources: sources, log: log}
	gc, err := imagegc.New(imagegc.Config{
		Policy: imagegc.Policy{
			HighThresholdPercent: cfg.ImageGCHighThresholdPercent,
			LowThresholdPercent:  cfg.ImageGCLowThresholdPercent,
			MinAge:               cfg.MinimumImageTTLDuration,
		},
		Images: a, InUse: a, FS: a, Leftovers: rp.images,
		Registerer: reg,
		Log:        log,
	})
	if err == nil && rp.room != nil {
		rp.room.gc.Store(gc)
	}
	return gc, err
}

// imageRoom is the image filesystem's room for pulls (images.Room): what
// statfs of containerd's snapshotter root finds available less what the
// imagefs eviction thresholds (hard and soft) keep, and the nodefs ones
// too when --root-dir is on the same filesystem; the image GC makes room
// (set once it is built: until then none is made).
type imageRoom struct {
	images     *images.Manager
	thresholds []eviction.Threshold
	rootDir    string
	gc         atomic.Pointer[imagegc.Manager]
}

var _ images.Room = (*imageRoom)(nil)

func (r *imageRoom) Free(ctx context.Context) (int64, error) {
	path, err := r.images.FSPath(ctx)
	if err != nil {
		return 0, err
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", path, err)
	}
	capacity, avail := int64(st.Blocks)*st.Bsize, int64(st.Bavail)*st.Bsize
	signals := []eviction.Signal{eviction.SignalImageFsAvailable}
	if sameFS(path, r.rootDir) {
		signals = append(signals, eviction.SignalNodeFsAvailable)
	}
	return avail - eviction.Reserve(r.thresholds, capacity, signals...), nil
}

func (r *imageRoom) MakeRoom(ctx context.Context, need int64) (int64, error) {
	gc := r.gc.Load()
	if gc == nil {
		return 0, nil
	}
	return gc.MakeRoom(ctx, need)
}

// sameFS reports whether paths a and b are on one filesystem.
func sameFS(a, b string) bool {
	var sa, sb syscall.Stat_t
	if syscall.Stat(a, &sa) != nil || syscall.Stat(b, &sb) != nil {
		return false
	}
	return sa.Dev == sb.Dev
}

// evictionThresholds parses --eviction-hard, --eviction-soft and
// --eviction-soft-grace-period, so that a bad value stops tug at start.
func evictionThresholds(cfg config.Config) ([]eviction.Threshold, error) {
	return eviction.ParseThresholds(cfg.EvictionHard, cfg.EvictionSoft, cfg.EvictionSoftGracePeriod)
}

// evictionPods gives the eviction manager the pods that run (wanted, not
// evicted, with containers) and, through eviction.StatsReader, their
// usage.
type evictionPods struct {
	eviction.StatsReader
	store  *podconfig.Store
	cache  *pleg.PLEG
	loop   *reconcile.Loop
	images *images.Manager
	kill   func(*pod.Pod) error // the pod's processes, through its cgroup
}

// newEvictionPods reads pod usage from the pod cgroups, the PLEG's
// containers and the runtime's disks; container cgroups through memory
// (nil: per-container memory is not read); the node's conditions through
// pressure.
func newEvictionPods(store *podconfig.Store, cache *pleg.PLEG, loop *reconcile.Loop, rp runtimeParts, cgroups *qos.Manager, memory *cgstats.Reader, pressure *pressureRef) evictionPods {
	e := evictionPods{store: store, cache: cache, loop: loop, images: rp.images, kill: cgroups.KillPod, StatsReader: eviction.StatsReader{
		Cgroups: cgroups, Containers: cache, Disks: rp.rt, EmptyDirs: rp.volumes, Pressure: pressure.has,
	}}
	if memory != nil {
		e.ContainerMemory = func(group string) (int64, error) {
			st, err := memory.Read(group)
			return int64(st.WorkingSet), err
		}
	}
	return e
}

func (e evictionPods) ActivePods() []*pod.Pod {
	var out []*pod.Pod
	for _, p := range e.store.Pods() {
		if !e.loop.Evicted(p.Metadata.UID) && len(e.cache.PodContainers(p.Metadata.UID)) > 0 {
			out = append(out, p)
		}
	}
	return out
}

// pressureRef lets the sync loop ask the eviction manager, which is built
// after it (the manager evicts through the loop).
type pressureRef struct{ m *eviction.Manager }

// has reports whether the node condition typ (DiskPressure,
// MemoryPressure) is true.
func (r *pressureRef) has(typ string) bool {
	if r == nil || r.m == nil {
		return false
	}
	for _, c := range r.m.Conditions() {
		if c.Type == typ && c.Status == "True" {
			return true
		}
	}
	return false
}

// Name names the eviction manager as one of the sync loop's hooks.
func (r *pressureRef) Name() string { return "eviction" }

// Readmit reports whether evicted pod p may start again now.
func (r *pressureRef) Readmit(p *pod.Pod, bestEffort bool) (bool, string) {
	if r.m == nil {
		return true, ""
	}
	return r.m.Admit(p, bestEffort)
}

// newEviction builds the eviction manager: the node's signals from /proc
// and statfs of --root-dir (nodefs) and containerd's snapshotter root
// (imagefs), the image GC as its disk reclaimer, and the sync loop as its
// evicter. Pods are ranked with their
// spec.priority (or priorityClassName's).
func newEviction(ctx context.Context, cfg config.Config, th []eviction.Threshold, pods evictionPods, gc *imagegc.Manager, reg prometheus.Registerer, rec *events.Ring, log *slog.Logger) (*eviction.Manager, error) {
	imageFS, err := pods.images.FSPath(ctx)
	if err != nil {
		log.Warn("image filesystem unknown: imagefs signals read --root-dir's", "err", err)
	}
	return eviction.New(eviction.Config{
		Thresholds: th,
		Observer:   eviction.NodeObserver{NodeFS: cfg.RootDir, ImageFS: imageFS},
		Pods:       pods,
		Evicter:    pods.loop,
		KillPod:    pods.kill,
		ReclaimDisk: []func(context.Context) error{func(ctx context.Context) error {
			_, err := gc.DeleteUnusedImages(ctx)
			return err
		}},
		Priority:                 pod.PodPriority,
		PressureTransitionPeriod: cfg.EvictionPressureTransitionPeriod,
		MaxPodGracePeriod:        time.Duration(cfg.EvictionMaxPodGracePeriod) * time.Second,
		Events:                   rec,
		Registerer:               reg,
		Log:                      log,
	})
}

// nodeView is GET /node: the host name, the device resources' capacity
// and the eviction manager's conditions.
type nodeView struct {
	name    string
	m       *eviction.Manager
	devices *devices.Manager // nil: no device resources
	floor   *timefloor.Floor
}

func (n nodeView) Node() podview.NodeView {
	v := podview.NodeView{Metadata: podview.NodeMeta{Name: n.name}, Status: pod.NodeStatus{Conditions: append(n.m.Conditions(), n.floor.Conditions()...)}}
	if n.devices != nil && len(n.devices.Resources()) > 0 {
		v.Status.Capacity, v.Status.Allocatable = map[string]string{}, map[string]string{}
		for name, units := range n.devices.Capacity() {
			v.Status.Capacity[name] = strconv.Itoa(units)
			v.Status.Allocatable[name] = strconv.Itoa(units)
		}
	}
	return v
}
