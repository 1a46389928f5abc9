package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// maxWalkDepth is the deepest directory level below a volume's root that
// tug walks to set fsGroup. A container can build a
// chain of any depth in seconds; no real volume comes near this one, and
// PATH_MAX stops ordinary tools long before it.
const maxWalkDepth = 1024

// maxOpenDirs bounds the directories a walk holds open at once besides its
// root: a deeper directory whose descriptor was closed is opened again from
// its nearest open ancestor, one component at a time without following
// links, so the agent never runs short of descriptors whatever the depth.
const maxOpenDirs = 16

// walkFrame is one directory on the walk's path from its root.
type walkFrame struct {
	name     string   // within the parent ("" for the root)
	fd       int      // -1 while closed
	dev, ino uint64   // what was opened, checked when it is opened again
	names    []string // the entries not visited yet
}

// treeWalk visits the tree below a directory open as root, each entry
// opened beneath its directory without following links. Directories are
// visited before their entries (enter) and after them (leave); any other
// entry once (entry). Hooks return errors that are collected; an error of
// enter skips that directory's entries.
type treeWalk struct {
	path string // the root's path, for messages
	// maxDepth is the deepest level walked (maxWalkDepth when 0). A
	// deeper directory is refused with ErrTreeTooDeep, unless tooDeep is
	// set: it is then given the directory (name beneath dirfd) and the
	// root, and returns the name the directory now has in the root, which
	// the walk visits in its turn (removeTree moves deep subtrees up).
	maxDepth int
	tooDeep  func(dirfd int, name string, root int) (string, error)
	enter    func(fd int, path string) error
	entry    func(dirfd int, name, path string, st *unix.Stat_t) error
	leave    func(dirfd int, name, path string) error
	frames   []walkFrame
	open     int // descriptors held below the root
}

// run walks the tree below root (which stays open and the caller's).
func (w *treeWalk) run(root int) error {
	if w.enter != nil {
		if err := w.enter(root, w.path); err != nil {
			return err
		}
	}
	names, err := readDirNames(root)
	if err != nil {
		return &fs.PathError{Op: "readdir", Path: w.path, Err: err}
	}
	w.frames = []walkFrame{{fd: root, names: names}}
	defer w.closeAll()
	var errs []error
	for {
		top := len(w.frames) - 1
		f := &w.frames[top]
		if len(f.names) == 0 {
			if top == 0 {
				return errors.Join(errs...)
			}
			done := *f
			w.close(top)
			w.frames = w.frames[:top]
			if w.leave != nil {
				dirfd, err := w.fd(top - 1)
				if err != nil {
					errs = append(errs, err)
					w.frames[top-1].names = nil
					continue
				}
				if err := w.leave(dirfd, done.name, w.pathOf(top-1, done.name)); err != nil {
					errs = append(errs, err)
				}
			}
			continue
		}
		name := f.names[0]
		f.names = f.names[1:]
		dirfd, err := w.fd(top)
		if err != nil {
			errs = append(errs, err)
			w.frames[top].names = nil
			continue
		}
		path := w.pathOf(top, name)
		var st unix.Stat_t
		if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if !errors.Is(err, unix.ENOENT) {
				errs = append(errs, &fs.PathError{Op: "stat", Path: path, Err: err})
			}
			continue
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			if w.entry != nil {
				if err := w.entry(dirfd, name, path, &st); err != nil {
					errs = append(errs, err)
				}
			}
			continue
		}
		if top+1 > w.depthLimit() {
			if w.tooDeep == nil {
				return errors.Join(append(errs, fmt.Errorf("%s: %w", w.path, ErrTreeTooDeep))...)
			}
			moved, err := w.tooDeep(dirfd, name, root)
			if err != nil {
				errs = append(errs, &fs.PathError{Op: "move", Path: path, Err: err})
				continue
			}
			w.frames[0].names = append(w.frames[0].names, moved)
			continue
		}
		sub, err := openDirAt(dirfd, name)
		if err != nil {
			errs = append(errs, &fs.PathError{Op: "open", Path: path, Err: err})
			continue
		}
		var sst unix.Stat_t
		if err := unix.Fstat(sub, &sst); err != nil {
			unix.Close(sub)
			errs = append(errs, &fs.PathError{Op: "stat", Path: path, Err: err})
			continue
		}
		if w.enter != nil {
			if err := w.enter(sub, path); err != nil {
				unix.Close(sub)
				errs = append(errs, err)
				continue
			}
		}
		names, err := readDirNames(sub)
		if err != nil {
			unix.Close(sub)
			errs = append(errs, &fs.PathError{Op: "readdir", Path: path, Err: err})
			continue
		}
		w.frames = append(w.frames, walkFrame{name: name, fd: sub, dev: uint64(sst.Dev), ino: sst.Ino, names: names})
		w.open++
		w.trim()
	}
}

