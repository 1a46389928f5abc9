package devices

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// settle is how long Run waits after a change for more before it tells:
// udev makes a node, its links and its permissions in a burst, and the
// CDI registry re-reads a changed spec on the same event.
const settle = 200 * time.Millisecond

// Changes delivers a value after the devices present changed (a node the
// globs match appeared or vanished, a CDI spec changed), while Run runs.
// Changes close together are delivered as one; a receiver then asks
// Units, Capacity or Gone again.
func (m *Manager) Changes() <-chan struct{} { return m.changes }

// Run watches, with inotify, the directories of the declared globs
// (/dev for /dev/ttyUSB*) and the CDI spec directories, and reports each
// change on Changes, until ctx ends; it returns nil then. A directory
// that does not exist yet (/dev/serial/by-id before the first serial
// stick) is watched through its nearest existing parent until it
// appears. Nothing is polled.
func (m *Manager) Run(ctx context.Context) error {
	dirs := m.watchDirs()
	if len(dirs) == 0 {
		<-ctx.Done()
		return nil
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch devices: %w", err)
	}
	defer w.Close()
	watched := map[string]bool{}
	m.rewatch(w, dirs, watched)
	if m.watching != nil {
		close(m.watching)
	}
	var timer *time.Timer
	var fire <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if ev.Op == fsnotify.Chmod {
				continue // no unit comes or goes
			}
			m.rewatch(w, dirs, watched)
			if timer == nil {
				timer = time.NewTimer(settle)
				fire = timer.C
			} else {
				timer.Reset(settle)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			if m.cfg.Log != nil {
				m.cfg.Log.Warn("device watch", "err", err)
			}
		case <-fire:
			timer, fire = nil, nil
			if m.cdi != nil {
				m.cdi.Refresh() // errors are logged below
				m.logCDIErrors()
			}
			select {
			case m.changes <- struct{}{}:
			default: // one is pending already
			}
		}
	}
}

// watchDirs returns the directories whose entries make the units: the
// directory part of each glob (up to its first pattern character) and the
// CDI spec directories.
func (m *Manager) watchDirs() []string {
	var dirs []string
	for _, r := range m.cfg.Resources {
		if r.Glob != "" {
			dirs = append(dirs, globDir(r.Glob))
		}
	}
	if m.cdi != nil {
		dirs = append(dirs, m.cfg.CDISpecDirs...)
	}
	slices.Sort(dirs)
	return slices.Compact(dirs)
}

// globDir returns the deepest directory of glob without a pattern
// character: /dev for /dev/ttyUSB*, /dev/serial for /dev/serial/*/x.
func globDir(glob string) string {
	dir := filepath.Dir(glob)
	for strings.ContainsAny(dir, `*?[\`) {
		dir = filepath.Dir(dir)
	}
	return dir
}

// rewatch watches each of dirs, or its nearest existing parent while it
// does not exist; watched holds what is watched and is updated.
func (m *Manager) rewatch(w *fsnotify.Watcher, dirs []string, watched map[string]bool) {
	want := map[string]bool{}
	for _, d := range dirs {
		want[existingDir(d)] = true
	}
	for d := range watched {
		if !want[d] {
			w.Remove(d) // gone with its directory, or its child appeared
			delete(watched, d)
		}
	}
	for d := range want {
		if watched[d] {
			continue
		}
		if err := w.Add(d); err != nil {
			if m.cfg.Log != nil && !errors.Is(err, fs.ErrNotExist) {
				m.cfg.Log.Warn("cannot watch device directory", "path", d, "err", err)
			}
			continue
		}
		watched[d] = true
	}
}

// existingDir returns dir, or its nearest parent that exists.
func existingDir(dir string) string {
	for {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return dir
		}
		dir = parent
	}
}
