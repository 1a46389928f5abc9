package podruntime

import (
	"errors"

	"tug/internal/images"
	"tug/internal/specopts"
	"tug/internal/volume"
)

var (
	// ErrShimGrouping means Config.ShimGrouping is neither "pod" nor
	// "node".
	ErrShimGrouping = errors.New("podruntime: unknown shim grouping")
	// ErrImageNotPresent means the image is not in containerd's image store
	// (unpacked for the snapshotter) and imagePullPolicy is Never.
	ErrImageNotPresent = images.ErrImageNotPresent
	// ErrImageDigestMismatch means an image reference pins a digest
	// ("name@sha256:...") and the image present under that name (from a
	// sideloaded archive, say) has another one: it is not used.
	ErrImageDigestMismatch = images.ErrImageDigestMismatch
	// ErrPrivilegedNotAllowed means a container asks for privileged mode but
	// the agent runs without --allow-privileged.
	ErrPrivilegedNotAllowed = specopts.ErrPrivilegedNotAllowed
	// ErrNoCommand means neither the manifest nor the image gives a command
	// to run.
	ErrNoCommand = specopts.ErrNoCommand
	// ErrHostPathType means a hostPath volume does not match its type
	// (Directory, File, Socket, CharDevice, BlockDevice, or an existing path
	// of the wrong kind for DirectoryOrCreate/FileOrCreate).
	ErrHostPathType = volume.ErrHostPathType
	// ErrInvalidSubPath means a volumeMount's subPath is absolute, climbs
	// out of its volume with "..", or resolves (through symlinks) outside
	// it.
	ErrInvalidSubPath = volume.ErrInvalidSubPath
	// ErrVolumeNotFound means a volumeMount names a volume the pod does not
	// define, or a volume with no source tug implements.
	ErrVolumeNotFound = volume.ErrVolumeNotFound
	// ErrEtcValue means a value bound for a pod's /etc/hosts,
	// /etc/hostname or /etc/resolv.conf holds a space, a control character
	// or a byte outside ASCII: the files are not written.
	ErrEtcValue = volume.ErrEtcValue
	// ErrContainerIDTaken means a container already exists under the ID a
	// new one needs, and its labels say it belongs to another pod or
	// container (or to no pod of tug's): it is left alone.
	ErrContainerIDTaken = errors.New("podruntime: container ID taken by another container")
	// ErrContainerNotFound means there is no container with the given ID.
	ErrContainerNotFound = errors.New("podruntime: container not found")
	// ErrNoTask means a container has no task to wait for: it was never
	// started.
	ErrNoTask = errors.New("podruntime: container has no task")
	// ErrNoImageFS means containerd's snapshotter does not say where its
	// root is, so the image filesystem cannot be measured.
	ErrNoImageFS = images.ErrNoImageFS
)
