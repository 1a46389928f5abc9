package eviction

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// NodeObserver reads the node's signals from the kernel:
// memory.available is MemAvailable of /proc/meminfo (of MemTotal),
// nodefs.* and imagefs.* are statfs of NodeFS and ImageFS (bytes available
// to unprivileged users, free inodes), pid.available is the lower of
// kernel.pid_max and kernel.threads-max minus the tasks /proc/loadavg
// counts. Proc is the proc mount ("" means /proc).
type NodeObserver struct {
	NodeFS  string // tug's root dir (pods, emptyDirs) and log dir filesystem
	ImageFS string // containerd's root ("" means the same as NodeFS)
	Proc    string
}

// Observe reads every signal it can; it fails only when none could be read.
func (n NodeObserver) Observe(context.Context) (map[Signal]Observation, error) {
	proc := cmpOr(n.Proc, "/proc")
	out := map[Signal]Observation{}
	var errs []error
	if o, err := memory(filepath.Join(proc, "meminfo")); err != nil {
		errs = append(errs, err)
	} else {
		out[SignalMemoryAvailable] = o
	}
	fs := func(path string, bytesSig, inodesSig Signal) {
		var st syscall.Statfs_t
		if err := syscall.Statfs(path, &st); err != nil {
			errs = append(errs, fmt.Errorf("statfs %s: %w", path, err))
			return
		}
		out[bytesSig] = Observation{Available: int64(st.Bavail) * st.Bsize, Capacity: int64(st.Blocks) * st.Bsize}
		if st.Files > 0 { // some filesystems (btrfs) have no inode limit
			out[inodesSig] = Observation{Available: int64(st.Ffree), Capacity: int64(st.Files)}
		}
	}
	if n.NodeFS != "" {
		fs(n.NodeFS, SignalNodeFsAvailable, SignalNodeFsInodesFree)
	}
	if img := cmpOr(n.ImageFS, n.NodeFS); img != "" {
		fs(img, SignalImageFsAvailable, SignalImageFsInodesFree)
	}
	if o, err := pids(proc); err != nil {
		errs = append(errs, err)
	} else {
		out[SignalPIDAvailable] = o
	}
	if len(out) == 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// memory reads MemTotal and MemAvailable (kB) from a meminfo file.
func memory(path string) (Observation, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Observation{}, fmt.Errorf("read meminfo: %w", err)
	}
	var o Observation
	var haveTotal, haveAvail bool
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		switch name {
		case "MemTotal":
			o.Capacity, haveTotal = v*1024, true
		case "MemAvailable":
			o.Available, haveAvail = v*1024, true
		}
	}
	if !haveTotal || !haveAvail {
		return Observation{}, fmt.Errorf("read meminfo: %w: no MemTotal or MemAvailable", ErrUnreadable)
	}
	return o, nil
}

// pids reads the task limit and count under proc.
func pids(proc string) (Observation, error) {
	limit := int64(-1)
	for _, f := range []string{"sys/kernel/pid_max", "sys/kernel/threads-max"} {
		data, err := os.ReadFile(filepath.Join(proc, f))
		if err != nil {
			return Observation{}, fmt.Errorf("read pid limit: %w", err)
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if err != nil {
			return Observation{}, fmt.Errorf("parse %s: %w", f, err)
		}
		if limit < 0 || v < limit {
			limit = v
		}
	}
	data, err := os.ReadFile(filepath.Join(proc, "loadavg"))
	if err != nil {
		return Observation{}, fmt.Errorf("read loadavg: %w", err)
	}
	f := strings.Fields(string(data))
	if len(f) < 4 {
		return Observation{}, fmt.Errorf("parse loadavg %q: %w", data, ErrUnreadable)
	}
	_, total, _ := strings.Cut(f[3], "/")
	n, err := strconv.ParseInt(total, 10, 64)
	if err != nil {
		return Observation{}, fmt.Errorf("parse loadavg %q: %w", data, err)
	}
	return Observation{Available: limit - n, Capacity: limit}, nil
}
