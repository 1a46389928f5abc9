package volume

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"tug/internal/pod"
)

// ReadEnvFile returns the env file at path in pod p's emptyDir volume
// (env valueFrom.fileKeyRef). The container that wrote it controls the
// volume, so the file is opened as a subPath is: beneath the volume's
// directory, never following a symlink, and only a regular file is read,
// at most pod.MaxEnvFileSize bytes. Nothing is created. A missing file (or
// directory on its way) wraps fs.ErrNotExist.
func (mgr *Manager) ReadEnvFile(p *pod.Pod, volume, path string) ([]byte, error) {
	if err := CheckName("volume name", volume); err != nil {
		return nil, err
	}
	parts, err := checkSubPath(path)
	if err != nil {
		return nil, err
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("env file %q: not a file", path)
	}
	root, err := openRoot(mgr.emptyDirPath(p.Metadata.UID, volume))
	if err != nil {
		return nil, err
	}
	cur := root
	for i, part := range parts {
		next, err := openComponent(cur, part, i < len(parts)-1, false)
		unix.Close(cur)
		switch {
		case errors.Is(err, unix.ENOENT):
			return nil, fmt.Errorf("env file %q: %w", path, fs.ErrNotExist)
		case errors.Is(err, unix.ELOOP):
			return nil, fmt.Errorf("env file %q: a symlink on its path", path)
		case err != nil:
			return nil, fmt.Errorf("env file %q: %w", path, err)
		}
		cur = next
	}
	defer unix.Close(cur)
	mode, err := fdMode(cur)
	if err != nil {
		return nil, fmt.Errorf("env file %q: %w", path, err)
	}
	if !mode.IsRegular() {
		return nil, fmt.Errorf("env file %q: not a regular file", path)
	}
	// Reopen the O_PATH descriptor for reading: /proc/self/fd/N names
	// the object opened, not a path.
	f, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(cur), os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("env file %q: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, pod.MaxEnvFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("env file %q: %w", path, err)
	}
	if len(data) > pod.MaxEnvFileSize {
		return nil, fmt.Errorf("env file %q: more than %d bytes", path, pod.MaxEnvFileSize)
	}
	return data, nil
}
