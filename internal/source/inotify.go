package source

import (
	"encoding/binary"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Watch masks. The directory watch tells complete files (IN_CLOSE_WRITE,
// IN_MOVED_TO) from files still being written (IN_MODIFY); the parent watch
// only notices the directory itself appearing or going.
const (
	dirMask = unix.IN_CREATE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_ATTRIB |
		unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_DELETE |
		unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR
	parentMask = unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_DELETE |
		unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR
)

// event is one inotify event. wd is -1 for IN_Q_OVERFLOW.
type event struct {
	wd   int32
	mask uint32
	name string // entry name inside the watched directory, "" for the directory itself
}

// watcher is an inotify instance. Its fd is non-blocking, so the *os.File
// made from it reads through the runtime poller: Read blocks without holding
// a thread, and Close makes a blocked Read return.
type watcher struct {
	fd int
	f  *os.File
}

func newWatcher() (*watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify init: %w", err)
	}
	return &watcher{fd: fd, f: os.NewFile(uintptr(fd), "inotify")}, nil
}

func (w *watcher) add(path string, mask uint32) (int32, error) {
	wd, err := unix.InotifyAddWatch(w.fd, path, mask)
	if err != nil {
		return -1, fmt.Errorf("inotify watch %s: %w", path, err)
	}
	return int32(wd), nil
}

func (w *watcher) remove(wd int32) { _, _ = unix.InotifyRmWatch(w.fd, uint32(wd)) }

func (w *watcher) close() { _ = w.f.Close() }

// read sends each batch of events on ch until the watcher is closed (it
// then returns an error wrapping os.ErrClosed) or done is closed (nil).
func (w *watcher) read(done <-chan struct{}, ch chan<- []event) error {
	buf := make([]byte, 64<<10) // room for many events of the longest name
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			return fmt.Errorf("read inotify: %w", err)
		}
		select {
		case ch <- parseEvents(buf[:n]):
		case <-done:
			return nil
		}
	}
}

// parseEvents decodes struct inotify_event records.
func parseEvents(b []byte) []event {
	var evs []event
	for len(b) >= unix.SizeofInotifyEvent {
		end := unix.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(b[12:16]))
		if end > len(b) {
			break
		}
		evs = append(evs, event{
			wd:   int32(binary.NativeEndian.Uint32(b[0:4])),
			mask: binary.NativeEndian.Uint32(b[4:8]),
			name: strings.TrimRight(string(b[unix.SizeofInotifyEvent:end]), "\x00"),
		})
		b = b[end:]
	}
	return evs
}
