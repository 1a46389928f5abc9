package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"tug/internal/pod"
)

// A volume's subPath lives in a directory that containers can write, so any
// of its components may be swapped for a symlink at any moment (a second
// container looping "mkdir d; rmdir d; ln -s / d" is enough). Checking a
// path and then handing runc the path string is a time-of-check/time-of-use
// race (the kubelet's CVE-2017-1002101). Instead, tug opens each component
// below an opened root without ever following a symlink, and bind-mounts
// the opened file descriptor itself (/proc/self/fd/N names the object, not
// a path) onto a staging path in tug's own state directory, which no
// container can reach; runc then mounts the staging path. What was checked
// is what is mounted.

// openRoot opens dir (following symlinks: it is a path tug or the manifest
// chose, not one a container controls) as an O_PATH directory descriptor.
func openRoot(dir string) (int, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	return fd, nil
}

// checkSubPath rejects a subPath that is absolute or has a ".." component,
// before anything is opened.
func checkSubPath(sub string) ([]string, error) {
	if filepath.IsAbs(sub) {
		return nil, fmt.Errorf("%w: %q is absolute", ErrInvalidSubPath, sub)
	}
	var parts []string
	for _, part := range strings.Split(filepath.ToSlash(sub), "/") {
		switch part {
		case "", ".":
			continue
		case "..":
			return nil, fmt.Errorf("%w: %q contains \"..\"", ErrInvalidSubPath, sub)
		}
		parts = append(parts, part)
	}
	return parts, nil
}

// openBeneath opens sub below the directory rootFd as an O_PATH descriptor
// without following a symlink in any component (a symlink anywhere is
// ErrInvalidSubPath, even one pointing inside the volume: it could be
// changed between any two steps). Every component but the last must be a
// directory; missing components are created as directories (0755) with
// mkdirat below the opened parent, as the kubelet creates a missing
// subPath, so nothing is ever created outside the root. The kernel's
// openat2 with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS is used when it has it
// (and noOpenat2 is false); otherwise each component is opened with
// openat(O_NOFOLLOW) and checked with fstat. The caller closes the
// returned descriptor. An empty sub (or ".") returns a new descriptor of
// the root itself.
func openBeneath(rootFd int, sub string, noOpenat2 bool) (int, error) {
	parts, err := checkSubPath(sub)
	if err != nil {
		return -1, err
	}
	cur, err := unix.Dup(rootFd)
	if err != nil {
		return -1, fmt.Errorf("subPath %q: %w", sub, err)
	}
	unix.CloseOnExec(cur)
	for i, part := range parts {
		last := i == len(parts)-1
		next, err := openComponent(cur, part, !last, noOpenat2)
		if errors.Is(err, unix.ENOENT) {
			if merr := unix.Mkdirat(cur, part, 0o755); merr != nil && !errors.Is(merr, unix.EEXIST) {
				unix.Close(cur)
				return -1, fmt.Errorf("create subPath %q component %q: %w", sub, part, merr)
			}
			next, err = openComponent(cur, part, !last, noOpenat2)
		}
		unix.Close(cur)
		switch {
		case errors.Is(err, unix.ELOOP):
			return -1, fmt.Errorf("%w: %q: %q is a symlink", ErrInvalidSubPath, sub, strings.Join(parts[:i+1], "/"))
		case errors.Is(err, unix.ENOTDIR):
			return -1, fmt.Errorf("%w: %q: %q is not a directory", ErrInvalidSubPath, sub, strings.Join(parts[:i+1], "/"))
		case errors.Is(err, unix.EXDEV):
			return -1, fmt.Errorf("%w: %q resolves outside its volume", ErrInvalidSubPath, sub)
		case err != nil:
			return -1, fmt.Errorf("subPath %q: open %q: %w", sub, strings.Join(parts[:i+1], "/"), err)
		}
		cur = next
	}
	return cur, nil
}

