package qos

import (
	"math"

	"tug/internal/pod"
)

// The kubelet's constants (pkg/kubelet/cm/helper_linux.go,
// pkg/kubelet/qos/policy.go, the KubeletConfiguration defaults).
const (
	// MinShares and MaxShares bound cpu.shares (the kernel's MIN_SHARES and
	// MAX_SHARES); MinShares is also what a container without a cpu request
	// and the besteffort cgroup get.
	MinShares = 2
	MaxShares = 262144
	// SharesPerCPU is cpu.shares per whole CPU.
	SharesPerCPU = 1024
	// QuotaPeriod is the CFS period tug uses, in microseconds (100 ms).
	QuotaPeriod = 100000
	// MinQuota is the smallest CFS quota the kubelet sets, in microseconds.
	MinQuota = 1000
	// MinWeight and MaxWeight bound cgroup v2 cpu.weight.
	MinWeight = 1
	MaxWeight = 10000
	// GuaranteedOOMScoreAdj and BestEffortOOMScoreAdj are the kubelet's
	// oom_score_adj for Guaranteed and BestEffort containers; Burstable
	// containers get a value in between.
	GuaranteedOOMScoreAdj = -997
	BestEffortOOMScoreAdj = 1000
	// MemoryThrottlingFactor is the kubelet's default memoryThrottlingFactor
	// for memory.high under MemoryQoS.
	MemoryThrottlingFactor = 0.9
)

// MilliCPUToShares converts a cpu request in millicores to cpu.shares, as
// the kubelet's MilliCPUToShares does: milliCPU*1024/1000, at least
// MinShares (also for no request at all), at most MaxShares.
func MilliCPUToShares(milliCPU int64) uint64 {
	if milliCPU <= 0 {
		return MinShares
	}
	if milliCPU >= MaxShares*1000/SharesPerCPU {
		return MaxShares
	}
	shares := milliCPU * SharesPerCPU / 1000
	if shares < MinShares {
		return MinShares
	}
	return uint64(shares)
}

// MilliCPUToQuota converts a cpu limit in millicores to a CFS quota in
// microseconds per period, as the kubelet's MilliCPUToQuota does:
// milliCPU*period/1000, at least MinQuota; 0 (no quota) for no limit.
func MilliCPUToQuota(milliCPU, period int64) int64 {
	if milliCPU <= 0 {
		return 0
	}
	if period > 0 && milliCPU > math.MaxInt64/period {
		return math.MaxInt64 / 1000 * 1000 // absurd; the kernel rejects it
	}
	quota := milliCPU * period / 1000
	if quota < MinQuota {
		return MinQuota
	}
	return quota
}

// SharesToWeight converts cpu.shares [2, 262144] to cgroup v2 cpu.weight
// [1, 10000] with the linear formula 1 + (shares-2)*9999/262142.
//
// It is the conversion runc 1.1 (Debian 12's runc 1.1.5) applies to an OCI
// spec's cpu.shares on cgroup v2 (libcontainer/cgroups
// ConvertCPUSharesToCgroupV2Value), and that the kubelet applies to the pod
// and QoS cgroups it writes itself through the same library. tug writes the
// pod and class cgroups itself and hands container shares to runc, so it
// must use the runtime's formula for both levels to agree. Newer runc
// (opencontainers/cgroups 0.0.2 and later) switched to a quadratic fit on a
// log scale that maps the default 1024 shares to weight 100; when tug's
// hosts move to that runc, this function must follow.
func SharesToWeight(shares uint64) uint64 {
	if shares == 0 {
		return 0
	}
	if shares <= MinShares {
		return MinWeight
	}
	if shares >= MaxShares {
		return MaxWeight
	}
	return 1 + (shares-2)*9999/262142
}

// OOMScoreAdj returns a container's oom_score_adj as the kubelet's
// GetContainerOOMScoreAdjust (pkg/kubelet/qos/policy.go) computes it:
// GuaranteedOOMScoreAdj for Guaranteed, BestEffortOOMScoreAdj for
// BestEffort, and for Burstable 1000 - 1000*memoryRequest/memoryCapacity,
// kept within [1000+GuaranteedOOMScoreAdj, 999] (3..999) so that a
// Burstable container is always killed after every BestEffort and before
// every Guaranteed one. memoryRequest is the container's own request in
// bytes, memoryCapacity the node's memory in bytes. Clamping to what the
// host allows is the Manager's job (Manager.Container).
func OOMScoreAdj(class PodClass, memoryRequest, memoryCapacity int64) int {
	switch class {
	case Guaranteed:
		return GuaranteedOOMScoreAdj
	case BestEffort:
		return BestEffortOOMScoreAdj
	}
	adj := int64(1000)
	if memoryCapacity > 0 && memoryRequest > 0 {
		adj = 1000 - 1000*min(memoryRequest, memoryCapacity)/memoryCapacity
	}
	if adj < 1000+GuaranteedOOMScoreAdj {
		return 1000 + GuaranteedOOMScoreAdj
	}
	if adj >= BestEffortOOMScoreAdj {
		return BestEffortOOMScoreAdj - 1
	}
	return int(adj)
}

