package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/containerd/containerd/v2/core/mount"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"tug/internal/pod"
)

// podDir is RootDir/pods/<uid>: what Prepare makes for the pod.
func (mgr *Manager) podDir(uid string) string { return filepath.Join(mgr.cfg.RootDir, "pods", uid) }

func (mgr *Manager) emptyDirPath(uid, volume string) string {
	return filepath.Join(mgr.podDir(uid), "volumes", "empty-dir", volume)
}

// Hostname is the pod's hostname as Kubernetes gives it: the pod name cut
// to 63 characters, or the node's own hostname for a hostNetwork pod (which
// shares the host's UTS namespace).
func Hostname(p *pod.Pod) (string, error) {
	if p.Spec.HostNetwork {
		h, err := os.Hostname()
		if err != nil {
			return "", fmt.Errorf("host name: %w", err)
		}
		return h, nil
	}
	return p.Hostname(), nil
}

// CheckPod rejects a pod whose UID, namespace or name cannot be part of a
// path component (they name its state and log directories).
func CheckPod(p *pod.Pod) error {
	if err := CheckName("pod uid", p.Metadata.UID); err != nil {
		return err
	}
	if err := CheckName("pod namespace", p.Metadata.Namespace); err != nil {
		return err
	}
	return CheckName("pod name", p.Metadata.Name)
}

// CheckName rejects a name that cannot be one path component.
func CheckName(kind, name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("volume: invalid %s %q", kind, name)
	}
	return nil
}

// Prepare creates what the pod's containers mount: the directory of each
// emptyDir volume (a tmpfs, size-limited by sizeLimit, for medium Memory),
// each hostPath checked or created as its type says, and the files the
// pod's /etc/hostname, /etc/hosts (naming the sandbox's IP) and
// /etc/resolv.conf are bound from. It is idempotent; the errors of all
// volumes are joined.
func (mgr *Manager) Prepare(p *pod.Pod, sb pod.Sandbox) error {
	uid := p.Metadata.UID
	if err := CheckPod(p); err != nil {
		return err
	}
	if err := os.MkdirAll(mgr.podDir(uid), 0o750); err != nil {
		return fmt.Errorf("prepare pod %s: %w", p.FullName(), err)
	}
	if err := mgr.writeEtcFiles(p, sb); err != nil {
		return fmt.Errorf("prepare pod %s: %w", p.FullName(), err)
	}
	var errs []error
	node := mgr.NodeInfo(sb)
	for i := range p.Spec.Volumes {
		v := &p.Spec.Volumes[i]
		var err error
		switch {
		case v.EmptyDir != nil:
			if err = mgr.prepareEmptyDir(uid, v.Name, v.EmptyDir, sb.UserNS); err == nil {
				err = mgr.applyFSGroup(p, sb.UserNS, mgr.emptyDirPath(uid, v.Name), false, false)
			}
		case v.HostPath != nil:
			err = prepareHostPath(v.HostPath)
		case v.IsObjectVolume():
			err = mgr.prepareObjectVolume(p, v, node, sb.UserNS)
		case v.PersistentVolumeClaim != nil:
			if err = mgr.prepareClaim(p, v); err == nil {
				err = mgr.applyFSGroup(p, sb.UserNS, mgr.claimPath(p, v.PersistentVolumeClaim.ClaimName), v.PersistentVolumeClaim.ReadOnly, false)
			}
		case v.Image != nil:
			// Mounted from its image when a container mounts it (the
			// runtime's, which has the image store), read-only: no
			// fsGroup.
		default:
			err = ErrVolumeNotFound
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("volume %q: %w", v.Name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("prepare pod %s: %w", p.FullName(), err)
	}
	return nil
}

// prepareEmptyDir creates the volume's directory with its mode
// (world-writable, 0777, unless the manifest sets one, as Kubernetes makes
// it), and mounts a tmpfs with that mode on it for medium Memory. For a
// pod in a user namespace of its own (idmap not nil) the new directory, or
// the new tmpfs, belongs to the pod's root (host ID idmap.HostID), so that
// its root can write it whatever the mode.
func (mgr *Manager) prepareEmptyDir(uid, name string, src *pod.EmptyDirVolumeSource, idmap *pod.IDMapping) error {
	if err := CheckName("volume name", name); err != nil {
		return err
	}
	dir := mgr.emptyDirPath(uid, name)
	if err := os.MkdirAll(filepath.Dir(dir), 0o750); err != nil {
		return err
	}
	created, err := mkdirMode(dir, src.DirMode())
	if err != nil {
		return err
	}
	if created && idmap != nil {
		if err := chownRoot(dir, idmap); err != nil {
			return err
		}
	}
	if src.Medium != pod.StorageMediumMemory {
		return nil
	}
	mounted, err := isMountPoint(dir)
	if err != nil || mounted {
		return err
	}
	data := "mode=" + strconv.FormatUint(uint64(src.DirMode()), 8)
	if src.SizeLimit != nil && src.SizeLimit.Value() > 0 {
		data += ",size=" + strconv.FormatInt(src.SizeLimit.Value(), 10)
	}
	if idmap != nil {
		data += ",uid=" + strconv.FormatUint(uint64(idmap.HostID), 10) + ",gid=" + strconv.FormatUint(uint64(idmap.HostID), 10)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, data); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	return nil
}

// chownRoot gives dir (tug's own path, not followed if a link) to the root
// of the pod's user namespace.
func chownRoot(dir string, idmap *pod.IDMapping) error {
	id := int(idmap.HostID)
	if err := os.Lchown(dir, id, id); err != nil {
		return fmt.Errorf("give %s to the pod's user namespace: %w", dir, err)
	}
	return nil
}

// mkdirShared creates dir world-writable (0777 past the umask), as
// Kubernetes makes an emptyDir, and reports whether it was new; see
// mkdirMode.
func mkdirShared(dir string) (created bool, err error) {
	return mkdirMode(dir, pod.EmptyDirDefaultMode)
}

// mkdirMode creates dir with the permission bits (and sticky bit) of mode,
// past the umask, and reports whether it was new. An existing dir is left
// alone: volumes are prepared at every sync, and a later chmod would take
// back the setgid bit fsGroup added and undo the pod's own chmod of its
// volume.
func mkdirMode(dir string, mode uint32) (created bool, err error) {
	perm := fs.FileMode(mode) & fs.ModePerm
	if mode&unix.S_ISVTX != 0 {
		perm |= fs.ModeSticky
	}
	if err := os.Mkdir(dir, perm); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, nil
		}
		return false, err
	}
	return true, os.Chmod(dir, perm)
}

