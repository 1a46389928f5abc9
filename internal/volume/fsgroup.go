package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"golang.org/x/sys/unix"

	"tug/internal/pod"
)

// The permission bits the kubelet adds for fsGroup (SetVolumeOwnership in
// pkg/volume/volume_linux.go): group read-write (read-only for a read-only
// volume), and on directories group search and setgid, so that what is
// created in them later gets the group too.
const (
	fsGroupRW   = 0o660
	fsGroupRO   = 0o440
	fsGroupExec = 0o110
)

// fsGroupDone remembers, per pod uid, the volume directories whose
// ownership was already set during this run of tug, so that the
// reconciler's every sync does not walk them again. Like the kubelet's
// mount, a tug restart sets it once more (subject to the change policy).
type fsGroupDone struct {
	mu   sync.Mutex
	done map[string]map[string]bool
}

func (d *fsGroupDone) seen(uid, dir string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.done[uid][dir]
}

func (d *fsGroupDone) mark(uid, dir string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done == nil {
		d.done = map[string]map[string]bool{}
	}
	if d.done[uid] == nil {
		d.done[uid] = map[string]bool{}
	}
	d.done[uid][dir] = true
}

func (d *fsGroupDone) forget(uid string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.done, uid)
}

// applyFSGroup gives the volume directory dir of pod p the pod's fsGroup,
// as the kubelet does for the volume kinds it owns (emptyDir, configMap,
// secret, projected, downwardAPI, claims; never hostPath). again forces a
// new walk (an object volume's files were rewritten). Without fsGroup it
// does nothing. In a pod's own user namespace (idmap not nil) the group
// is the host ID fsGroup maps to.
func (mgr *Manager) applyFSGroup(p *pod.Pod, idmap *pod.IDMapping, dir string, readOnly, again bool) error {
	psc := p.Spec.SecurityContext
	if psc == nil || psc.FSGroup == nil {
		return nil
	}
	uid := p.Metadata.UID
	if !again && mgr.fsGroups.seen(uid, dir) {
		return nil
	}
	always := psc.FSGroupChangePolicy == nil || *psc.FSGroupChangePolicy != "OnRootMismatch"
	gid := *psc.FSGroup
	if idmap != nil {
		gid = idmap.Host(gid)
	}
	if err := setVolumeOwnership(dir, int(gid), readOnly, always); err != nil {
		return fmt.Errorf("set fsGroup %d: %w", *psc.FSGroup, err)
	}
	mgr.fsGroups.mark(uid, dir)
	return nil
}

// setVolumeOwnership walks the tree under dir (dir itself is tug's path and
// is followed; nothing below it is): every entry gets group gid, regular
// files and directories the group bits of fsGroupRW (fsGroupRO when
// readOnly), directories also setgid and group search. A symlink has its
// own group changed and is never followed, so a container cannot make tug
// change a file outside the volume. Unless always, a root that already has
// the group and the bits is left as it is with all below it
// (fsGroupChangePolicy OnRootMismatch).
func setVolumeOwnership(dir string, gid int, readOnly, always bool) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	mask := uint32(fsGroupRW)
	if readOnly {
		mask = fsGroupRO
	}
	if !always {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return &fs.PathError{Op: "stat", Path: dir, Err: err}
		}
		want := mask | fsGroupExec | unix.S_ISGID
		if int(st.Gid) == gid && st.Mode&want == want {
			return nil
		}
	}
	return ownTree(fd, dir, gid, mask)
}

// ownTree sets the group and bits of the directory open as fd, then of
// everything below it, each entry opened beneath its directory without
// following links, with a bounded number of open directories (treeWalk).
// A tree deeper than maxWalkDepth is refused with ErrTreeTooDeep: the
// walk stops there (what it set on its way stays set).
func ownTree(fd int, path string, gid int, mask uint32) error {
	w := &treeWalk{
		path: path,
		enter: func(fd int, path string) error {
			if err := ownFd(fd, gid, mask|fsGroupExec|unix.S_ISGID); err != nil {
				return &fs.PathError{Op: "chown", Path: path, Err: err}
			}
			return nil
		},
		entry: func(dirfd int, name, path string, st *unix.Stat_t) error {
			if st.Mode&unix.S_IFMT != unix.S_IFREG {
				// a symlink, a fifo, a socket, a device: its group only
				if err := unix.Fchownat(dirfd, name, -1, gid, unix.AT_SYMLINK_NOFOLLOW); err != nil && !errors.Is(err, unix.ENOENT) {
					return &fs.PathError{Op: "chown", Path: path, Err: err}
				}
				return nil
			}
			f, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
			if err != nil {
				return &fs.PathError{Op: "open", Path: path, Err: err}
			}
			defer unix.Close(f)
			if err := ownFd(f, gid, mask); err != nil {
				return &fs.PathError{Op: "chown", Path: path, Err: err}
			}
			return nil
		},
	}
	return w.run(fd)
}

// ownFd gives the open file group gid and adds the bits of mask to its
// mode (chown clears setgid, so the mode is set after it).
func ownFd(fd, gid int, mask uint32) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if int(st.Gid) != gid {
		if err := unix.Fchown(fd, -1, gid); err != nil {
			return err
		}
	}
	mode := st.Mode&0o7777 | mask
	if err := unix.Fchmod(fd, mode); err != nil {
		return err
	}
	return nil
}

// readDirNames lists the directory open as fd (without . and ..), reading
// from a duplicate so that fd's own offset is untouched.
func readDirNames(fd int) ([]string, error) {
	dup, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dup)
	var names []string
	buf := make([]byte, 8192)
	for {
		n, err := unix.Getdents(dup, buf)
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}