// MemoryHigh returns a container's memory.high under MemoryQoS as the
// kubelet computes it since 1.27 (generateLinuxContainerResources in
// kuberuntime_container_linux.go):
//
//	floor((request + factor*(limit - request)) / pageSize) * pageSize
//
// with factor MemoryThrottlingFactor and limit replaced by the node's
// allocatable memory when the container has none. It returns 0 (do not set
// memory.high) when request equals limit (a Guaranteed container, or none
// of either) or when the result would not exceed the request.
func MemoryHigh(request, limit, allocatable, pageSize int64) int64 {
	if request == limit || pageSize <= 0 {
		return 0
	}
	ceiling := limit
	if ceiling == 0 {
		ceiling = allocatable
	}
	if ceiling <= 0 {
		return 0
	}
	v := (float64(request) + (float64(ceiling)-float64(request))*MemoryThrottlingFactor) / float64(pageSize)
	high := int64(math.Floor(v)) * pageSize
	if high <= request {
		return 0
	}
	return high
}

// podResources are a pod's totals as the kubelet's ResourceConfigForPod
// sees them (PodRequests and PodLimits): for each resource the larger of
// the sum over the app containers and the largest init container; a
// pod-level request or limit (spec.resources) replaces the total of its
// resource, and a pod-level limit limits the pod cgroup.
type podResources struct {
	cpuRequest int64 // millicores
	cpuLimit   int64 // millicores
	memRequest int64 // bytes
	memLimit   int64 // bytes
	// cpuLimited and memLimited: every container, init containers
	// included, has a limit for the resource; only then does a Burstable
	// pod's cgroup get a quota or a memory limit.
	cpuLimited bool
	memLimited bool
}

// resourcesOf returns p's pod-level totals.
func resourcesOf(p *pod.Pod) podResources {
	var app, init [4]int64 // cpu request, cpu limit, memory request, memory limit
	r := podResources{cpuLimited: true, memLimited: true}
	sum := func(to *[4]int64, c *pod.Container, add func(a, b int64) int64) {
		v := [4]int64{
			request(c, pod.ResourceCPU), limit(c, pod.ResourceCPU),
			request(c, pod.ResourceMemory), limit(c, pod.ResourceMemory),
		}
		for i := range v {
			to[i] = add(to[i], max(v[i], 0))
		}
		if v[1] <= 0 {
			r.cpuLimited = false
		}
		if v[3] <= 0 {
			r.memLimited = false
		}
	}
	for i := range p.Spec.Containers {
		sum(&app, &p.Spec.Containers[i], addSat)
	}
	for i := range p.Spec.InitContainers {
		sum(&init, &p.Spec.InitContainers[i], func(a, b int64) int64 { return max(a, b) })
	}
	r.cpuRequest = max(app[0], init[0])
	r.cpuLimit = max(app[1], init[1])
	r.memRequest = toBytes(max(app[2], init[2]))
	r.memLimit = toBytes(max(app[3], init[3]))
	if pr := p.Spec.Resources; pr != nil {
		// Pod-level resources, where set, replace the containers' totals.
		if q, ok := pr.Requests[pod.ResourceCPU]; ok {
			r.cpuRequest = q.MilliValue()
		}
		if q, ok := pr.Limits[pod.ResourceCPU]; ok && q.MilliValue() > 0 {
			r.cpuLimit, r.cpuLimited = q.MilliValue(), true
		}
		if q, ok := pr.Requests[pod.ResourceMemory]; ok {
			r.memRequest = toBytes(q.MilliValue())
		}
		if q, ok := pr.Limits[pod.ResourceMemory]; ok && q.MilliValue() > 0 {
			r.memLimit, r.memLimited = toBytes(q.MilliValue()), true
		}
	}
	return r
}
