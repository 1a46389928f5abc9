//go:build e2e

package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// cgroupMount is where the host's cgroup hierarchies are mounted.
const cgroupMount = "/sys/fs/cgroup"

// cgroupRoot is tug's --cgroup-root in this test: named after the test's
// containerd namespace, so no two tugs share one.
func (tg *tug) cgroupRoot() string { return "tug-" + tg.ns }

// cgroupV2 reports whether the host has the unified (v2) hierarchy only.
func cgroupV2() bool {
	var st unix.Statfs_t
	return unix.Statfs(cgroupMount, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC
}

// hierarchies returns the directories where a cgroup path may exist: the
// mount itself on v2; every hierarchy below it on v1 (cpu,cpuacct,
// memory, ..., unified, systemd), symlinks left out.
func hierarchies() ([]string, error) {
	if cgroupV2() {
		return []string{cgroupMount}, nil
	}
	entries, err := os.ReadDir(cgroupMount)
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, filepath.Join(cgroupMount, e.Name()))
		}
	}
	return dirs, nil
}

// cgroupPaths returns every existing directory of the cgroup at rel (a
// path from a hierarchy's root) in any hierarchy.
func cgroupPaths(rel string) ([]string, error) {
	hs, err := hierarchies()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, h := range hs {
		p := filepath.Join(h, rel)
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			out = append(out, p)
		}
	}
	return out, nil
}

// removeCgroupTree removes the cgroup rel and everything below it from
// every hierarchy, deepest first. A cgroup with processes cannot go: that
// is an error.
func removeCgroupTree(rel string) error {
	roots, err := cgroupPaths(rel)
	if err != nil {
		return err
	}
	var errs []error
	for _, root := range roots {
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		slices.SortFunc(dirs, func(a, b string) int { return len(b) - len(a) })
		for _, d := range dirs {
			if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// taskCgroup returns the directory of process pid's cgroup in the hierarchy
// that has controller (v1), or in the unified hierarchy (v2).
func taskCgroup(pid uint32, controller string) (string, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", err
	}
	defer f.Close()
	v2 := cgroupV2()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-ID:controller-list:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if v2 && parts[0] == "0" {
			return filepath.Join(cgroupMount, parts[2]), nil
		}
		if !v2 && slices.Contains(strings.Split(parts[1], ","), controller) {
			return filepath.Join(cgroupMount, controller, parts[2]), nil
		}
	}
	return "", fmt.Errorf("process %d has no %s cgroup", pid, controller)
}

// readCgroupFile returns the trimmed content of file in cgroup dir.
func readCgroupFile(dir, file string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, file))
	return strings.TrimSpace(string(b)), err
}

// cpuUsage returns the CPU time the cgroup of process pid has used, in
// microseconds: cpu.stat usage_usec on v2, cpuacct.usage (ns) on v1.
func cpuUsage(pid uint32) (int64, error) {
	if cgroupV2() {
		dir, err := taskCgroup(pid, "")
		if err != nil {
			return 0, err
		}
		stat, err := readCgroupFile(dir, "cpu.stat")
		if err != nil {
			return 0, err
		}
		for _, line := range strings.Split(stat, "\n") {
			if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
				return strconv.ParseInt(v, 10, 64)
			}
		}
		return 0, fmt.Errorf("no usage_usec in %s/cpu.stat", dir)
	}
	dir, err := taskCgroup(pid, "cpuacct")
	if err != nil {
		return 0, err
	}
	v, err := readCgroupFile(dir, "cpuacct.usage")
	if err != nil {
		return 0, err
	}
	ns, err := strconv.ParseInt(v, 10, 64)
	return ns / 1000, err
}
