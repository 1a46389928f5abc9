package podruntime

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/containerd/containerd/mount"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"tug/internal/pod"
)

// podDir is RootDir/pods/<uid>: what PreparePod makes for the pod.
func (r *Runtime) podDir(uid string) string { return filepath.Join(r.cfg.RootDir, "pods", uid) }

func (r *Runtime) emptyDirPath(uid, volume string) string {
	return filepath.Join(r.podDir(uid), "volumes", "empty-dir", volume)
}

// podHostname is the pod's hostname as Kubernetes gives it: the pod name cut
// to 63 characters, or the node's own hostname for a hostNetwork pod (which
// shares the host's UTS namespace).
func podHostname(p *pod.Pod) (string, error) {
	if p.Spec.HostNetwork {
		h, err := os.Hostname()
		if err != nil {
			return "", fmt.Errorf("host name: %w", err)
		}
		return h, nil
	}
	return p.Hostname(), nil
}

// checkPod rejects a pod whose UID, namespace or name cannot be part of a
// path component (they name its state and log directories).
func checkPod(p *pod.Pod) error {
	if err := checkName("pod uid", p.Metadata.UID); err != nil {
		return err
	}
	if err := checkName("pod namespace", p.Metadata.Namespace); err != nil {
		return err
	}
	return checkName("pod name", p.Metadata.Name)
}

// checkName rejects a name that cannot be one path component.
func checkName(kind, name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("podruntime: invalid %s %q", kind, name)
	}
	return nil
}

