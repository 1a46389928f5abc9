// Package rootfs reads files of a container's root file system from the
// mounts of its snapshot, before the container exists: the image's
// /etc/passwd and /etc/group, which decide the user a process runs as. A bind
// mount and an overlay are read in place (an overlay layer by layer, as the
// kernel would merge them); any other mount is mounted read-only in a
// temporary directory for the read. Every open is confined to its layer or
// mount (os.Root), so a symlink in an image cannot reach the host.
package rootfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/containerd/containerd/v2/core/mount"
	"golang.org/x/sys/unix"
)

// View calls fn with the root file system the mounts make. The fs.FS serves
// regular files by slash path relative to the root ("etc/passwd"). A read
// that meets a symlink in an overlay layer is done again on a temporary
// mount, where the symlink resolves against the merged root.
func View(ctx context.Context, mounts []mount.Mount, fn func(fs.FS) error) error {
	if layers, ok := inPlace(mounts); ok {
		v, err := openLayers(layers)
		if err != nil {
			return err
		}
		err = fn(v)
		v.close()
		if !errors.Is(err, errMerge) {
			return err
		}
	}
	return mount.WithReadonlyTempMount(ctx, mounts, func(root string) error {
		return Dir(root, fn)
	})
}

// Dir calls fn with the directory dir as a root file system.
func Dir(dir string, fn func(fs.FS) error) error {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("rootfs: %w", err)
	}
	defer r.Close()
	return fn(r.FS())
}

// inPlace returns the directories of mounts, upper layer first, when they
// can be read without mounting: one bind mount, or one overlay whose layers
// are plain directories.
func inPlace(mounts []mount.Mount) ([]string, bool) {
	if len(mounts) != 1 {
		return nil, false
	}
	m := mounts[0]
	switch m.Type {
	case "bind", "rbind":
		return []string{m.Source}, true
	case "overlay":
		var upper string
		var lower []string
		for _, o := range m.Options {
			k, v, _ := strings.Cut(o, "=")
			if strings.Contains(v, "{{") {
				return nil, false // a mount manager's reference to another mount
			}
			switch k {
			case "upperdir":
				upper = v
			case "lowerdir":
				lower = strings.Split(v, ":")
			}
		}
		if len(lower) == 0 {
			return nil, false
		}
		if upper != "" {
			return append([]string{upper}, lower...), true
		}
		return lower, true
	}
	return nil, false
}

// layers is an overlay read in place: the upper layer first.
type layers struct {
	dirs  []string
	roots []*os.Root
}

func openLayers(dirs []string) (*layers, error) {
	v := &layers{dirs: dirs}
	for _, d := range dirs {
		r, err := os.OpenRoot(d)
		if err != nil {
			v.close()
			return nil, fmt.Errorf("rootfs: layer: %w", err)
		}
		v.roots = append(v.roots, r)
	}
	return v, nil
}

func (v *layers) close() {
	for _, r := range v.roots {
		r.Close()
	}
}

// errMerge is a path whose merged view an in-place read does not decide
// (a symlink on the way, which resolves against the merged root).
var errMerge = errors.New("a symlink in an overlay layer")

// Open opens the regular file name as the overlay shows it: from the
// highest layer that has it, unless a higher layer deletes it (a whiteout)
// or hides the lower layers' directory on its way (an opaque directory).
func (v *layers) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) || name == "." {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	parts := strings.Split(name, "/")
	for i, r := range v.roots {
		found, stop, err := v.lookup(i, r, parts)
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		if found {
			return r.Open(name)
		}
		if stop {
			break
		}
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

// lookup says whether layer i has name as a regular file (found), or hides
// it from the layers below (stop): a whiteout of it or of a directory on its
// way, a non-directory on its way, or an opaque directory on its way.
func (v *layers) lookup(i int, r *os.Root, parts []string) (found, stop bool, err error) {
	for j := range parts {
		p := path.Join(parts[:j+1]...)
		st, err := r.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return false, stop, nil
		}
		if err != nil {
			return false, false, err
		}
		last := j == len(parts)-1
		switch mode := st.Mode(); {
		case mode&fs.ModeSymlink != 0:
			return false, false, errMerge
		case isWhiteout(st):
			return false, true, nil
		case last:
			return mode.IsRegular(), true, nil // a directory or a device is not a file
		case !mode.IsDir():
			return false, true, nil
		case opaque(v.dirs[i] + "/" + p):
			stop = true // entries below p come from this layer only
		}
	}
	return false, stop, nil
}

// isWhiteout: overlayfs marks a deleted entry with a character device 0/0.
func isWhiteout(st fs.FileInfo) bool {
	if st.Mode()&fs.ModeCharDevice == 0 {
		return false
	}
	sys, ok := st.Sys().(*unix.Stat_t)
	return ok && sys.Rdev == 0
}

// opaque: a directory that hides the same directory of the layers below,
// marked by the trusted or (unprivileged overlay) user xattr.
func opaque(dir string) bool {
	buf := make([]byte, 1)
	for _, attr := range []string{"trusted.overlay.opaque", "user.overlay.opaque"} {
		if n, err := unix.Lgetxattr(dir, attr, buf); err == nil && n == 1 && buf[0] == 'y' {
			return true
		}
	}
	return false
}
