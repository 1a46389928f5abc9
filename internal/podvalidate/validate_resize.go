package podvalidate

import (
	"fmt"
	"slices"
	"strings"

	"tug/internal/fieldpath"
	"tug/internal/pod"
)

// resizeResources are the resources a resizePolicy may name, and the only
// ones pod-level resources may hold (hugepages aside, which tug refuses).
var resizeResources = []pod.ResourceName{pod.ResourceCPU, pod.ResourceMemory}

// resize checks the containers' resizePolicy and the pod-level resources
// as Kubernetes does (KEP-1287, KEP-2837).
func (v *validator) resize(s *pod.PodSpec) {
	for i := range s.InitContainers {
		c := &s.InitContainers[i]
		p := fieldpath.Index("spec.initContainers", i)
		if len(c.ResizePolicy) > 0 && !c.IsSidecar() {
			v.fail(p+".resizePolicy", "must not be set for an init container that is not a sidecar (restartPolicy: Always): it is never resized")
			continue
		}
		v.resizePolicy(p, c, s.RestartPolicy)
	}
	for i := range s.Containers {
		v.resizePolicy(fieldpath.Index("spec.containers", i), &s.Containers[i], s.RestartPolicy)
	}
	if s.Resources != nil {
		v.podResources(s)
	}
}

// resizePolicy checks one container's resizePolicy: cpu or memory, each
// once, NotRequired or RestartContainer, and RestartContainer never for a
// container that is not restarted (restartPolicy Never).
func (v *validator) resizePolicy(p string, c *pod.Container, podRestart pod.RestartPolicy) {
	restart := podRestart
	if c.RestartPolicy != nil {
		restart = *c.RestartPolicy
	}
	seen := map[pod.ResourceName]bool{}
	for i, r := range c.ResizePolicy {
		rp := fieldpath.Index(p+".resizePolicy", i)
		switch {
		case r.ResourceName == "":
			v.fail(rp+".resourceName", "required")
		case !slices.Contains(resizeResources, r.ResourceName):
			v.fail(rp+".resourceName", "unsupported value %q: must be \"cpu\" or \"memory\"", r.ResourceName)
		case seen[r.ResourceName]:
			v.fail(rp+".resourceName", "duplicate value %q", r.ResourceName)
		}
		seen[r.ResourceName] = true
		switch r.RestartPolicy {
		case pod.ResizeNotRequired:
		case pod.ResizeRestartContainer:
			if restart == pod.RestartNever {
				v.fail(rp+".restartPolicy", "must be \"NotRequired\" when the container's restartPolicy is \"Never\": it cannot be restarted")
			}
		case "":
			v.fail(rp+".restartPolicy", "required")
		default:
			v.fail(rp+".restartPolicy", "unsupported value %q: must be \"NotRequired\" or \"RestartContainer\"", r.RestartPolicy)
		}
	}
}

// podResources checks spec.resources: cpu and memory only (hugepages are
// refused), no negative values, requests not above limits, requests not
// below what the containers request together, and no container limit
// above the pod's.
func (v *validator) podResources(s *pod.PodSpec) {
	const p = "spec.resources"
	r := s.Resources
	for _, list := range []struct {
		path string
		rl   pod.ResourceList
	}{{p + ".limits", r.Limits}, {p + ".requests", r.Requests}} {
		for _, name := range sortedResourceNames(list.rl) {
			q := list.rl[name]
			if list.path == p+".requests" && v.at != nil && !v.written(fieldpath.Key(list.path, string(name))) {
				continue // a limit's default: reported on the limit
			}
			switch {
			case strings.HasPrefix(string(name), "hugepages-"):
				v.failKey(list.path, string(name), "not supported by tug: hugepages; pod-level resources may hold cpu and memory")
			case !slices.Contains(resizeResources, name):
				v.failKey(list.path, string(name), "unsupported resource %q: pod-level resources must be \"cpu\" or \"memory\"", name)
			case q.MilliValue() < 0:
				v.fail(fieldpath.Key(list.path, string(name)), "must be greater than or equal to 0")
			case name == pod.ResourceMemory && q.MilliValue()%1000 != 0:
				v.fail(fieldpath.Key(list.path, string(name)), "must be a whole number of bytes, not %s", q)
			}
		}
	}
	for _, name := range resizeResources {
		req, hasReq := r.Requests[name]
		limit, hasLimit := r.Limits[name]
		if hasReq && hasLimit && req.MilliValue() > limit.MilliValue() && v.written(fieldpath.Key(p+".requests", string(name))) {
			v.fail(fieldpath.Key(p+".requests", string(name)), "must be less than or equal to %s limit of %s", name, limit)
		}
		if hasReq {
			if sum := aggregateRequest(s, name); req.MilliValue() < sum {
				path := fieldpath.Key(p+".requests", string(name))
				if !v.written(path) {
					path = fieldpath.Key(p+".limits", string(name)) // the request is the limit's default
				}
				v.fail(path, "must be greater than or equal to the containers' aggregate %s request of %s", name, formatMilli(name, sum))
			}
		}
		if !hasLimit {
			continue
		}
		for _, list := range []struct {
			path string
			cs   []pod.Container
		}{{"spec.initContainers", s.InitContainers}, {"spec.containers", s.Containers}} {
			for i, c := range list.cs {
				if cl, ok := c.Resources.Limits[name]; ok && cl.MilliValue() > limit.MilliValue() {
					v.fail(fieldpath.Key(fieldpath.Index(list.path, i)+".resources.limits", string(name)), "must be less than or equal to the pod-level %s limit of %s", name, limit)
				}
			}
		}
	}
}

// aggregateRequest is the containers' request for name as Kubernetes
// aggregates it for pod-level resources: the sum over the app containers
// and sidecars, or the largest request of an init container (with the
// sidecars started before it) if that is more, in thousandths.
func aggregateRequest(s *pod.PodSpec, name pod.ResourceName) int64 {
	var apps, sidecars, initMax int64
	for _, c := range s.InitContainers {
		q := c.Resources.Requests[name].MilliValue()
		if c.IsSidecar() {
			sidecars += q
			continue
		}
		initMax = max(initMax, sidecars+q)
	}
	for _, c := range s.Containers {
		apps += c.Resources.Requests[name].MilliValue()
	}
	return max(apps+sidecars, initMax)
}

// formatMilli writes an amount of thousandths of name as a quantity.
func formatMilli(name pod.ResourceName, milli int64) string {
	if name == pod.ResourceCPU {
		return fmt.Sprintf("%dm", milli)
	}
	return fmt.Sprintf("%d", (milli+999)/1000)
}
