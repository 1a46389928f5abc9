package podruntime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"

	"tug/internal/clock"
	"tug/internal/keylock"
	"tug/internal/podexec"
)

// Defaults for the Config fields left zero. Where tug lives on the host
// (namespace and directories) has no default here: the agent's
// configuration (config.Default) holds those.
const (
	DefaultLogMaxSize  = 10 << 20
	DefaultLogMaxFiles = 5
	DefaultSnapshotter = "overlayfs"
	// ShimGroupingPod runs every container of a pod (init containers,
	// sidecars, app containers, and each restart) under one shim.
	ShimGroupingPod = "pod"
	// ShimGroupingNode runs every container of tug's namespace under one
	// shim.
	ShimGroupingNode = "node"
	// DefaultConnectTimeout bounds the dial to containerd in New.
	DefaultConnectTimeout = 10 * time.Second
)

// Config configures a Runtime. Client, Images, Volumes, Namespace, RootDir
// and LogsDir are required; every other zero field gets the default its
// comment gives.
type Config struct {
	// Client is the connection to containerd (Dial); the Runtime closes it
	// in Close (required).
	Client *containerd.Client
	// Images makes the containers' images present (images.Manager;
	// required).
	Images Images
	// Volumes prepares and removes the pods' volumes (volume.Manager;
	// required).
	Volumes Volumes
	// Address is containerd's gRPC socket, as the runtime's messages name
	// it.
	Address string
	// Namespace is the containerd namespace of tug's images and
	// containers (required).
	Namespace string
	// RootDir is tug's state directory (--root-dir); a pod's volumes and
	// /etc/hostname file live under RootDir/pods/<uid>/ (required).
	RootDir string
	// LogsDir is --pod-logs-dir; container logs are written to
	// LogsDir/<namespace>_<pod>_<uid>/<container>/<attempt>.log
	// (required).
	LogsDir string
	// AllowPrivileged is --allow-privileged; without it a privileged
	// container fails to start with specopts.ErrPrivilegedNotAllowed.
	AllowPrivileged bool
	// SeccompProfileRoot is --seccomp-profile-root, the directory of
	// Localhost seccomp profiles. Default RootDir/seccomp.
	SeccompProfileRoot string
	// DefaultSeccompUnconfined is --default-seccomp=unconfined: containers
	// that name no seccomp profile run without one. Default false: they get
	// containerd's default profile (RuntimeDefault).
	DefaultSeccompUnconfined bool
	// AppArmor is whether the kernel enforces AppArmor: a container's
	// appArmorProfile is applied only then (and warned about otherwise).
	AppArmor bool
	// LoggerPath is the absolute path of the binary the shim runs as
	// "<LoggerPath> logger <settings>" to write a container's log (see
	// RunLogger). Default: this process's executable (os.Executable).
	LoggerPath string
	// LogDriver is how a container's output reaches its log:
	// LogDriverFile (default: the shim writes raw files that Logs converts)
	// or LogDriverBinary (a "tug logger" per container, run by the shim;
	// see logs.go), LogDriverJournald (the file driver's raw files, each
	// line sent to the journal, no CRI log) or LogDriverFileJournald
	// (both).
	LogDriver string
	// Logs is the converter of the raw files (podlogs.Pumps, built by the
	// caller for the driver), required with every driver but
	// LogDriverBinary; its Run is given LogTasks.
	Logs Logs
	// LogMaxSize rotates a container log once it would grow beyond this
	// many bytes; default 10 MiB; negative disables rotation.
	LogMaxSize int64
	// LogMaxFiles is how many files one attempt's log may have, the
	// current <attempt>.log included (so LogMaxFiles-1 rotated files,
	// <attempt>.log.1 ...); default 5; 1 or negative keeps the current file
	// only (it is truncated on rotation).
	LogMaxFiles int
	// Snapshotter unpacks images and holds container root filesystems;
	// default "overlayfs".
	Snapshotter string
	// ShimGrouping is --shim-grouping: which containers share one
	// containerd-shim-runc-v2 process, ShimGroupingPod (the default: every
	// container of a pod) or ShimGroupingNode (every container of tug's
	// namespace).
	ShimGrouping string
	// RuntimeClasses are the node's runtime classes by name
	// (--runtime-class, see ParseRuntimeClasses): a pod with a
	// runtimeClassName runs its containers with that class's runtime.
	// A pod without one runs with RuncRuntime.
	RuntimeClasses map[string]RuntimeClass
	// Devices gives containers the devices allocated to their pod and
	// the CDI devices its annotations name, and frees a pod's devices when
	// the pod is cleaned up; nil: no devices.
	Devices Devices
	// UserNamespaces gives pods with hostUsers: false their host IDs, and
	// takes them back when the pod is cleaned up; nil: such pods fail to
	// start (ErrUserNamespacesUnavailable).
	UserNamespaces UserNamespaces
	// Log receives the runtime's logs; default: discarded.
	Log *slog.Logger
	// Recorder receives the events of lost container output; nil: none.
	Recorder eventRecorder
	// Clock tells the start and exit times recorded on containers; nil: the
	// system clock.
	Clock clock.Clock
}