// isMountPoint reports whether dir is itself a mount point.
func isMountPoint(dir string) (bool, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false, err
	}
	info, err := mount.Lookup(real)
	if err != nil {
		return false, err
	}
	return info.Mountpoint == real, nil
}

// prepareHostPath checks a hostPath volume against its type as Kubernetes
// does, creating it for DirectoryOrCreate (0755, with parents) and
// FileOrCreate (0644; the parent must exist). Symlinks are followed. It is
// the early check of Prepare; the check that counts is made again on
// the opened path when a container mounts it (openHostPath).
func prepareHostPath(src *pod.HostPathVolumeSource) error {
	path := src.Path
	if !filepath.IsAbs(path) {
		return fmt.Errorf("%w: path %q is not absolute", ErrHostPathType, path)
	}
	fi, err := os.Stat(path)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("hostPath %s: %w", path, err)
	}
	switch {
	case exists:
		return checkHostPathType(src, fi.Mode(), true)
	case src.Type == pod.HostPathDirectoryOrCreate:
		if err := os.MkdirAll(path, 0o755); err != nil {
			return fmt.Errorf("create hostPath directory %s: %w", path, err)
		}
		return nil
	case src.Type == pod.HostPathFileOrCreate:
		f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("create hostPath file %s: %w", path, err)
		}
		return f.Close()
	}
	return checkHostPathType(src, 0, exists)
}

// checkHostPathType checks the file type mode of a hostPath (exists false:
// missing) against its volume's type.
func checkHostPathType(src *pod.HostPathVolumeSource, mode fs.FileMode, exists bool) error {
	var ok bool
	switch src.Type {
	case pod.HostPathUnset:
		return nil
	case pod.HostPathDirectoryOrCreate, pod.HostPathDirectory:
		ok = mode.IsDir()
	case pod.HostPathFileOrCreate, pod.HostPathFile:
		ok = mode.IsRegular()
	case pod.HostPathSocket:
		ok = mode&fs.ModeSocket != 0
	case pod.HostPathCharDev:
		ok = mode&fs.ModeDevice != 0 && mode&fs.ModeCharDevice != 0
	case pod.HostPathBlockDev:
		ok = mode&fs.ModeDevice != 0 && mode&fs.ModeCharDevice == 0
	default:
		return fmt.Errorf("%w: unknown type %q", ErrHostPathType, src.Type)
	}
	if exists && ok {
		return nil
	}
	return hostPathTypeError(src, exists)
}

