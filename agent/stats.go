package main

import (
	"path"
	"time"

	"tug/internal/api"
	"tug/internal/cgstats"
	"tug/internal/pod"
)

// runningContainers lists tug's containers as last seen (pleg.PLEG).
type runningContainers interface {
	All() []pod.RuntimeContainer
}

// containerCgroups reads one container cgroup's usage (cgstats.Reader).
type containerCgroups interface {
	Read(group string) (cgstats.Stats, error)
}

// podStats fills api.StatsSource: the usage of each running container, read
// from its cgroup (cgstats.Reader) when asked. A container whose cgroup
// cannot be read is left out (/metrics logs it).
type podStats struct {
	containers runningContainers
	cgroups    containerCgroups
}

func (s podStats) PodStats() []api.PodStats {
	var out []api.PodStats
	index := map[string]int{} // pod UID -> its entry in out
	for _, rc := range s.containers.All() {
		if rc.State != pod.RunRunning || rc.CgroupParent == "" {
			continue
		}
		st, err := s.cgroups.Read(path.Join(rc.CgroupParent, rc.ID))
		if err != nil {
			continue
		}
		now := time.Now()
		i, ok := index[rc.PodUID]
		if !ok {
			i = len(out)
			index[rc.PodUID] = i
			out = append(out, api.PodStats{PodRef: api.PodReference{Name: rc.PodName, Namespace: rc.Namespace, UID: rc.PodUID}})
		}
		out[i].Containers = append(out[i].Containers, api.ContainerStats{
			Name:      rc.Name,
			StartTime: rc.StartedAt,
			CPU:       api.CPUStats{Time: now, UsageCoreNanoSeconds: uint64(st.CPUSeconds * 1e9)},
			Memory:    api.MemoryStats{Time: now, UsageBytes: st.Usage, WorkingSetBytes: st.WorkingSet, RSSBytes: st.RSS},
		})
	}
	return out
}
