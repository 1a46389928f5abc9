package volume

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"tug/internal/pod"
)

// maxTerminationMessage is the kubelet's limit on a termination message.
const maxTerminationMessage = 4096

// terminationPath is the host file bound at a container's
// terminationMessagePath: <root-dir>/pods/<uid>/termination/<id>.
func (mgr *Manager) terminationPath(uid, id string) string {
	return filepath.Join(mgr.podDir(uid), "termination", id)
}

// TerminationMount creates the empty file a container writes its
// termination message to and returns its bind mount at the container's
// terminationMessagePath, or nil when the manifest sets none (tug mounts
// nothing at /dev/termination-log by default: see docs/decisions.md). The
// file is writable by any user, as the kubelet makes it, since the
// container may run as any uid.
func (mgr *Manager) TerminationMount(p *pod.Pod, c *pod.Container, id, logDir string) (*specs.Mount, error) {
	path := mgr.terminationPath(p.Metadata.UID, id)
	if c.TerminationMessagePolicy == "FallbackToLogsOnError" {
		// The marker holds the log file whose tail is the message of a
		// failed container that wrote none.
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("termination message file of container %s: %w", c.Name, err)
		}
		if err := os.WriteFile(path+fallbackSuffix, []byte(logDir+"\x00"+c.Name), 0o600); err != nil {
			return nil, fmt.Errorf("termination message file of container %s: %w", c.Name, err)
		}
	}
	if c.TerminationMessagePath == "" {
		return nil, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("termination message file of container %s: %w", c.Name, err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|syscall.O_NOFOLLOW, 0o666)
	if err != nil {
		return nil, fmt.Errorf("termination message file of container %s: %w", c.Name, err)
	}
	defer f.Close()
	if err := f.Chmod(0o666); err != nil {
		return nil, fmt.Errorf("termination message file of container %s: %w", c.Name, err)
	}
	m := BindMount(path, c.TerminationMessagePath, false)
	return &m, nil
}

// fallbackSuffix names the marker of a container whose
// terminationMessagePolicy is FallbackToLogsOnError.
const fallbackSuffix = ".fallback"

// TerminationMessage returns the termination message of exited container
// rc: what it wrote to its termination message file (at most
// maxTerminationMessage bytes). Under FallbackToLogsOnError, when it wrote
// nothing and failed, it returns instead the log file whose tail is its
// message (TerminationMount's logDir, the container, its attempt).
func (mgr *Manager) TerminationMessage(rc *pod.RuntimeContainer) (msg, fallbackLog string) {
	if CheckName("pod uid", rc.PodUID) != nil || CheckName("container id", rc.ID) != nil {
		return "", ""
	}
	path := mgr.terminationPath(rc.PodUID, rc.ID)
	msg = readLimited(path, maxTerminationMessage)
	if msg != "" || rc.ExitCode == 0 {
		return msg, ""
	}
	marker := readLimited(path+fallbackSuffix, 4096)
	dir, name, ok := strings.Cut(marker, "\x00")
	if !ok {
		return "", ""
	}
	return "", filepath.Join(dir, name, strconv.Itoa(rc.Attempt)+".log")
}

// readLimited reads at most limit bytes of a regular file, not following
// a symlink ("" on any error).
func readLimited(path string, limit int64) string {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, limit))
	return string(b)
}
