package volume

import (
	"errors"
	"fmt"
	"log/slog"
	"tug/internal/clock"
	"tug/internal/keylock"

	"github.com/containerd/containerd/v2/core/snapshots"
)

var (
	// ErrHostPathType means a hostPath volume does not match its type
	// (Directory, File, Socket, CharDevice, BlockDevice, or an existing path
	// of the wrong kind for DirectoryOrCreate/FileOrCreate).
	ErrHostPathType = errors.New("volume: hostPath type check failed")
	// ErrInvalidSubPath means a volumeMount's subPath is absolute, climbs
	// out of its volume with "..", or resolves (through symlinks) outside
	// it.
	ErrInvalidSubPath = errors.New("volume: invalid subPath")
	// ErrVolumeNotFound means a volumeMount names a volume the pod does not
	// define, or a volume with no source tug implements.
	ErrVolumeNotFound = errors.New("volume: volume not found")
	// ErrEtcValue means a value bound for a pod's /etc/hosts,
	// /etc/hostname or /etc/resolv.conf holds a space, a control character
	// or a byte outside ASCII: the files are not written.
	ErrEtcValue = errors.New("volume: value not allowed in an /etc file")
	// ErrTreeTooDeep means a directory tree is deeper than maxWalkDepth:
	// tug does not walk it.
	ErrTreeTooDeep = fmt.Errorf("volume: directory tree deeper than %d levels", maxWalkDepth)
)

// Config is what the Manager needs.
type Config struct {
	// RootDir is tug's state directory: a pod's volumes and /etc files
	// live under RootDir/pods/<uid>/, claims under RootDir/claims/ and
	// RootDir/source-claims/.
	RootDir string
	// NodeName is the node's name for the downward API's spec.nodeName
	// (default: the host name).
	NodeName string
	// ResolvConf is the file pods' resolv.conf starts from.
	ResolvConf string
	// FileSource is the name of the manifest directory's source, whose
	// claims live at RootDir/claims/<namespace>/<claim>.
	FileSource string
	// Snapshots, Namespace and Images make image volumes: a read-only
	// view of the volume's image in containerd's snapshotter (in tug's
	// namespace), the image made present by Images. Nil Snapshots or
	// Images: a pod with an image volume fails to start
	// (ErrNoImageVolumes).
	Snapshots snapshots.Snapshotter
	Namespace string
	Images    ImageSource
	// Clock dates the views (their GC root label); the zero Clock is the
	// system clock.
	Clock clock.Clock
	Log   *slog.Logger
}

// Manager prepares and removes what a pod's containers mount. All methods
// are safe for concurrent use.
type Manager struct {
	cfg      Config
	log      *slog.Logger
	fsGroups fsGroupDone // volume directories given the pod's fsGroup (see applyFSGroup)
	// viewLocks serialises the mount of one image volume of a pod,
	// keyed "<uid>/<volume>" (see mountImageView).
	viewLocks keylock.Mutex
}

// New returns a Manager.
func New(cfg Config) *Manager {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Manager{cfg: cfg, log: cfg.Log}
}