func (w *treeWalk) depthLimit() int {
	if w.maxDepth > 0 {
		return w.maxDepth
	}
	return maxWalkDepth
}

// fd returns the descriptor of frame j, opening it again (and the closed
// frames between it and its nearest open ancestor) when it was closed. A
// directory that is no longer the one first opened (the tree changed
// during the walk) is an error.
func (w *treeWalk) fd(j int) (int, error) {
	if w.frames[j].fd >= 0 {
		return w.frames[j].fd, nil
	}
	a := j - 1
	for w.frames[a].fd < 0 {
		a--
	}
	for b := a + 1; b <= j; b++ {
		f := &w.frames[b]
		fd, err := openDirAt(w.frames[b-1].fd, f.name)
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: w.pathOf(b-1, f.name), Err: err}
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || uint64(st.Dev) != f.dev || st.Ino != f.ino {
			unix.Close(fd)
			return -1, &fs.PathError{Op: "open", Path: w.pathOf(b-1, f.name), Err: errors.New("the directory changed during the walk")}
		}
		f.fd = fd
		w.open++
		w.trim()
	}
	return w.frames[j].fd, nil
}

// trim closes the shallowest open directories (never the root) until at
// most maxOpenDirs are open. The deepest ones, which the walk needs next,
// stay open.
func (w *treeWalk) trim() {
	for i := 1; w.open > maxOpenDirs && i < len(w.frames); i++ {
		w.close(i)
	}
}

func (w *treeWalk) close(i int) {
	if i > 0 && w.frames[i].fd >= 0 {
		unix.Close(w.frames[i].fd)
		w.frames[i].fd = -1
		w.open--
	}
}

func (w *treeWalk) closeAll() {
	for i := range w.frames {
		w.close(i)
	}
}

// pathOf is the path of entry name of frame j, for messages: at most the
// first and last few components of a deep path.
func (w *treeWalk) pathOf(j int, name string) string {
	parts := make([]string, 0, j+1)
	for _, f := range w.frames[1 : j+1] {
		parts = append(parts, f.name)
	}
	parts = append(parts, name)
	if len(parts) > 8 {
		parts = append(append(parts[:3:3], fmt.Sprintf("…%d levels…", len(parts)-6)), parts[len(parts)-3:]...)
	}
	return w.path + "/" + strings.Join(parts, "/")
}

// openDirAt opens the directory name beneath dirfd without following a
// link.
func openDirAt(dirfd int, name string) (int, error) {
	return unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

// removeTree removes dir and everything below it, as os.RemoveAll does,
// with a bounded number of open descriptors whatever the depth
// (os.RemoveAll holds one per level, so a deep enough chain a container
// built makes it fail, and starves the agent meanwhile): a directory
// deeper than maxOpenDirs is first moved up into dir, under a name no
// entry has, and removed from there. Links are removed, never followed.
func removeTree(dir string) error {
	root, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
		return ignoreNotExist(unix.Unlink(dir), dir)
	}
	if err != nil {
		return &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	moved := 0
	w := &treeWalk{
		path:     dir,
		maxDepth: maxOpenDirs,
		tooDeep: func(dirfd int, name string, root int) (string, error) {
			for {
				moved++
				up := fmt.Sprintf(".tug-remove-%d", moved)
				err := unix.Renameat2(dirfd, name, root, up, unix.RENAME_NOREPLACE)
				if !errors.Is(err, unix.EEXIST) {
					return up, err
				}
			}
		},
		entry: func(dirfd int, name, path string, _ *unix.Stat_t) error {
			return ignoreNotExist(unix.Unlinkat(dirfd, name, 0), path)
		},
		leave: func(dirfd int, name, path string) error {
			return ignoreNotExist(unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR), path)
		},
	}
	err = w.run(root)
	unix.Close(root)
	if err != nil {
		return err
	}
	return ignoreNotExist(unix.Rmdir(dir), filepath.Clean(dir))
}

func ignoreNotExist(err error, path string) error {
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return &fs.PathError{Op: "remove", Path: path, Err: err}
}
