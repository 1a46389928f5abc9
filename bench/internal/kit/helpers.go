package kit

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Helpers returns the pids of the shims serving namespace on the
// containerd at sock, and of t's log drivers ("tug logger") writing under
// t.LogsDir, as /proc lists them now.
func (t *Tug) Helpers(sock, namespace string) (shims, loggers []int, err error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, nil, err
	}
	tugExe, _ := filepath.EvalSymlinks(t.Bin)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || len(raw) == 0 {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		switch {
		case IsShim(filepath.Base(exe), args, sock, namespace):
			shims = append(shims, pid)
		case exe == tugExe && len(args) > 2 && args[1] == "logger" && strings.Contains(args[2], url.QueryEscape(t.LogsDir)):
			loggers = append(loggers, pid)
		}
	}
	return shims, loggers, nil
}

// IsShim reports whether a process, exe the base name of its executable
// and args its command line, is a containerd shim of the containerd at
// sock serving namespace.
func IsShim(exe string, args []string, sock, namespace string) bool {
	return strings.HasPrefix(exe, "containerd-shim") && slices.Contains(args, sock) && ArgAfter(args, "-namespace") == namespace
}

// ArgAfter returns the argument that follows flag in args, or "".
func ArgAfter(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}