func hostPathTypeError(src *pod.HostPathVolumeSource, exists bool) error {
	if !exists {
		return fmt.Errorf("%w: %s does not exist (type %s)", ErrHostPathType, src.Path, src.Type)
	}
	want := map[pod.HostPathType]string{
		pod.HostPathDirectoryOrCreate: "directory", pod.HostPathDirectory: "directory",
		pod.HostPathFileOrCreate: "file", pod.HostPathFile: "file",
		pod.HostPathSocket: "socket", pod.HostPathCharDev: "character device", pod.HostPathBlockDev: "block device",
	}[src.Type]
	return fmt.Errorf("%w: %s is not a %s (type %s)", ErrHostPathType, src.Path, want, src.Type)
}

// StagingDir is where the volumes of container id are staged for runc:
// RootDir/pods/<uid>/volume-subpaths/<id>/<n>, inside the pod's state
// directory (0750, root's), which no container mounts.
func (mgr *Manager) StagingDir(uid, id string) string {
	return filepath.Join(mgr.podDir(uid), "volume-subpaths", id)
}

// Mounts returns container c's mounts: its volumeMounts (hostPath and
// emptyDir as recursive private binds, read-only when asked; a hostPath
// with mountPropagation HostToContainer rslave, with Bidirectional
// rshared), then the
// pod's /etc/hostname, /etc/hosts (the node's for hostNetwork) and
// /etc/resolv.conf files, read-only, each unless a volume is mounted there.
//
// A mount with a subPath, and every hostPath mount, is staged: the path is
// opened (the subPath below the opened volume, never following a symlink,
// missing directories created; the hostPath checked against its type on
// the opened descriptor) and the opened object is bind-mounted at
// stageDir/<n>, which the returned mount names as its source. A plain
// emptyDir mount is not staged: its path is tug's own, below the pod's
// state directory, and no container can change any of its components. The
// caller removes the staging mounts with Unstage(stageDir) once runc has
// made its own (after the task is created), also when Mounts fails.
func (mgr *Manager) Mounts(p *pod.Pod, c *pod.Container, stageDir string) ([]specs.Mount, error) {
	vols := map[string]*pod.Volume{}
	for i := range p.Spec.Volumes {
		vols[p.Spec.Volumes[i].Name] = &p.Spec.Volumes[i]
	}
	var out []specs.Mount
	taken := map[string]bool{}
	for i, vm := range c.VolumeMounts {
		v, ok := vols[vm.Name]
		if !ok {
			return nil, fmt.Errorf("volumeMount %q: %w", vm.Name, ErrVolumeNotFound)
		}
		if !filepath.IsAbs(vm.MountPath) {
			return nil, fmt.Errorf("volumeMount %q: mountPath %q is not absolute", vm.Name, vm.MountPath)
		}
		var src string
		readOnly := vm.ReadOnly
		switch {
		case v.HostPath != nil || vm.SubPath != "":
			var err error
			if src, err = mgr.stageVolume(p, v, vm.SubPath, filepath.Join(stageDir, strconv.Itoa(i)), vm.Propagation()); err != nil {
				return nil, fmt.Errorf("volumeMount %q: %w", vm.Name, err)
			}
		case v.EmptyDir != nil:
			if err := CheckName("volume name", v.Name); err != nil {
				return nil, err
			}
			src = mgr.emptyDirPath(p.Metadata.UID, v.Name)
		case v.IsObjectVolume():
			if err := CheckName("volume name", v.Name); err != nil {
				return nil, err
			}
			// Read-only, as the kubelet mounts them: the files are tug's.
			src, readOnly = mgr.objectVolumePath(p.Metadata.UID, v.Name), true
		case v.PersistentVolumeClaim != nil:
			if err := CheckName("claim name", v.PersistentVolumeClaim.ClaimName); err != nil {
				return nil, err
			}
			src = mgr.claimPath(p, v.PersistentVolumeClaim.ClaimName)
			readOnly = readOnly || v.PersistentVolumeClaim.ReadOnly
		case v.Image != nil:
			if err := CheckName("volume name", v.Name); err != nil {
				return nil, err
			}
			src = mgr.imageVolumePath(p.Metadata.UID, v.Name)
		default:
			return nil, fmt.Errorf("volumeMount %q: %w", vm.Name, ErrVolumeNotFound)
		}
		if v.IsObjectVolume() || (v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ReadOnly) {
			readOnly = true
		}
		switch {
		case v.Image != nil:
			// Read-only whatever readOnly says, and no file in it runs
			// (noexec), as Kubernetes mounts an image volume.
			out = append(out, imageBindMount(src, vm.MountPath))
		case v.HostPath != nil:
			m := BindMount(src, vm.MountPath, readOnly)
			setPropagation(&m, vm.Propagation())
			out = append(out, m)
		default:
			out = append(out, BindMount(src, vm.MountPath, readOnly))
		}
		taken[filepath.Clean(vm.MountPath)] = true
	}
	uid := p.Metadata.UID
	hosts := mgr.hostsPath(uid)
	if p.Spec.HostNetwork {
		hosts = "/etc/hosts"
	}
	for _, m := range []struct{ src, dst string }{
		{mgr.hostnamePath(uid), "/etc/hostname"},
		{hosts, "/etc/hosts"},
		{mgr.resolvConfPath(uid), "/etc/resolv.conf"},
	} {
		if taken[m.dst] {
			continue
		}
		if _, err := os.Stat(m.src); err != nil {
			mgr.log.Debug("file not mounted", "file", m.src, "err", err)
			continue
		}
		out = append(out, BindMount(m.src, m.dst, true))
	}
	return out, nil
}

