package api

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strings"
	"time"
)

// StatsSource reads the resource usage of the running containers from
// their cgroups; the agent implements it with internal/cgstats. It must be
// safe for concurrent use and return a slice the caller may keep.
type StatsSource interface {
	// PodStats returns one entry per pod with a running container, each
	// with its running containers' usage.
	PodStats() []PodStats
}

// StatsSummary is the body of GET /stats/summary: the pods part of the
// kubelet's Summary API (/stats/summary), with the fields tug reads.
type StatsSummary struct {
	Pods []PodStats `json:"pods"`
}

// PodStats is one pod's usage: its running containers'.
type PodStats struct {
	PodRef     PodReference     `json:"podRef"`
	Containers []ContainerStats `json:"containers"`
}

// PodReference names a pod (its static name).
type PodReference struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	UID       string `json:"uid"`
}

// ContainerStats is one running container's usage, read from its cgroup.
type ContainerStats struct {
	Name string `json:"name"`
	// StartTime is when the container started: a cumulative counter
	// starts again with a new one.
	StartTime time.Time   `json:"startTime"`
	CPU       CPUStats    `json:"cpu"`
	Memory    MemoryStats `json:"memory"`
}

// CPUStats is a container's CPU usage at Time. Only the cumulative usage
// is served, not a rate: a rate needs two readings, and a server that kept
// readings to serve one would read every cgroup all the time for a command
// run now and then. The client reads twice and divides (tug top).
type CPUStats struct {
	Time                 time.Time `json:"time"`
	UsageCoreNanoSeconds uint64    `json:"usageCoreNanoSeconds"`
}

// MemoryStats is a container's memory at Time, in cAdvisor's terms.
type MemoryStats struct {
	Time            time.Time `json:"time"`
	UsageBytes      uint64    `json:"usageBytes"`
	WorkingSetBytes uint64    `json:"workingSetBytes"`
	RSSBytes        uint64    `json:"rssBytes"`
}

// statsSummary is GET /stats/summary, sorted by namespace, name and UID,
// each pod's containers by name.
func (s *Server) statsSummary(w http.ResponseWriter, r *http.Request) {
	var pods []PodStats
	if s.Stats != nil {
		pods = s.Stats.PodStats()
	}
	if pods == nil {
		pods = []PodStats{}
	}
	slices.SortFunc(pods, func(a, b PodStats) int {
		return cmp.Or(strings.Compare(a.PodRef.Namespace, b.PodRef.Namespace),
			strings.Compare(a.PodRef.Name, b.PodRef.Name), strings.Compare(a.PodRef.UID, b.PodRef.UID))
	})
	for _, p := range pods {
		slices.SortFunc(p.Containers, func(a, b ContainerStats) int { return strings.Compare(a.Name, b.Name) })
	}
	s.writeJSON(w, http.StatusOK, StatsSummary{Pods: pods})
}

// StatsSummary returns the usage of every pod with a running container.
func (c *Client) StatsSummary(ctx context.Context) (StatsSummary, error) {
	var st StatsSummary
	err := c.get(ctx, "/stats/summary", &st)
	return st, err
}