func (c *Config) setDefaults() error {
	if c.Client == nil || c.Images == nil || c.Volumes == nil {
		return errors.New("podruntime: a containerd client, images and volumes are required")
	}
	for what, v := range map[string]string{"containerd namespace": c.Namespace, "root dir": c.RootDir,
		"logs dir": c.LogsDir} {
		if v == "" {
			return fmt.Errorf("podruntime: %s is required", what)
		}
	}
	if c.SeccompProfileRoot == "" {
		c.SeccompProfileRoot = filepath.Join(c.RootDir, "seccomp")
	}
	if c.LoggerPath == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("podruntime: logger path: %w", err)
		}
		c.LoggerPath = exe
	}
	if !filepath.IsAbs(c.LoggerPath) {
		return fmt.Errorf("podruntime: logger path %q is not absolute", c.LoggerPath)
	}
	switch c.LogDriver {
	case "":
		c.LogDriver = LogDriverFile
	case LogDriverBinary:
	case LogDriverFile, LogDriverJournald, LogDriverFileJournald:
		if c.Logs == nil {
			return fmt.Errorf("podruntime: log driver %s needs the raw files' converter (Logs)", c.LogDriver)
		}
	default:
		return fmt.Errorf("podruntime: unknown log driver %q (want %s, %s, %s or %s)", c.LogDriver,
			LogDriverFile, LogDriverBinary, LogDriverJournald, LogDriverFileJournald)
	}
	switch {
	case c.LogMaxSize == 0:
		c.LogMaxSize = DefaultLogMaxSize
	case c.LogMaxSize < 0:
		c.LogMaxSize = 0
	}
	switch {
	case c.LogMaxFiles == 0:
		c.LogMaxFiles = DefaultLogMaxFiles
	case c.LogMaxFiles < 0:
		c.LogMaxFiles = 1
	}
	if c.Snapshotter == "" {
		c.Snapshotter = DefaultSnapshotter
	}
	switch c.ShimGrouping {
	case "":
		c.ShimGrouping = ShimGroupingPod
	case ShimGroupingPod, ShimGroupingNode:
	default:
		return fmt.Errorf("podruntime: %w: %q", ErrShimGrouping, c.ShimGrouping)
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Runtime drives containerd for tug: containers, tasks and their logs. It
// implements reconcile.Runtime. All methods are safe for concurrent use.
type Runtime struct {
	cfg    Config
	client *containerd.Client
	log    *slog.Logger

	images Images

	reapers reapers   // one per task, the only path that deletes it (see reaper)
	reaps   reapCount // reaps under way: Close waits for them
	// life ends with Close: the reapers wait for their tasks under it.
	life context.Context
	stop context.CancelFunc

	volumes Volumes

	pumps     Logs          // the file log drivers' converter; nil with the binary driver
	shimLocks keylock.Mutex // serialises choosing a shim group and creating the task in it (see shimGroupFor)
	records   recordCache   // ListContainers' container records; every change to one calls records.changed
}

// New returns a Runtime on cfg.Client, with the image and volume managers
// the caller built (agent builds them: the image manager serves the image
// GC and the API too, the volume manager the eviction manager and
// housekeeping).
func New(cfg Config) (*Runtime, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	r := &Runtime{
		cfg:     cfg,
		client:  cfg.Client,
		log:     cfg.Log,
		images:  cfg.Images,
		volumes: cfg.Volumes,
	}
	r.life, r.stop = context.WithCancel(context.Background())
	if cfg.LogDriver != LogDriverBinary {
		r.pumps = cfg.Logs
	}
	return r, nil
}

// Close closes the connection to containerd, once the reaps under way
// (each bounded by cleanupTimeout) are done: a task delete cut short by the
// closed connection can leave containerd without the task but with its
// shim, which nothing would end then. Containers and their tasks keep
// running: they belong to containerd's shims.
func (r *Runtime) Close() error {
	r.stop() // the reapers stop waiting; those reaping finish
	r.reaps.wait()
	return r.client.Close()
}

// ctx returns ctx in tug's containerd namespace. Every exported method
// starts with it: client-side helpers (spec generation, leases) read the
// namespace from the context, not from the client's default.
func (r *Runtime) ctx(ctx context.Context) context.Context {
	return namespaces.WithNamespace(ctx, r.cfg.Namespace)
}

// Execer returns what runs commands in the containers' tasks, on the
// runtime's client and namespace.
func (r *Runtime) Execer() *podexec.Execer {
	return podexec.New(r.client, r.cfg.Namespace, r.log)
}
