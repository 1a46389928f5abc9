//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// mountInfo is one line of /proc/self/mountinfo.
type mountInfo struct {
	point  string
	fstype string
	source string
}

// mountsUnder returns the mounts of the test's mount namespace at or below
// dir (github.com/moby/sys/mountinfo parses them).
func mountsUnder(dir string) ([]mountInfo, error) {
	ms, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		return nil, err
	}
	out := make([]mountInfo, 0, len(ms))
	for _, m := range ms {
		out = append(out, mountInfo{point: m.Mountpoint, fstype: m.FSType, source: m.Source})
	}
	return out, nil
}

// procNS returns the namespace of kind ("net", "uts", ...) that process pid
// is in, as the kernel names it ("net:[4026531840]").
func procNS(pid uint32, kind string) (string, error) {
	return os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, kind))
}

// hostNS returns the test process's namespace of kind.
func hostNS(kind string) (string, error) { return os.Readlink("/proc/self/ns/" + kind) }

// pinnedNS returns the name of the namespace of kind pinned (bind-mounted)
// at path, in procNS's form.
func pinnedNS(path, kind string) (string, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s:[%d]", kind, st.Ino), nil
}

// criLine is one line of a container log in the CRI format:
// "<RFC3339Nano> <stdout|stderr> <F|P> <text>".
type criLine struct {
	Time   time.Time
	Stream string
	Tag    string
	Text   string
}

var criRe = regexp.MustCompile(`^(\S+) (stdout|stderr) (F|P) (.*)$`)

// parseCRI parses a whole log file; any line not in the CRI format is an
// error.
func parseCRI(data string) ([]criLine, error) {
	var out []criLine
	for line := range strings.Lines(data) {
		if !strings.HasSuffix(line, "\n") {
			break // being written
		}
		m := criRe.FindStringSubmatch(strings.TrimSuffix(line, "\n"))
		if m == nil {
			return nil, fmt.Errorf("not a CRI log line: %q", line)
		}
		ts, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			return nil, fmt.Errorf("CRI log line %q: %w", line, err)
		}
		out = append(out, criLine{Time: ts, Stream: m[2], Tag: m[3], Text: m[4]})
	}
	return out, nil
}

// readLog reads the log of attempt attempt of a container, in the one pod
// log directory that podDirGlob matches.
func readLog(podDirGlob, container string, attempt int) (string, error) {
	dirs, err := filepath.Glob(podDirGlob)
	if err != nil {
		return "", err
	}
	if len(dirs) != 1 {
		return "", fmt.Errorf("%d pod log directories match %s: %v", len(dirs), podDirGlob, dirs)
	}
	data, err := os.ReadFile(filepath.Join(dirs[0], container, fmt.Sprintf("%d.log", attempt)))
	return string(data), err
}

// podLogGlob matches the log directory of the pod named name in the
// manifest: <logs>/<namespace>_<pod>_<uid>.
func (tg *tug) podLogGlob(name string) string {
	return filepath.Join(tg.logsDir, fmt.Sprintf("default_%s_%s", staticName(name), tg.uid(name)))
}

// logLines returns the parsed log of a container attempt.
func (tg *tug) logLines(podName, container string, attempt int) ([]criLine, error) {
	data, err := readLog(tg.podLogGlob(podName), container, attempt)
	if err != nil {
		return nil, err
	}
	return parseCRI(data)
}

// waitLog waits until the log of a container attempt holds a full line
// (stdout or stderr) for each of want, and returns the whole parsed log.
func (tg *tug) waitLog(timeout time.Duration, podName, container string, attempt int, want ...string) []criLine {
	tg.t.Helper()
	var lines []criLine
	tg.waitFor(timeout, fmt.Sprintf("log of %s/%s attempt %d to show %q", podName, container, attempt, want), func() (bool, error) {
		var err error
		if lines, err = tg.logLines(podName, container, attempt); err != nil {
			return false, err
		}
		for _, w := range want {
			if indexLine(lines, "stdout", w) < 0 && indexLine(lines, "stderr", w) < 0 {
				return false, fmt.Errorf("log so far: %q; raw files: %s", lines, tg.rawLogFiles(podName, container))
			}
		}
		return true, nil
	})
	return lines
}

// rawLogFiles lists the file driver's raw files of a container, with
// their sizes, for a failure message.
func (tg *tug) rawLogFiles(podName, container string) string {
	dir := filepath.Join(tg.rootDir, "pods", tg.uid(podName), "logs", container)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, e := range entries {
		if fi, err := e.Info(); err == nil {
			fmt.Fprintf(&b, "%s (%d bytes) ", e.Name(), fi.Size())
		}
	}
	return b.String()
}

// indexLine returns the index of the first full line of stream with text,
// or -1.
func indexLine(lines []criLine, stream, text string) int {
	for i, l := range lines {
		if l.Stream == stream && l.Tag == "F" && l.Text == text {
			return i
		}
	}
	return -1
}

// idle is a shell script that waits until it is stopped and exits at once on
// SIGTERM (as PID 1 of its PID namespace, sh has no default SIGTERM action,
// so without the trap every stop would wait out the grace period).
const idle = `trap 'exit 0' TERM; sleep 3600 & wait`
