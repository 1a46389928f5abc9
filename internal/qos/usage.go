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
