package podlogs

import (
	"io"
	"os"
	"strings"
	"syscall"
)

// Limits of a log tail used as a termination message, as the kubelet's.
const (
	tailLines = 80
	tailBytes = 2048
)

// Tail returns the text of the last tailLines lines of a CRI log
// file (timestamp, stream and tag removed), at most its last tailBytes: the message of a
// container that failed under FallbackToLogsOnError, as the kubelet makes it.
func Tail(path string) string {
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
	if len(lines) > tailLines {
		lines = lines[len(lines)-tailLines:]
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
	if len(s) > tailBytes {
		s = s[len(s)-tailBytes:]
	}
	return s
}
