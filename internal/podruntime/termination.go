package podruntime

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
	"tug/internal/specopts"
)

// maxTerminationMessage is the kubelet's limit on a termination message.
const maxTerminationMessage = 4096

// terminationPath is the host file bound at a container's
// terminationMessagePath: <root-dir>/pods/<uid>/termination/<id>.
func (r *Runtime) terminationPath(uid, id string) string {
	return filepath.Join(r.podDir(uid), "termination", id)
}

// terminationMount creates the empty file a container writes its
// termination message to and returns its bind mount at the container's
// terminationMessagePath, or nil when the manifest sets none (tug mounts
// nothing at /dev/termination-log by default: see docs/decisions.md). The
// file is writable by any user, as the kubelet makes it, since the
// container may run as any uid.
func (r *Runtime) terminationMount(p *pod.Pod, c *pod.Container, id string) (*specs.Mount, error) {
	path := r.terminationPath(p.Metadata.UID, id)
	if c.TerminationMessagePolicy == "FallbackToLogsOnError" {
		// The marker holds the log file whose tail is the message of a
		// failed container that wrote none.
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("termination message file of container %s: %w", c.Name, err)
		}
		if err := os.WriteFile(path+fallbackSuffix, []byte(r.podLogDir(p)+"\x00"+c.Name), 0o600); err != nil {
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
	m := specopts.BindMount(path, c.TerminationMessagePath, false)
	return &m, nil
}

// fallbackSuffix names the marker of a container whose
// terminationMessagePolicy is FallbackToLogsOnError.
const fallbackSuffix = ".fallback"

// Limits of the log tail used as a message, as the kubelet's.
const (
	fallbackLines = 80
	fallbackBytes = 2048
)

// terminationMessage returns the termination message of exited container
// rc: what it wrote to its termination message file (at most
// maxTerminationMessage bytes), or, under FallbackToLogsOnError, when it
// wrote nothing and failed, the tail of its log ("" if none).
func (r *Runtime) terminationMessage(rc *pod.RuntimeContainer) string {
	if checkName("pod uid", rc.PodUID) != nil || checkName("container id", rc.ID) != nil {
		return ""
	}
	path := r.terminationPath(rc.PodUID, rc.ID)
	msg := readLimited(path, maxTerminationMessage)
	if msg != "" || rc.ExitCode == 0 {
		return msg
	}
	marker := readLimited(path+fallbackSuffix, 4096)
	dir, name, ok := strings.Cut(marker, "\x00")
	if !ok {
		return ""
	}
	return logTail(filepath.Join(dir, name, strconv.Itoa(rc.Attempt)+".log"))
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

// logTail returns the text of the last fallbackLines lines of a CRI log
// file (timestamp, stream and tag removed), at most its last fallbackBytes.
func logTail(path string) string {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	const window = 64 << 10
	if st, err := f.Stat(); err == nil && st.Size() > window {
		if _, err := f.Seek(st.Size()-window, io.SeekStart); err != nil {
			return ""
		}
	}
	b, _ := io.ReadAll(io.LimitReader(f, window))
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > fallbackLines {
		lines = lines[len(lines)-fallbackLines:]
	}
	var out strings.Builder
	for _, l := range lines {
		// <time> <stream> <F|P> <text>
		parts := strings.SplitN(l, " ", 4)
		if len(parts) < 4 {
			continue
		}
		out.WriteString(parts[3])
		if parts[2] == "F" {
			out.WriteByte('\n')
		}
	}
	s := out.String()
	if len(s) > fallbackBytes {
		s = s[len(s)-fallbackBytes:]
	}
	return s
}
