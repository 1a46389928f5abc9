package specopts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/containerd/containerd/v2/contrib/seccomp"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"tug/internal/pod"
)

// maxSeccompProfileSize bounds a Localhost profile read from disk.
const maxSeccompProfileSize = 1 << 20

// SeccompConfig is the node's seccomp settings.
type SeccompConfig struct {
	// Root is the directory of Localhost profiles (--seccomp-profile-root).
	Root string
	// DefaultUnconfined is --default-seccomp=unconfined: a container that
	// names no profile runs without one (Kubernetes' default) instead of
	// with containerd's default profile (tug's).
	DefaultUnconfined bool
}

// withSeccomp sets the container's seccomp filter from its effective
// seccompProfile (the container's, else the pod's), else tug's default:
// RuntimeDefault is containerd's default profile (the one its CRI uses),
// which depends on the capabilities, so apply this after withSecurity;
// Unconfined is none; Localhost is a runtime-spec JSON profile read from
// below cfg.Root, without leaving it (see readProfile). A privileged
// container gets no filter, as with containerd's CRI. A profile that cannot
// be loaded is ErrCreateContainerConfig.
func withSeccomp(sp *pod.SeccompProfile, privileged bool, cfg SeccompConfig) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		typ := pod.SeccompRuntimeDefault
		if cfg.DefaultUnconfined {
			typ = pod.SeccompUnconfined
		}
		if sp != nil {
			typ = sp.Type
		}
		switch {
		case privileged, typ == pod.SeccompUnconfined:
			s.Linux.Seccomp = nil
		case typ == pod.SeccompRuntimeDefault:
			s.Linux.Seccomp = seccomp.DefaultProfile(s)
		case typ == pod.SeccompLocalhost && sp.LocalhostProfile != nil:
			prof, err := loadProfile(cfg.Root, *sp.LocalhostProfile)
			if err != nil {
				return err
			}
			s.Linux.Seccomp = prof
		default:
			return fmt.Errorf("%w: unsupported seccomp profile type %q", pod.ErrCreateContainerConfig, typ)
		}
		return nil
	}
}

// loadProfile reads and decodes the Localhost profile rel below root.
func loadProfile(root, rel string) (*specs.LinuxSeccomp, error) {
	data, err := readProfile(root, rel)
	if err != nil {
		return nil, fmt.Errorf("%w: seccomp profile %q: %w", pod.ErrCreateContainerConfig, rel, err)
	}
	var prof specs.LinuxSeccomp
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&prof); err != nil {
		return nil, fmt.Errorf("%w: seccomp profile %q: decode: %w", pod.ErrCreateContainerConfig, rel, err)
	}
	return &prof, nil
}

// errProfilePath is a Localhost profile path that leaves the profile
// directory or is not a plain relative path.
var errProfilePath = errors.New("path must stay inside the seccomp profile directory")

// readProfile reads the file rel below root without ever leaving root: rel
// is treated as hostile. It must be relative with no ".." element, and it is
// opened with openat2(RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS) from an opened
// root, so that a symlink inside the directory cannot point out of it (on a
// kernel without openat2, no symlink at all is followed). Only a regular
// file of at most 1 MiB is read.
func readProfile(root, rel string) ([]byte, error) {
	if rel == "" || path.IsAbs(rel) || strings.ContainsRune(rel, 0) || hasDotDotElem(rel) {
		return nil, errProfilePath
	}
	dir, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open profile directory %s: %w", root, err)
	}
	defer unix.Close(dir)
	fd, err := unix.Openat2(dir, rel, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NONBLOCK, // a FIFO must not hang the open
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ENOSYS) {
		fd, err = openNoFollow(dir, rel)
	}
	if errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ELOOP) {
		return nil, errProfilePath
	}
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), path.Join(root, rel))
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSeccompProfileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxSeccompProfileSize {
		return nil, fmt.Errorf("larger than %d bytes", maxSeccompProfileSize)
	}
	return data, nil
}

// openNoFollow opens rel below dir one component at a time, refusing every
// symlink: the fallback for kernels before openat2 (5.6).
func openNoFollow(dir int, rel string) (int, error) {
	elems := strings.Split(path.Clean(rel), "/")
	cur := dir
	for i, e := range elems {
		flags := unix.O_NOFOLLOW | unix.O_CLOEXEC
		if i < len(elems)-1 {
			flags |= unix.O_PATH | unix.O_DIRECTORY
		} else {
			flags |= unix.O_RDONLY | unix.O_NONBLOCK
		}
		fd, err := unix.Openat(cur, e, flags, 0)
		if cur != dir {
			unix.Close(cur)
		}
		if err != nil {
			return -1, err
		}
		cur = fd
	}
	return cur, nil
}

// hasDotDotElem reports whether a slash-separated path has a ".." element.
func hasDotDotElem(p string) bool {
	for _, e := range strings.Split(p, "/") {
		if e == ".." {
			return true
		}
	}
	return false
}
