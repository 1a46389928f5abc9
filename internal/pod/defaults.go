package pod

import (
	"strings"
	"time"
)

// DefaultTerminationGracePeriodSeconds is terminationGracePeriodSeconds when
// a manifest does not set it (as in Kubernetes).
const DefaultTerminationGracePeriodSeconds = 30

// SetDefaults fills in what a manifest may leave out, with Kubernetes'
// defaults: apiVersion v1 and kind Pod, namespace "default", restartPolicy
// Always, terminationGracePeriodSeconds 30, imagePullPolicy (Always for a
// ":latest" or untagged image without digest, else IfNotPresent; an image
// volume's pullPolicy likewise), port
// protocol TCP and, with hostNetwork, hostPort = containerPort on app
// containers, dnsPolicy ClusterFirst, and a request for every resource
// that has a limit but no request (set to the limit), in each container
// and in the pod-level resources, and the probe
// defaults (see defaultProbe). It also normalises capability names to the form without
// "CAP_". SetDefaults is idempotent; manifest.Parse calls it.
func SetDefaults(p *Pod) {
	if p.APIVersion == "" {
		p.APIVersion = "v1"
	}
	if p.Kind == "" {
		p.Kind = "Pod"
	}
	if p.Metadata.Namespace == "" {
		p.Metadata.Namespace = "default"
	}
	s := &p.Spec
	if s.RestartPolicy == "" {
		s.RestartPolicy = RestartAlways
	}
	if s.DNSPolicy == "" {
		s.DNSPolicy = DNSClusterFirst
	}
	if s.TerminationGracePeriodSeconds == nil {
		grace := int64(DefaultTerminationGracePeriodSeconds)
		s.TerminationGracePeriodSeconds = &grace
	}
	for i := range s.Volumes {
		if img := s.Volumes[i].Image; img != nil && img.PullPolicy == "" {
			img.PullPolicy = DefaultPullPolicy(img.Reference)
		}
	}
	for i := range s.InitContainers {
		defaultContainer(&s.InitContainers[i], false)
	}
	for i := range s.Containers {
		defaultContainer(&s.Containers[i], s.HostNetwork)
	}
	if s.Resources != nil {
		defaultRequests(s.Resources)
	}
}

// defaultRequests sets a request for every resource of r that has a limit
// but no request, to the limit.
func defaultRequests(r *Resources) {
	for name, limit := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			if r.Requests == nil {
				r.Requests = ResourceList{}
			}
			r.Requests[name] = limit
		}
	}
}

// defaultContainer sets a container's defaults; hostPorts says whether its
// ports are published on the host (an app container with hostNetwork).
func defaultContainer(c *Container, hostPorts bool) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = DefaultPullPolicy(c.Image)
	}
	for i := range c.Ports {
		port := &c.Ports[i]
		if port.Protocol == "" {
			port.Protocol = ProtocolTCP
		}
		if hostPorts && port.HostPort == 0 {
			port.HostPort = port.ContainerPort
		}
	}
	defaultRequests(&c.Resources)
	for _, pr := range []*Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		defaultProbe(pr)
	}
	if l := c.Lifecycle; l != nil {
		for _, h := range []*LifecycleHandler{l.PostStart, l.PreStop} {
			if h != nil {
				defaultHTTPGet(h.HTTPGet)
			}
		}
	}
	if sc := c.SecurityContext; sc != nil && sc.Capabilities != nil {
		trimCapPrefix(sc.Capabilities.Add)
		trimCapPrefix(sc.Capabilities.Drop)
	}
}

// defaultProbe sets Kubernetes' probe defaults (a nil probe is left
// alone): timeoutSeconds 1, periodSeconds 10, successThreshold 1,
// failureThreshold 3, and an httpGet's path "/" and scheme HTTP.
func defaultProbe(p *Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	defaultHTTPGet(p.HTTPGet)
}

func defaultHTTPGet(g *HTTPGetAction) {
	if g == nil {
		return
	}
	if g.Path == "" {
		g.Path = "/"
	}
	if g.Scheme == "" {
		g.Scheme = URISchemeHTTP
	}
}

func trimCapPrefix(names []string) {
	for i, n := range names {
		names[i] = strings.TrimPrefix(n, "CAP_")
	}
}

// DefaultPullPolicy returns the Kubernetes default imagePullPolicy for an
// image reference: Always when its tag is "latest" or it has neither tag
// nor digest, IfNotPresent otherwise.
func DefaultPullPolicy(image string) PullPolicy {
	if strings.Contains(image, "@") {
		return PullIfNotPresent // pinned by digest
	}
	name := image
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:] // a registry host may have a :port
	}
	_, tag, ok := strings.Cut(name, ":")
	if !ok || tag == "" || tag == "latest" {
		return PullAlways
	}
	return PullIfNotPresent
}

// GracePeriod returns terminationGracePeriodSeconds as a duration (30 s when
// unset).
func (p *Pod) GracePeriod() time.Duration {
	if p.Spec.TerminationGracePeriodSeconds == nil {
		return DefaultTerminationGracePeriodSeconds * time.Second
	}
	return time.Duration(*p.Spec.TerminationGracePeriodSeconds) * time.Second
}

// PriorityClasses are the priorities of the two built-in Kubernetes
// priority classes, which tug knows without an API server.
var priorityClasses = map[string]int32{
	"system-node-critical":    2000001000,
	"system-cluster-critical": 2000000000,
}

// PodPriority returns the pod's priority, as Kubernetes resolves it:
// spec.priority when set, else that of a built-in priorityClassName, else 0.
// A higher priority is evicted later.
func PodPriority(p *Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return priorityClasses[p.Spec.PriorityClassName]
}

// BuiltinPriorityClass returns the priority of a built-in Kubernetes
// priority class (system-node-critical, system-cluster-critical), and
// whether name is one.
func BuiltinPriorityClass(name string) (int32, bool) {
	v, ok := priorityClasses[name]
	return v, ok
}
