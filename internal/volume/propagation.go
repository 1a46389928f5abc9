package volume

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/containerd/containerd/v2/core/mount"
	"github.com/moby/sys/mountinfo"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"tug/internal/pod"
)

// Mount propagation, as the kubelet and containerd's CRI give it to a
// hostPath mount: None is a private bind (rprivate), HostToContainer a
// slave of the host's mount (rslave), Bidirectional a peer of it
// (rshared). The container's mount can only follow the host's when the
// host's mount itself propagates: containerd's CRI refuses HostToContainer
// on a mount that is neither shared nor a slave, and Bidirectional on one
// that is not shared, rather than give a mount that silently does not
// propagate; so does tug (ErrMountPropagation). systemd makes / shared;
// a host without it (a plain init, a container) needs the directory made
// a shared mount first (mount --bind DIR DIR; mount --make-shared DIR).

// ErrMountPropagation means a hostPath mounted with HostToContainer or
// Bidirectional propagation is on a host mount that does not propagate so.
// It comes wrapped with pod.ErrCreateContainerConfig.
var ErrMountPropagation = errors.New("volume: the host path's mount does not propagate")

// propagationOption is the bind mount option of mode: rprivate, rslave or
// rshared.
func propagationOption(mode pod.MountPropagationMode) string {
	switch mode {
	case pod.MountPropagationHostToContainer:
		return "rslave"
	case pod.MountPropagationBidirectional:
		return "rshared"
	}
	return "rprivate"
}

// setPropagation replaces the propagation option of bind mount m with
// mode's.
func setPropagation(m *specs.Mount, mode pod.MountPropagationMode) {
	for i, o := range m.Options {
		if o == "rprivate" {
			m.Options[i] = propagationOption(mode)
			return
		}
	}
	m.Options = append(m.Options, propagationOption(mode))
}

// checkPropagation returns an ErrMountPropagation when the mount of the
// object open as fd (the host path path) cannot propagate as mode asks:
// Bidirectional needs a shared mount, HostToContainer a shared or slave
// one (containerd's CRI's ensureShared and ensureSharedOrSlave).
func checkPropagation(fd int, path string, mode pod.MountPropagationMode) error {
	if mode != pod.MountPropagationHostToContainer && mode != pod.MountPropagationBidirectional {
		return nil
	}
	info, err := mountOf(fd)
	if err != nil {
		return fmt.Errorf("hostPath %s: find its mount for %s propagation: %w", path, mode, err)
	}
	var shared, slave bool
	for _, f := range strings.Fields(info.Optional) {
		shared = shared || strings.HasPrefix(f, "shared:")
		slave = slave || strings.HasPrefix(f, "master:")
	}
	switch {
	case mode == pod.MountPropagationBidirectional && !shared:
		return fmt.Errorf("%w: %w: hostPath %s is on mount %s, which is not shared: Bidirectional propagation needs a shared mount (mount --make-shared %s)",
			pod.ErrCreateContainerConfig, ErrMountPropagation, path, info.Mountpoint, info.Mountpoint)
	case mode == pod.MountPropagationHostToContainer && !shared && !slave:
		return fmt.Errorf("%w: %w: hostPath %s is on mount %s, which is neither shared nor a slave: HostToContainer propagation needs one (mount --make-shared %s)",
			pod.ErrCreateContainerConfig, ErrMountPropagation, path, info.Mountpoint, info.Mountpoint)
	}
	return nil
}

// mountOf returns the mount the object open as fd is on: the one whose
// ID statx gives (Linux 5.8+), else the longest mount point over the
// path the descriptor resolves to.
func mountOf(fd int) (*mountinfo.Info, error) {
	var stx unix.Statx_t
	err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &stx)
	if err == nil && stx.Mask&unix.STATX_MNT_ID != 0 {
		id := int(stx.Mnt_id)
		infos, err := mountinfo.GetMounts(func(i *mountinfo.Info) (skip, stop bool) { return i.ID != id, i.ID == id })
		if err != nil {
			return nil, err
		}
		if len(infos) == 1 {
			return infos[0], nil
		}
		return nil, fmt.Errorf("mount %d is not in /proc/self/mountinfo", id)
	}
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return nil, err
	}
	info, err := mount.Lookup(real)
	if err != nil {
		return nil, err
	}
	return &info, nil
}
