package qos

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/moby/sys/mountinfo"
)

// v1Controllers are the cgroup v1 controllers a mount's super options may
// name (besides "name=..." for a named hierarchy).
var v1Controllers = map[string]bool{
	"cpu": true, "cpuacct": true, "cpuset": true, "memory": true, "devices": true,
	"freezer": true, "net_cls": true, "net_prio": true, "blkio": true,
	"perf_event": true, "hugetlb": true, "pids": true, "rdma": true, "misc": true,
}

// layout is what New found at Config.Mount.
type layout struct {
	version int
	// v2: the cgroup2 mount point; "" on v1.
	unified string
	// v1: controller ("cpu", "memory", ...) to its hierarchy's mount point.
	v1 map[string]string
	// all: the mount point of every hierarchy below Config.Mount (on
	// hybrid hosts the cgroup2 at <mount>/unified and the name=systemd
	// hierarchy included), in mountinfo order, without duplicates.
	all []string
}

// detect finds the cgroup layout at mnt: a cgroup2 mount at mnt itself is
// v2; otherwise every cgroup (v1) or cgroup2 mount directly below mnt is a
// hierarchy of a v1 or hybrid host.
// mounts are the entries of /proc/self/mountinfo (github.com/moby/sys/mountinfo
// parses them, octal escapes and all).
func detect(mnt string, mounts []*mountinfo.Info) (layout, error) {
	mnt = filepath.Clean(mnt)
	var at string // fstype of the last mount at mnt
	l := layout{v1: map[string]string{}}
	seen := map[string]bool{}
	for _, m := range mounts {
		point := filepath.Clean(m.Mountpoint)
		if point == mnt {
			at = m.FSType
			continue
		}
		if filepath.Dir(point) != mnt || (m.FSType != "cgroup" && m.FSType != "cgroup2") {
			continue
		}
		if !seen[point] {
			seen[point] = true
			l.all = append(l.all, point)
		}
		if m.FSType == "cgroup" {
			for o := range strings.SplitSeq(m.VFSOptions, ",") {
				if v1Controllers[o] {
					l.v1[o] = point
				}
			}
		}
	}
	switch {
	case at == "cgroup2":
		return layout{version: 2, unified: mnt, all: []string{mnt}}, nil
	case len(l.v1) > 0:
		l.version = 1
		return l, nil
	}
	return layout{}, fmt.Errorf("%w at %s", ErrNoCgroups, mnt)
}

// host is what tug needs to know about the machine.
type host struct {
	milliCPU int64 // capacity: online CPUs * 1000
	memory   int64 // capacity: MemTotal in bytes
	pageSize int64
}

// readHost reads the node's capacity the way cadvisor reports it to the
// kubelet: the online CPUs and MemTotal.
func readHost() (host, error) {
	h := host{pageSize: int64(os.Getpagesize())}
	meminfo, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return h, fmt.Errorf("read node memory: %w", err)
	}
	h.memory, err = memTotal(meminfo)
	if err != nil {
		return h, err
	}
	cpus := runtime.NumCPU()
	if online, err := os.ReadFile("/sys/devices/system/cpu/online"); err == nil {
		if n, err := countCPUList(strings.TrimSpace(string(online))); err == nil && n > 0 {
			cpus = n
		}
	}
	h.milliCPU = int64(cpus) * 1000
	return h, nil
}

// memTotal returns MemTotal of /proc/meminfo in bytes.
func memTotal(meminfo []byte) (int64, error) {
	for line := range strings.Lines(string(meminfo)) {
		rest, ok := strings.CutPrefix(line, "MemTotal:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			break
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse MemTotal %q: %w", rest, err)
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("no MemTotal in /proc/meminfo")
}

// countCPUList counts the CPUs of a kernel cpu list ("0-3,8,10-11").
func countCPUList(s string) (int, error) {
	n := 0
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0, fmt.Errorf("cpu list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return 0, fmt.Errorf("cpu list %q: %w", s, err)
			}
		}
		if b < a {
			return 0, fmt.Errorf("cpu list %q: bad range", s)
		}
		n += b - a + 1
	}
	return n, nil
}
