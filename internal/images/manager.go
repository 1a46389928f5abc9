package images

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"tug/internal/pod"
	"tug/internal/registry"
)

var (
	// ErrImageNotPresent means the image is not in containerd's image store
	// (unpacked for the snapshotter) and imagePullPolicy is Never.
	ErrImageNotPresent = errors.New("images: image not present")
	// ErrImageDigestMismatch means an image reference pins a digest
	// ("name@sha256:...") and the image present under that name (from a
	// sideloaded archive, say) has another one: it is not used.
	ErrImageDigestMismatch = errors.New("images: image digest does not match the reference")
	// ErrNoImageFS means containerd's snapshotter does not say where its
	// root is, so the image filesystem cannot be measured.
	ErrNoImageFS = errors.New("images: snapshotter exports no root")
	// ErrPullStalled means a registry pull was cut because it fetched no
	// new byte for Config.PullProgressDeadline.
	ErrPullStalled = errors.New("images: pull stalled")
	// ErrPullTimeout means a registry pull was cut because it ran for
	// Config.PullTimeout.
	ErrPullTimeout = errors.New("images: pull timed out")
)

// eventRecorder receives Kubernetes-shaped events about pods (implemented
// by events.Ring).
type eventRecorder interface {
	Event(p *pod.Pod, container, eventType, reason, message string)
}

// Config is what the Manager needs.
type Config struct {
	Client      *containerd.Client
	Namespace   string // containerd namespace of every call
	Snapshotter string // images are unpacked for it
	// RootDir holds the node's registry credentials, config.json.
	RootDir string
	// ImageDir is the directory of sideloaded image archives.
	ImageDir string
	// PullProgressDeadline cuts a registry pull that fetches no new byte
	// for this long (while it has something left to fetch); default
	// DefaultPullProgressDeadline.
	PullProgressDeadline time.Duration
	// PullTimeout, if not 0, cuts a registry pull that runs this long,
	// progress or not. Default 0: none.
	PullTimeout time.Duration
	// PullOffline is what an imagePullPolicy Always pull does when no
	// registry host can be reached: PullOfflineUseCached (also "") or
	// PullOfflineFail.
	PullOffline string
	// Recorder receives the Pulling, Pulled and Failed events of a
	// container's image; nil: none.
	Recorder eventRecorder
	// Registry gives the resolvers of registry pulls: the registries'
	// hosts (mirrors, TLS) and the node's download cap. nil: containerd's
	// default hosts and no cap.
	Registry *registry.Registry
	// SkipSyncFS leaves what an unpack writes in the page cache (no
	// diff.WithSyncFs, no syncfs): for measuring what durable pulls cost.
	// Default false: pulls and imports are synced before they are reported
	// done (durable.go).
	SkipSyncFS bool
	// Room is the image filesystem's room above its eviction thresholds: a
	// registry pull that does not fit waits (room.go). nil: pulls are not
	// checked.
	Room Room
	Log  *slog.Logger
}

// Manager makes images present in containerd's store. All methods are
// safe for concurrent use.
type Manager struct {
	cfg      Config
	client   *containerd.Client
	log      *slog.Logger
	registry *registry.Registry

	pullMu sync.Mutex
	pulls  map[string]*pullCall // in-flight pulls by normalised ref

	// deferredWaits are the waits of pulls that did not fit (room.go),
	// by deferredKey (pullMu; nil until the first).
	deferredWaits map[string]bool
	// leasesHeld are the IDs of the leases of pulls under way (pullMu;
	// nil until the first pull).
	leasesHeld map[string]bool
	// cached are the images run from the store after an offline Always
	// pull.
	cached cachedUses
	// ahead are the images pulled ahead of a start (EnsureAhead).
	ahead aheadPulls
	// configs are the images' configs and chains their top snapshots'
	// names (chain IDs), by digest (bydigest.go).
	configs byDigest[ocispec.ImageConfig]
	chains  byDigest[string]

	importMu sync.Mutex            // serialises archive imports
	imported map[string]archiveKey // archives already imported, by file name
	// archiveOf maps an image name to the archive it was imported from
	// (the image GC keeps it while that file is in ImageDir).
	archiveOf map[string]string

	// syncOnce finds, once, what syncUnpacked syncs: syncRoot, the
	// snapshotter's root on a 1.x daemon ("" when the daemon syncs).
	syncOnce sync.Once
	syncRoot string
	syncErr  error
	// repairs serialises Repair per image name.
	repairMu sync.Mutex
}

// New returns a Manager; cfg.Client stays the caller's.
func New(cfg Config) *Manager {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.PullProgressDeadline <= 0 {
		cfg.PullProgressDeadline = DefaultPullProgressDeadline
	}
	if cfg.Registry == nil {
		cfg.Registry = registry.New(registry.Config{})
	}
	return &Manager{
		cfg:       cfg,
		client:    cfg.Client,
		log:       cfg.Log,
		registry:  cfg.Registry,
		pulls:     map[string]*pullCall{},
		imported:  map[string]archiveKey{},
		archiveOf: map[string]string{},
	}
}

func (m *Manager) ctx(ctx context.Context) context.Context {
	return namespaces.WithNamespace(ctx, m.cfg.Namespace)
}
