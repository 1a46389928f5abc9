package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// counts is what one path (or pattern of paths) saw in the window.
type counts struct {
	writes, bytes, fsyncs, created, renames, removes int64
}

func (c *counts) add(o counts) {
	c.writes += o.writes
	c.bytes += o.bytes
	c.fsyncs += o.fsyncs
	c.created += o.created
	c.renames += o.renames
	c.removes += o.removes
}

func (c counts) zero() bool { return c == counts{} }

// summary is a tug's traced file system calls: by pattern of path
// relative to its work directory, and the total of those that reach
// storage on a device.
type summary struct {
	byKey   map[string]*counts
	storage counts
}

// keys returns the patterns, most bytes first.
func (s summary) keys() []string {
	var ks []string
	for k, c := range s.byKey {
		if !c.zero() {
			ks = append(ks, k)
		}
	}
	sort.Slice(ks, func(i, j int) bool {
		a, b := s.byKey[ks[i]], s.byKey[ks[j]]
		if a.bytes != b.bytes {
			return a.bytes > b.bytes
		}
		if a.fsyncs != b.fsyncs {
			return a.fsyncs > b.fsyncs
		}
		return ks[i] < ks[j]
	})
	return ks
}

// Where a path is, for a device: tug's root directory and the pod logs
// are on its storage; the run directory is /run (tmpfs) and tug's log is
// its stderr (journald's to write); other paths (/sys/fs/cgroup, /proc,
// /dev) are not storage.
func where(key string) string {
	switch {
	case strings.HasPrefix(key, "root/"), strings.HasPrefix(key, "logs/"), strings.HasPrefix(key, "manifests/"), strings.HasPrefix(key, "images/"):
		return "storage"
	case strings.HasPrefix(key, "run/"):
		return "tmpfs (/run) on a device"
	case key == "tug.log":
		return "stderr (journald) on a device"
	}
	return "not storage"
}

func parseTraceFile(path, dir string) (summary, error) {
	f, err := os.Open(path)
	if err != nil {
		return summary{}, err
	}
	defer f.Close()
	return parseTrace(f, dir)
}

// parseTrace reads the output of strace -f -y (one line per call, the pid
// first, a call other threads interrupted split into its "<unfinished
// ...>" and "<... resumed>" halves) and counts the successful calls by
// pattern of path under dir (keyOf). Descriptors that are not files
// (sockets, pipes, eventfds) are left out.
func parseTrace(r io.Reader, dir string) (summary, error) {
	s := summary{byKey: map[string]*counts{}}
	pending := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		pid, rest, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if !ok {
			continue
		}
		rest = strings.TrimSpace(rest)
		if head, ok := strings.CutSuffix(rest, " <unfinished ...>"); ok {
			pending[pid] = head
			continue
		}
		if strings.HasPrefix(rest, "<... ") {
			_, tail, ok := strings.Cut(rest, " resumed>")
			head, had := pending[pid]
			if !ok || !had {
				continue
			}
			delete(pending, pid)
			rest = head + tail
		}
		path, c, ok := parseCall(rest)
		if !ok {
			continue
		}
		key, ok := keyOf(path, dir)
		if !ok {
			continue
		}
		if s.byKey[key] == nil {
			s.byKey[key] = &counts{}
		}
		s.byKey[key].add(c)
		if where(key) == "storage" {
			s.storage.add(c)
		}
	}
	return s, sc.Err()
}

var quoted = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`)

// parseCall reads one complete call: the path it acts on and what it
// counts; ok is false for a failed call or one that is not counted.
func parseCall(line string) (path string, c counts, ok bool) {
	open := strings.IndexByte(line, '(')
	eq := strings.LastIndex(line, ") = ")
	if open < 0 || eq < open {
		return "", counts{}, false
	}
	call, args, ret := line[:open], line[open+1:eq], line[eq+len(") = "):]
	n, err := strconv.ParseInt(leadingInt(ret), 10, 64)
	if err != nil || n < 0 {
		return "", counts{}, false
	}
	switch call {
	case "write", "pwrite64", "writev", "pwritev", "pwritev2":
		c = counts{writes: 1, bytes: n}
		path = fdPath(args)
	case "fsync", "fdatasync", "sync_file_range", "syncfs":
		c = counts{fsyncs: 1}
		path = fdPath(args)
	case "ftruncate":
		c = counts{writes: 1}
		path = fdPath(args)
	case "openat", "open", "creat":
		if call != "creat" && !strings.Contains(args, "O_CREAT") {
			return "", counts{}, false
		}
		c = counts{created: 1}
		path = fdPath(ret)
	case "rename", "renameat", "renameat2":
		q := quoted.FindAllStringSubmatch(args, -1)
		if len(q) < 2 {
			return "", counts{}, false
		}
		c = counts{renames: 1}
		path = q[1][1]
	case "unlink", "unlinkat":
		q := quoted.FindStringSubmatch(args)
		if q == nil {
			return "", counts{}, false
		}
		c = counts{removes: 1}
		path = q[1]
	case "mkdir", "mkdirat", "truncate":
		q := quoted.FindStringSubmatch(args)
		if q == nil {
			return "", counts{}, false
		}
		c = counts{created: 1}
		if call == "truncate" {
			c = counts{writes: 1}
		}
		path = q[1]
	default:
		return "", counts{}, false
	}
	return path, c, path != ""
}

func leadingInt(s string) string {
	i := 0
	if strings.HasPrefix(s, "-") {
		i = 1
	}
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 || s[:i] == "-" {
		return ""
	}
	return s[:i]
}

// fdPath reads the path strace -y prints after a descriptor: 7</a/b>.
func fdPath(s string) string {
	lt := strings.IndexByte(s, '<')
	if lt < 0 {
		return ""
	}
	rest := s[lt+1:]
	if i := strings.Index(rest, ">, "); i >= 0 {
		return rest[:i]
	}
	return strings.TrimSuffix(rest, ">")
}

var (
	uid    = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	hex64  = regexp.MustCompile(`[0-9a-f]{64}`)
	digits = regexp.MustCompile(`[0-9]+`)
)

// keyOf turns a path into the pattern it is counted under: relative to
// dir, pod UIDs as <uid>, digests as <hex>, numbers as #. Paths that are
// not absolute (socket:[…], pipe:[…], anon_inode:…) are not files.
func keyOf(path, dir string) (string, bool) {
	if !strings.HasPrefix(path, "/") {
		return "", false
	}
	if rel, ok := strings.CutPrefix(path, dir+"/"); ok {
		path = rel
	}
	path = uid.ReplaceAllString(path, "<uid>")
	path = hex64.ReplaceAllString(path, "<hex>")
	return digits.ReplaceAllString(path, "#"), true
}

// perDay formats n events in a window of seconds as a daily rate.
func perDay(n int64, seconds float64) string {
	return fmt.Sprintf("%.0f", float64(n)*86400/seconds)
}

// bytesPerDay formats n bytes in a window of seconds as a daily amount.
func bytesPerDay(n int64, seconds float64) string {
	return human(float64(n) * 86400 / seconds)
}

func human(b float64) string {
	switch {
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}
