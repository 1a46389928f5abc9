package cgstats

import (
	"fmt"
	"path"
	"slices"

	"github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
)

// unifiedMountpoint is where a cgroup v2 host mounts the hierarchy.
const unifiedMountpoint = "/sys/fs/cgroup"

// Stats is one container cgroup's usage, in cAdvisor's terms.
type Stats struct {
	CPUSeconds float64 // CPU time used since the cgroup was made
	Usage      uint64  // memory charged to the cgroup, page cache included
	WorkingSet uint64  // Usage less inactive file pages (what the kubelet evicts on)
	RSS        uint64  // anonymous memory
	OOMKills   uint64  // processes the OOM killer killed in it
}

// Reader reads cgroup stats on the host's cgroup version. It is safe for
// concurrent use.
type Reader struct {
	unified bool
	v1      cgroup1.Hierarchy // cpuacct and memory only: Stat reads every subsystem it is given
}

// NewReader returns a Reader for the host's cgroup mode (v2 when the
// unified hierarchy is the only one, v1 controllers otherwise).
func NewReader() (*Reader, error) {
	if cgroups.Mode() == cgroups.Unified {
		return &Reader{unified: true}, nil
	}
	all, err := cgroup1.Default()
	if err != nil {
		return nil, fmt.Errorf("find cgroup v1 controllers: %w", err)
	}
	var subs []cgroup1.Subsystem
	for _, s := range all {
		if slices.Contains([]cgroup1.Name{cgroup1.Cpuacct, cgroup1.Memory}, s.Name()) {
			subs = append(subs, s)
		}
	}
	return &Reader{v1: func() ([]cgroup1.Subsystem, error) { return subs, nil }}, nil
}

// Read returns the stats of the cgroup at group, a path from the root of
// the hierarchy ("/tugpods/burstable/pod<uid>/<id>").
func (r *Reader) Read(group string) (Stats, error) {
	group = path.Clean("/" + group)
	if r.unified {
		m, err := cgroup2.Load(group, cgroup2.WithMountpoint(unifiedMountpoint))
		if err != nil {
			return Stats{}, fmt.Errorf("load cgroup %s: %w", group, err)
		}
		st, err := m.Stat()
		if err != nil {
			return Stats{}, fmt.Errorf("read cgroup %s: %w", group, err)
		}
		mem := st.GetMemory()
		return Stats{
			CPUSeconds: float64(st.GetCPU().GetUsageUsec()) / 1e6,
			Usage:      mem.GetUsage(),
			WorkingSet: workingSet(mem.GetUsage(), mem.GetInactiveFile()),
			RSS:        mem.GetAnon(),
			OOMKills:   st.GetMemoryEvents().GetOomKill(),
		}, nil
	}
	cg, err := cgroup1.Load(cgroup1.StaticPath(group), cgroup1.WithHiearchy(r.v1))
	if err != nil {
		return Stats{}, fmt.Errorf("load cgroup %s: %w", group, err)
	}
	st, err := cg.Stat(cgroup1.IgnoreNotExist)
	if err != nil {
		return Stats{}, fmt.Errorf("read cgroup %s: %w", group, err)
	}
	mem := st.GetMemory()
	usage := mem.GetUsage().GetUsage()
	return Stats{
		CPUSeconds: float64(st.GetCPU().GetUsage().GetTotal()) / 1e9,
		Usage:      usage,
		WorkingSet: workingSet(usage, mem.GetTotalInactiveFile()),
		RSS:        mem.GetTotalRSS(),
		OOMKills:   st.GetMemoryOomControl().GetOomKill(),
	}, nil
}

// workingSet is cAdvisor's working set: usage less inactive file pages,
// never below zero.
func workingSet(usage, inactiveFile uint64) uint64 {
	if inactiveFile > usage {
		return 0
	}
	return usage - inactiveFile
}