// openComponent opens the single name below dirfd as an O_PATH descriptor,
// never following a symlink: a symlink is ELOOP, a non-directory where dir
// is asked is ENOTDIR.
func openComponent(dirfd int, name string, dir bool, noOpenat2 bool) (int, error) {
	flags := uint64(unix.O_PATH | unix.O_CLOEXEC)
	fd := -1
	var err error
	if !noOpenat2 {
		how := flags
		if dir {
			how |= unix.O_DIRECTORY
		}
		fd, err = unix.Openat2(dirfd, name, &unix.OpenHow{
			Flags:   how,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		if errors.Is(err, unix.ENOSYS) { // before Linux 5.6
			noOpenat2 = true
		}
	}
	if noOpenat2 {
		// Without O_DIRECTORY: on a symlink it would fail ENOTDIR, and
		// fstat below tells a symlink from a file.
		fd, err = unix.Openat(dirfd, name, int(flags)|unix.O_NOFOLLOW, 0)
	}
	if err != nil {
		return -1, err
	}
	// O_PATH|O_NOFOLLOW opens a symlink itself rather than failing: fstat
	// tells (and is a second check behind openat2).
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		unix.Close(fd)
		return -1, unix.ELOOP
	case dir && st.Mode&unix.S_IFMT != unix.S_IFDIR:
		unix.Close(fd)
		return -1, unix.ENOTDIR
	}
	return fd, nil
}

// fdMode returns the file type bits of the open descriptor fd as an
// fs.FileMode (fs.ModeDir, fs.ModeSocket, ...; 0 for a regular file).
func fdMode(fd int) (fs.FileMode, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return fs.ModeDir, nil
	case unix.S_IFLNK:
		return fs.ModeSymlink, nil
	case unix.S_IFSOCK:
		return fs.ModeSocket, nil
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice, nil
	case unix.S_IFBLK:
		return fs.ModeDevice, nil
	case unix.S_IFIFO:
		return fs.ModeNamedPipe, nil
	}
	return 0, nil
}

// openHostPath opens a hostPath volume's path as an O_PATH descriptor and
// checks its type on that descriptor (fstat), so that the object checked
// is the object staged and mounted. Symlinks in the path itself are
// followed, as the kubelet follows them (/var/run -> /run): the path is
// the manifest's choice, and which hostPaths a source may name is the
// admission policy's business. Missing DirectoryOrCreate/FileOrCreate paths
// are created first (see prepareHostPath).
func openHostPath(src *pod.HostPathVolumeSource) (int, error) {
	if err := prepareHostPath(src); err != nil {
		return -1, err
	}
	fd, err := unix.Open(src.Path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return -1, hostPathTypeError(src, false)
		}
		return -1, fmt.Errorf("hostPath %s: %w", src.Path, err)
	}
	mode, err := fdMode(fd)
	if err == nil {
		err = checkHostPathType(src, mode, true)
	}
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// stage bind-mounts the object open as fd onto target, creating target as
// a directory or an empty file to match it. The mount source is
// /proc/self/fd/N, which the kernel resolves to the open object itself, not
// to a path that could have changed since it was opened.
func stage(fd int, target string) error {
	mode, err := fdMode(fd)
	if err != nil {
		return fmt.Errorf("stage %s: %w", target, err)
	}
	if mode.IsDir() {
		err = os.Mkdir(target, 0o700)
	} else {
		var f *os.File
		if f, err = os.OpenFile(target, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
			err = f.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("stage %s: %w", target, err)
	}
	src := "/proc/self/fd/" + strconv.Itoa(fd)
	if err := unix.Mount(src, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		os.Remove(target)
		return fmt.Errorf("stage %s: bind mount: %w", target, err)
	}
	return nil
}

// unstage detaches the staging mount at target (every one stacked there)
// and removes target, which is then an empty directory or file of tug's.
// Nothing is ever deleted through a mount: a target that is still a mount
// point, or a directory that is not empty, is an error and stays.
//
// Each mount is made private (with what is mounted below it) before it is
// detached. A staging mount of a hostPath on a shared host mount is a peer
// of it, and so holds copies of what the host, or a container with
// Bidirectional propagation, mounted below it meanwhile; detaching it as
// it is would propagate the unmount of those copies back to the host's and
// the container's own mounts.
func unstage(target string) error {
	for range 16 {
		if err := unix.Mount("", target, "", unix.MS_PRIVATE|unix.MS_REC, ""); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("make %s private: %w", target, err)
		}
		err := unix.Unmount(target, unix.MNT_DETACH)
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
			break // not (or no longer) a mount point
		}
		if err != nil {
			return fmt.Errorf("unmount %s: %w", target, err)
		}
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Unstage unstages every entry of dir (one container's staging
// directory), then removes dir. A missing dir is not an error.
func Unstage(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if err := unstage(filepath.Join(dir, e.Name())); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
