package qos

import (
	"math"

	"tug/internal/pod"
)

// PodClass is a pod's Kubernetes QoS class.
type PodClass string

// The QoS classes, as Kubernetes names them (v1.PodQOSClass).
const (
	// Guaranteed: every container (init containers included) has cpu and
	// memory limits, and the pod's requests equal its limits.
	Guaranteed PodClass = "Guaranteed"
	// Burstable: some cpu or memory request or limit, but not Guaranteed.
	Burstable PodClass = "Burstable"
	// BestEffort: no cpu or memory request or limit in any container.
	BestEffort PodClass = "BestEffort"
)

// qosResources are the resources that decide the QoS class; every other
// resource (ephemeral-storage, ...) is ignored, as in Kubernetes.
var qosResources = [...]pod.ResourceName{pod.ResourceCPU, pod.ResourceMemory}

// Class returns the QoS class of p exactly as Kubernetes' GetPodQOS
// (ComputePodQOS in pkg/apis/core/v1/helper/qos) computes it: app and init
// containers together, only cpu and memory, only quantities above zero.
// Guaranteed needs a cpu and a memory limit in every container and the
// summed requests equal to the summed limits for each resource; no request
// and no limit at all is BestEffort; anything else is Burstable.
//
// A limit without a request counts as a request of the same amount (the
// Kubernetes defaulting that manifest.Parse also applies), so Class gives the
// same answer for a pod that was not defaulted.
//
// Pod-level resources (spec.resources, KEP-2837) take precedence: when the
// pod has them, its class is computed from them alone, the pod counting as
// one container.
func Class(p *pod.Pod) PodClass {
	if r := p.Spec.Resources; r != nil {
		return Class(&pod.Pod{Spec: pod.PodSpec{Containers: []pod.Container{{Resources: *r}}}})
	}
	requests := map[pod.ResourceName]int64{}
	limits := map[pod.ResourceName]int64{}
	guaranteed := true
	each(p, func(c *pod.Container) {
		found := 0
		for _, name := range qosResources {
			if v := request(c, name); v > 0 {
				requests[name] = addSat(requests[name], v)
			}
			if v := limit(c, name); v > 0 {
				limits[name] = addSat(limits[name], v)
				found++
			}
		}
		if found < len(qosResources) {
			guaranteed = false
		}
	})
	if len(requests) == 0 && len(limits) == 0 {
		return BestEffort
	}
	if guaranteed {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim != req {
				guaranteed = false
				break
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return Guaranteed
	}
	return Burstable
}

// each calls f for every app container, then every init container of p.
func each(p *pod.Pod, f func(c *pod.Container)) {
	for i := range p.Spec.Containers {
		f(&p.Spec.Containers[i])
	}
	for i := range p.Spec.InitContainers {
		f(&p.Spec.InitContainers[i])
	}
}

// request returns c's request for name in thousandths, or its limit when
// it has no request (Kubernetes' defaulting); 0 when neither is set.
func request(c *pod.Container, name pod.ResourceName) int64 {
	if q, ok := c.Resources.Requests[name]; ok {
		return q.MilliValue()
	}
	return limit(c, name)
}

// limit returns c's limit for name in thousandths; 0 when unset.
func limit(c *pod.Container, name pod.ResourceName) int64 {
	if q, ok := c.Resources.Limits[name]; ok {
		return q.MilliValue()
	}
	return 0
}

// toBytes turns a memory amount in thousandths into bytes, rounding away from
// zero as Quantity.Value does.
func toBytes(milli int64) int64 {
	v := milli / 1000
	if milli%1000 > 0 {
		v++
	}
	return v
}

// addSat adds two non-negative values, saturating at math.MaxInt64.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
