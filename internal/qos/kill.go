package qos

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"tug/internal/pod"
)

// KillPod sends SIGKILL to every process of the pod's cgroup tree at once,
// through the kernel and not the runtime: cgroup.kill on cgroup v2 (Linux
// 5.14 and later), else each process listed in the tree's cgroup.procs of
// the memory hierarchy, read again until none is left (a process forking
// while it is read is killed in the next round). It is what a hard eviction
// does first: under memory pressure containerd itself may be too slow to
// answer, and the memory is what the eviction is for. A pod with no cgroup
// is not an error. Safe for concurrent use.
func (m *Manager) KillPod(p *pod.Pod) error {
	dir := filepath.Join(m.ctrl["memory"], m.podDir(Class(p), p.Metadata.UID))
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if m.lay.version == 2 {
		f, err := os.OpenFile(filepath.Join(dir, "cgroup.kill"), os.O_WRONLY, 0)
		if err == nil {
			_, err = f.WriteString("1")
			f.Close()
			if err != nil {
				return fmt.Errorf("kill pod %s: %w", p.Metadata.UID, err)
			}
			return nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("kill pod %s: %w", p.Metadata.UID, err)
		}
	}
	for range 10 {
		pids, err := treeProcs(dir)
		if err != nil {
			return fmt.Errorf("kill pod %s: %w", p.Metadata.UID, err)
		}
		if len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			if err := unix.Kill(pid, unix.SIGKILL); err != nil && err != unix.ESRCH {
				return fmt.Errorf("kill pod %s: pid %d: %w", p.Metadata.UID, pid, err)
			}
		}
	}
	return fmt.Errorf("kill pod %s: processes still forking after 10 rounds", p.Metadata.UID)
}

// treeProcs lists the pids of cgroup.procs in dir and every cgroup below.
func treeProcs(dir string) ([]int, error) {
	var pids []int
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walked
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(filepath.Join(path, "cgroup.procs"))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	return pids, err
}