// PreparePod creates what the pod's containers mount: the directory of each
// emptyDir volume (a tmpfs, size-limited by sizeLimit, for medium Memory),
// each hostPath checked or created as its type says, and the files the
// pod's /etc/hostname, /etc/hosts (naming the sandbox's IP) and
// /etc/resolv.conf are bound from. It is idempotent; the errors of all
// volumes are joined.
func (r *Runtime) PreparePod(ctx context.Context, p *pod.Pod, sb pod.Sandbox) error {
	uid := p.Metadata.UID
	if err := checkPod(p); err != nil {
		return err
	}
	if err := os.MkdirAll(r.podDir(uid), 0o750); err != nil {
		return fmt.Errorf("prepare pod %s: %w", p.FullName(), err)
	}
	if err := r.writeEtcFiles(p, sb); err != nil {
		return fmt.Errorf("prepare pod %s: %w", p.FullName(), err)
	}
	var errs []error
	for i := range p.Spec.Volumes {
		v := &p.Spec.Volumes[i]
		var err error
		switch {
		case v.EmptyDir != nil:
			err = r.prepareEmptyDir(uid, v.Name, v.EmptyDir)
		case v.HostPath != nil:
			err = prepareHostPath(v.HostPath)
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

// prepareEmptyDir creates the volume's directory, world-writable as
// Kubernetes makes it, and mounts a tmpfs on it for medium Memory.
func (r *Runtime) prepareEmptyDir(uid, name string, src *pod.EmptyDirVolumeSource) error {
	if err := checkName("volume name", name); err != nil {
		return err
	}
	dir := r.emptyDirPath(uid, name)
	if err := os.MkdirAll(filepath.Dir(dir), 0o750); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if src.Medium != pod.StorageMediumMemory {
		return os.Chmod(dir, 0o777) // past the umask
	}
	mounted, err := isMountPoint(dir)
	if err != nil || mounted {
		return err
	}
	data := "mode=0777"
	if src.SizeLimit != nil && src.SizeLimit.Value() > 0 {
		data += ",size=" + strconv.FormatInt(src.SizeLimit.Value(), 10)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, data); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	return nil
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
// FileOrCreate (0644; the parent must exist). Symlinks are followed.
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
	bad := func(want string) error {
		if !exists {
			return fmt.Errorf("%w: %s does not exist (type %s)", ErrHostPathType, path, src.Type)
		}
		return fmt.Errorf("%w: %s is not a %s (type %s)", ErrHostPathType, path, want, src.Type)
	}
	mode := os.FileMode(0)
	if exists {
		mode = fi.Mode()
	}
	switch src.Type {
	case pod.HostPathUnset:
		return nil
	case pod.HostPathDirectoryOrCreate:
		if !exists {
			if err := os.MkdirAll(path, 0o755); err != nil {
				return fmt.Errorf("create hostPath directory %s: %w", path, err)
			}
			return nil
		}
		if !mode.IsDir() {
			return bad("directory")
		}
	case pod.HostPathDirectory:
		if !exists || !mode.IsDir() {
			return bad("directory")
		}
	case pod.HostPathFileOrCreate:
		if !exists {
			f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o644)
			if err != nil {
				return fmt.Errorf("create hostPath file %s: %w", path, err)
			}
			return f.Close()
		}
		if !mode.IsRegular() {
			return bad("file")
		}
	case pod.HostPathFile:
		if !exists || !mode.IsRegular() {
			return bad("file")
		}
	case pod.HostPathSocket:
		if !exists || mode&fs.ModeSocket == 0 {
			return bad("socket")
		}
	case pod.HostPathCharDev:
		if !exists || mode&fs.ModeDevice == 0 || mode&fs.ModeCharDevice == 0 {
			return bad("character device")
		}
	case pod.HostPathBlockDev:
		if !exists || mode&fs.ModeDevice == 0 || mode&fs.ModeCharDevice != 0 {
			return bad("block device")
		}
	default:
		return fmt.Errorf("%w: unknown type %q", ErrHostPathType, src.Type)
	}
	return nil
}

// podMounts returns container c's mounts: its volumeMounts (hostPath and
// emptyDir as recursive private binds, read-only when asked, subPath
// resolved inside the volume and created as a directory if missing), then
// the pod's /etc/hostname, /etc/hosts (the node's for hostNetwork) and
// /etc/resolv.conf files, read-only, each unless a volume is mounted there.
func (r *Runtime) podMounts(p *pod.Pod, c *pod.Container) ([]specs.Mount, error) {
	vols := map[string]*pod.Volume{}
	for i := range p.Spec.Volumes {
		vols[p.Spec.Volumes[i].Name] = &p.Spec.Volumes[i]
	}
	var out []specs.Mount
	taken := map[string]bool{}
	for _, vm := range c.VolumeMounts {
		v, ok := vols[vm.Name]
		if !ok {
			return nil, fmt.Errorf("volumeMount %q: %w", vm.Name, ErrVolumeNotFound)
		}
		var src string
		switch {
		case v.HostPath != nil:
			src = v.HostPath.Path
		case v.EmptyDir != nil:
			if err := checkName("volume name", v.Name); err != nil {
				return nil, err
			}
			src = r.emptyDirPath(p.Metadata.UID, v.Name)
		default:
			return nil, fmt.Errorf("volumeMount %q: %w", vm.Name, ErrVolumeNotFound)
		}
		if vm.SubPath != "" {
			var err error
			if src, err = subPath(src, vm.SubPath); err != nil {
				return nil, fmt.Errorf("volumeMount %q: %w", vm.Name, err)
			}
		}
		if !filepath.IsAbs(vm.MountPath) {
			return nil, fmt.Errorf("volumeMount %q: mountPath %q is not absolute", vm.Name, vm.MountPath)
		}
		out = append(out, bindMount(src, vm.MountPath, vm.ReadOnly))
		taken[filepath.Clean(vm.MountPath)] = true
	}
	uid := p.Metadata.UID
	hosts := r.hostsPath(uid)
	if p.Spec.HostNetwork {
		hosts = "/etc/hosts"
	}
	for _, m := range []struct{ src, dst string }{
		{r.hostnamePath(uid), "/etc/hostname"},
		{hosts, "/etc/hosts"},
		{r.resolvConfPath(uid), "/etc/resolv.conf"},
	} {
		if taken[m.dst] {
			continue
		}
		if _, err := os.Stat(m.src); err != nil {
			r.log.Debug("file not mounted", "file", m.src, "err", err)
			continue
		}
		out = append(out, bindMount(m.src, m.dst, true))
	}
	return out, nil
}

// subPath returns root/sub, refusing an absolute sub, a ".." component and
// a symlink that leads outside root. Missing components are created as
// directories (0755), as the kubelet does, one at a time after the checks of
// the ones before, so nothing is ever created outside root.
func subPath(root, sub string) (string, error) {
	if filepath.IsAbs(sub) {
		return "", fmt.Errorf("%w: %q is absolute", ErrInvalidSubPath, sub)
	}
	parts := strings.Split(filepath.ToSlash(sub), "/")
	if slices.Contains(parts, "..") {
		return "", fmt.Errorf("%w: %q contains \"..\"", ErrInvalidSubPath, sub)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", fmt.Errorf("subPath %q: %w", sub, err)
	}
	cur := realRoot
	for _, part := range parts {
		if part == "" || part == "." {
			continue
		}
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(next, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return "", fmt.Errorf("create subPath %s: %w", next, err)
			}
		case err != nil:
			return "", fmt.Errorf("subPath %q: %w", sub, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			if next, err = filepath.EvalSymlinks(next); err != nil {
				return "", fmt.Errorf("%w: %q: %w", ErrInvalidSubPath, sub, err)
			}
			if next != realRoot && !strings.HasPrefix(next, realRoot+string(filepath.Separator)) {
				return "", fmt.Errorf("%w: %q resolves outside its volume", ErrInvalidSubPath, sub)
			}
		}
		cur = next
	}
	return cur, nil
}

// CleanupPod unmounts the pod's tmpfs volumes and removes RootDir/pods/<uid>
// and the pod's log directory. The pod's containers must already be removed.
// A pod with nothing left is not an error.
func (r *Runtime) CleanupPod(ctx context.Context, p *pod.Pod) error {
	uid := p.Metadata.UID
	if err := checkPod(p); err != nil {
		return err
	}
	dir := r.podDir(uid)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		// Lazy unmount: a mount still busy is detached, never deleted through.
		if err := mount.UnmountRecursive(real, unix.MNT_DETACH); err != nil {
			return fmt.Errorf("clean up pod %s: unmount volumes: %w", p.FullName(), err)
		}
		if err := os.RemoveAll(real); err != nil {
			return fmt.Errorf("clean up pod %s: %w", p.FullName(), err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("clean up pod %s: %w", p.FullName(), err)
	}
	if err := os.RemoveAll(r.podLogDir(p)); err != nil {
		return fmt.Errorf("clean up pod %s: remove logs: %w", p.FullName(), err)
	}
	return nil
}
