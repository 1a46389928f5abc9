package qos

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"tug/internal/pod"
)

// PodUsage returns the pod cgroup's memory working set (usage minus
// inactive file pages, the kubelet's and cAdvisor's definition) and its
// task count, read from the pod's cgroup on v1 or v2: what the eviction
// manager ranks pods by. pids is 0 when the host has no pids controller.
// Safe for concurrent use.
func (m *Manager) PodUsage(p *pod.Pod) (workingSet, pids int64, err error) {
	dir := m.podDir(Class(p), p.Metadata.UID)
	v2 := m.lay.version == 2
	mem := filepath.Join(m.ctrl["memory"], dir)
	usageFile, inactiveKey := "memory.usage_in_bytes", "total_inactive_file"
	if v2 {
		usageFile, inactiveKey = "memory.current", "inactive_file"
	}
	usage, err := readInt(filepath.Join(mem, usageFile))
	if err != nil {
		return 0, 0, fmt.Errorf("memory usage of pod %s: %w", p.Metadata.UID, err)
	}
	stat, err := os.ReadFile(filepath.Join(mem, "memory.stat"))
	if err != nil {
		return 0, 0, fmt.Errorf("memory stat of pod %s: %w", p.Metadata.UID, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(stat))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		if k == inactiveKey {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				workingSet = max(usage-n, 0)
			}
			break
		}
	}
	if workingSet == 0 {
		workingSet = usage
	}
	if c := m.ctrl["pids"]; c != "" {
		pids, _ = readInt(filepath.Join(c, dir, "pids.current"))
	}
	return workingSet, pids, nil
}

func readInt(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
}

// PidsLimit is what a pod cgroup's pids controller says about its limit.
type PidsLimit struct {
	// Max is the pod cgroup's pids.max; -1 when it is "max".
	Max int64
	// Refused counts the forks and clones refused because the pod was at
	// Max: the "max" counter of pids.events (v1 and v2).
	Refused int64
}

// PodPidsLimit reads the pod cgroup's pids.max and how many times the pod
// hit it. The kernel counts a refused fork in the pids.events of the
// cgroup whose limit was hit (v2 since Linux 6.11), or in that of the
// forking task's own cgroup (v1, and v2 before 6.11): the container's,
// below the pod's. Refused is therefore the larger of the pod cgroup's
// count and the sum of its children's, right on every kernel. A host with
// no pids controller gives ErrMissingController. Safe for concurrent use.
func (m *Manager) PodPidsLimit(p *pod.Pod) (PidsLimit, error) {
	h := m.ctrl["pids"]
	if h == "" {
		return PidsLimit{}, fmt.Errorf("%w: pids", ErrMissingController)
	}
	dir := filepath.Join(h, m.podDir(Class(p), p.Metadata.UID))
	data, err := os.ReadFile(filepath.Join(dir, "pids.max"))
	if err != nil {
		return PidsLimit{}, fmt.Errorf("pids limit of pod %s: %w", p.Metadata.UID, err)
	}
	l := PidsLimit{Max: -1}
	if s := strings.TrimSpace(string(data)); s != "max" {
		if l.Max, err = strconv.ParseInt(s, 10, 64); err != nil {
			return PidsLimit{}, fmt.Errorf("pids limit of pod %s: %w", p.Metadata.UID, err)
		}
	}
	l.Refused, err = pidsMaxEvents(dir)
	if err != nil {
		return PidsLimit{}, fmt.Errorf("pids events of pod %s: %w", p.Metadata.UID, err)
	}
	var children int64
	entries, _ := os.ReadDir(dir) // a container cgroup may go at any time
	for _, e := range entries {
		if e.IsDir() {
			n, _ := pidsMaxEvents(filepath.Join(dir, e.Name()))
			children += n
		}
	}
	l.Refused = max(l.Refused, children)
	return l, nil
}

// pidsMaxEvents returns the "max" counter of dir's pids.events.
func pidsMaxEvents(dir string) (int64, error) {
	data, err := os.ReadFile(filepath.Join(dir, "pids.events"))
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), " "); ok && k == "max" {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, nil
}
