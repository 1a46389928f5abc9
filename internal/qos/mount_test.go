package qos

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"
)

// hybridMountInfo is this project's test host (Debian 12, hybrid cgroups).
const hybridMountInfo = `25 30 0:23 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`

// comountedMountInfo is a systemd hybrid host: cpu and cpuacct comounted.
const comountedMountInfo = `24 22 0:22 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:4 - tmpfs tmpfs ro,mode=755
25 24 0:23 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:5 - cgroup2 cgroup2 rw,nsdelegate
26 24 0:24 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:6 - cgroup cgroup rw,xattr,name=systemd
30 24 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:11 - cgroup cgroup rw,cpu,cpuacct
31 24 0:29 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:12 - cgroup cgroup rw,memory
`

// unifiedMountInfo is a cgroup v2 host.
const unifiedMountInfo = `24 22 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`

func TestDetect(t *testing.T) {
	tests := []struct {
		name    string
		info    string
		version int
		v1      map[string]string
		all     []string
		err     error
	}{
		{
			name: "hybrid", info: hybridMountInfo, version: 1,
			v1: map[string]string{
				"cpu": "/sys/fs/cgroup/cpu", "cpuacct": "/sys/fs/cgroup/cpuacct", "cpuset": "/sys/fs/cgroup/cpuset",
				"memory": "/sys/fs/cgroup/memory", "pids": "/sys/fs/cgroup/pids",
			},
			all: []string{"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup/cpuset", "/sys/fs/cgroup/memory",
				"/sys/fs/cgroup/pids", "/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified"},
		},
		{
			name: "comounted cpu,cpuacct", info: comountedMountInfo, version: 1,
			v1:  map[string]string{"cpu": "/sys/fs/cgroup/cpu,cpuacct", "cpuacct": "/sys/fs/cgroup/cpu,cpuacct", "memory": "/sys/fs/cgroup/memory"},
			all: []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup/systemd", "/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/memory"},
		},
		{name: "unified", info: unifiedMountInfo, version: 2, all: []string{"/sys/fs/cgroup"}},
		{name: "nothing", info: "25 30 0:23 / /sys rw - sysfs sysfs rw\n", err: ErrNoCgroups},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mounts, err := mountinfo.GetMountsFromReader(strings.NewReader(tt.info), nil)
			if err != nil {
				t.Fatal(err)
			}
			l, err := detect("/sys/fs/cgroup/", mounts)
			if !errors.Is(err, tt.err) {
				t.Fatalf("detect: %v, want %v", err, tt.err)
			}
			if err != nil {
				return
			}
			if l.version != tt.version || !slices.Equal(l.all, tt.all) {
				t.Errorf("detect = version %d, all %q; want %d, %q", l.version, l.all, tt.version, tt.all)
			}
			for c, want := range tt.v1 {
				if l.v1[c] != want {
					t.Errorf("controller %s at %q, want %q", c, l.v1[c], want)
				}
			}
		})
	}
}

// An escaped mount point (\040 for a space) is a hierarchy like any other.
func TestDetectEscapedPoint(t *testing.T) {
	mounts, err := mountinfo.GetMountsFromReader(strings.NewReader(
		`40 31 0:37 / /tmp/a\040b/memory rw - cgroup cgroup rw,memory`+"\n"+
			`41 31 0:38 / /tmp/a\040b/cpu rw - cgroup cgroup rw,cpu`+"\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := detect("/tmp/a b", mounts)
	if err != nil || l.v1["memory"] != "/tmp/a b/memory" {
		t.Errorf("detect = %+v, %v", l, err)
	}
}

func TestHostParsing(t *testing.T) {
	mem, err := memTotal([]byte("MemTotal:       24684092 kB\nMemFree: 1 kB\n"))
	if err != nil || mem != 24684092*1024 {
		t.Errorf("memTotal = %d, %v", mem, err)
	}
	tests := []struct {
		list string
		want int
	}{{"0", 1}, {"0-1", 2}, {"0-3,8,10-11", 7}}
	for _, tt := range tests {
		if n, err := countCPUList(tt.list); err != nil || n != tt.want {
			t.Errorf("countCPUList(%q) = %d, %v; want %d", tt.list, n, err, tt.want)
		}
	}
	if _, err := countCPUList("3-1"); err == nil {
		t.Error("bad range accepted")
	}
}
