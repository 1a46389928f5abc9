package cgstats

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"tug/internal/pod"
)

type fakeLister []pod.RuntimeContainer

func (f fakeLister) All() []pod.RuntimeContainer { return f }

type fakeReader map[string]Stats

func (f fakeReader) Read(group string) (Stats, error) {
	st, ok := f[group]
	if !ok {
		return Stats{}, errors.New("no such cgroup")
	}
	return st, nil
}

func TestCollector(t *testing.T) {
	containers := fakeLister{
		{ID: "c1", PodUID: "u1", PodName: "web-edge1", Namespace: "default", Name: "app", Image: "busybox", State: pod.RunRunning, CgroupParent: "/tugpods/pod-u1"},
		{ID: "c0", PodUID: "u1", PodName: "web-edge1", Namespace: "default", Name: "app", State: pod.RunExited, CgroupParent: "/tugpods/pod-u1"},
		{ID: "c2", PodUID: "u2", PodName: "db-edge1", Namespace: "default", Name: "db", Image: "busybox", State: pod.RunRunning, CgroupParent: "/tugpods/pod-u2"},
		{ID: "c3", PodUID: "u3", PodName: "new-edge1", Namespace: "default", Name: "x", State: pod.RunCreated},
	}
	reader := fakeReader{"/tugpods/pod-u1/c1": {CPUSeconds: 1.5, Usage: 300, WorkingSet: 200, RSS: 100, OOMKills: 2}}
	reg := prometheus.NewPedanticRegistry()
	NewCollector(containers, reader, reg, nil)
	want := `
# HELP container_cpu_usage_seconds_total Cumulative CPU time consumed in seconds.
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="app",id="c1",image="busybox",namespace="default",pod="web-edge1"} 1.5
# HELP container_memory_rss Size of RSS in bytes.
# TYPE container_memory_rss gauge
container_memory_rss{container="app",id="c1",image="busybox",namespace="default",pod="web-edge1"} 100
# HELP container_memory_working_set_bytes Current working set in bytes.
# TYPE container_memory_working_set_bytes gauge
container_memory_working_set_bytes{container="app",id="c1",image="busybox",namespace="default",pod="web-edge1"} 200
# HELP container_oom_events_total Count of out of memory events observed for the container.
# TYPE container_oom_events_total counter
container_oom_events_total{container="app",id="c1",image="busybox",namespace="default",pod="web-edge1"} 2
# HELP kubelet_running_containers Number of containers, by state.
# TYPE kubelet_running_containers gauge
kubelet_running_containers{container_state="created"} 1
kubelet_running_containers{container_state="exited"} 1
kubelet_running_containers{container_state="running"} 2
kubelet_running_containers{container_state="unknown"} 0
# HELP kubelet_running_pods Number of pods that have a running container.
# TYPE kubelet_running_pods gauge
kubelet_running_pods 2
`
	// c2's cgroup cannot be read: it is left out, the rest is exported.
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"container_cpu_usage_seconds_total", "container_memory_rss", "container_memory_working_set_bytes",
		"container_oom_events_total", "kubelet_running_containers", "kubelet_running_pods"); err != nil {
		t.Error(err)
	}
}

func TestWorkingSet(t *testing.T) {
	tests := []struct {
		name                string
		usage, inactive, ws uint64
	}{
		{"usage less inactive file", 100, 30, 70},
		{"never below zero", 10, 30, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := workingSet(tt.usage, tt.inactive); got != tt.ws {
				t.Errorf("workingSet(%d, %d) = %d, want %d", tt.usage, tt.inactive, got, tt.ws)
			}
		})
	}
}