// stageVolume opens volume v (and sub below it, if not empty) and
// bind-mounts the opened object at target; it returns target. A hostPath
// mounted with propagation must be on a host mount that propagates so
// (checkPropagation).
func (mgr *Manager) stageVolume(p *pod.Pod, v *pod.Volume, sub, target string, prop pod.MountPropagationMode) (string, error) {
	var root int
	var err error
	switch {
	case v.HostPath != nil:
		root, err = openHostPath(v.HostPath)
	case v.EmptyDir != nil:
		if err := CheckName("volume name", v.Name); err != nil {
			return "", err
		}
		root, err = openRoot(mgr.emptyDirPath(p.Metadata.UID, v.Name))
	case v.IsObjectVolume():
		if err := CheckName("volume name", v.Name); err != nil {
			return "", err
		}
		var dir string
		if dir, err = mgr.dataDir(p.Metadata.UID, v.Name); err == nil {
			root, err = openRoot(dir)
		}
	case v.PersistentVolumeClaim != nil:
		if err := CheckName("claim name", v.PersistentVolumeClaim.ClaimName); err != nil {
			return "", err
		}
		root, err = openRoot(mgr.claimPath(p, v.PersistentVolumeClaim.ClaimName))
	case v.Image != nil:
		if err := CheckName("volume name", v.Name); err != nil {
			return "", err
		}
		root, err = openRoot(mgr.imageVolumePath(p.Metadata.UID, v.Name))
	default:
		return "", ErrVolumeNotFound
	}
	if err != nil {
		return "", err
	}
	defer unix.Close(root)
	fd := root
	if sub != "" {
		if fd, err = openBeneath(root, sub, false); err != nil {
			if v.Image != nil && errors.Is(err, unix.EROFS) {
				// openBeneath's mkdir of a missing component.
				return "", fmt.Errorf("%w: %q", ErrImageSubPathMissing, sub)
			}
			return "", err
		}
		defer unix.Close(fd)
	}
	if v.HostPath != nil {
		if err := checkPropagation(fd, v.HostPath.Path, prop); err != nil {
			return "", err
		}
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
		return "", fmt.Errorf("staging directory: %w", err)
	}
	if err := stage(fd, target); err != nil {
		return "", err
	}
	if real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); err == nil {
		mgr.log.Debug("staged volume", "pod", p.FullName(), "file", real, "staged", target)
	}
	return target, nil
}

// Remove unmounts the pod's tmpfs volumes and removes RootDir/pods/<uid>.
// The pod's containers must already be removed. A pod with nothing left is
// not an error.
func (mgr *Manager) Remove(uid string) error {
	if err := CheckName("pod uid", uid); err != nil {
		return err
	}
	mgr.fsGroups.forget(uid)
	return mgr.removePodDir(uid)
}

// imageBindMount returns the bind mount of an image volume's directory at
// dest: read-only, nosuid, nodev and noexec.
func imageBindMount(source, dest string) specs.Mount {
	m := BindMount(source, dest, true)
	m.Options = append(m.Options, "nosuid", "nodev", "noexec")
	return m
}

// BindMount returns a recursive, private bind mount of source at dest.
func BindMount(source, dest string, readOnly bool) specs.Mount {
	mode := "rw"
	if readOnly {
		mode = "ro"
	}
	return specs.Mount{
		Type:        "bind",
		Source:      source,
		Destination: dest,
		Options:     []string{"rbind", "rprivate", mode},
	}
}
