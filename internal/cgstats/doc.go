// Package cgstats reads the resource usage of tug's containers from their
// cgroups, through github.com/containerd/cgroups/v3 (the design's cgroup
// library), on cgroup v2 and on v1/hybrid hosts, and exports it on
// /metrics under cAdvisor's names (container_cpu_usage_seconds_total,
// container_memory_working_set_bytes, container_memory_rss,
// container_oom_events_total) with the kubelet's running pod and container
// counts.
//
// It only reads: internal/qos creates and writes the cgroups (by hand, see
// docs/decisions.md). A container's cgroup is <cgroup parent>/<container
// ID>, the path runc's cgroupfs driver gives the OCI cgroupsPath tug sets.
//
// It imports tug/internal/pod, cgroups/v3 and client_golang; only agent/
// imports it.
package cgstats
