package pod

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
)

// Hash returns a hash (64 hex characters) of the whole pod, metadata and
// spec: two pods with the same hash need no update. It hashes the JSON form,
// so it is stable across runs and tug versions as long as new fields are
// added with omitempty.
func (p *Pod) Hash() string { return hashJSON(p) }

// containerHashInput is what ContainerHash covers. Its field names are part
// of the hash: renaming one restarts every container after an upgrade.
type containerHashInput struct {
	Namespace   string `json:"namespace"`
	Pod         string `json:"pod"` // static pod name: the container's hostname without hostNetwork
	HostNetwork bool   `json:"hostNetwork,omitempty"`
	// UserNamespace is hostUsers: false (the spec's user namespace and the
	// container's remapped root filesystem).
	UserNamespace bool       `json:"userNamespace,omitempty"`
	Container     *Container `json:"container"`
	Volumes       []Volume   `json:"volumes,omitempty"` // the volumes c mounts, sorted by name
	// SecurityContext is the pod's: its runAsUser, runAsGroup, runAsNonRoot
	// and seccompProfile are defaults of every container's.
	SecurityContext *PodSecurityContext `json:"securityContext,omitempty"`
	// PodResources are the pod-level resources: tug resizes no pod in
	// place at pod level, so a change recreates its containers.
	PodResources *Resources `json:"podResources,omitempty"`
	// RuntimeClass is spec.runtimeClassName: the containerd runtime (and
	// runtime binary) the container runs with.
	RuntimeClass string `json:"runtimeClass,omitempty"`
}

// ContainerHash returns the spec hash of container c in pod p, 16 hex
// characters: it covers the container and every pod-level field that goes
// into its OCI spec (namespace and name, hostNetwork, hostUsers: false, the
// volumes it mounts, the pod's securityContext, its runtimeClassName), so a change in it means the container must be
// recreated, and a change elsewhere in the pod (labels, another container, a
// volume it does not mount, restartPolicy, the container's probes and
// resizePolicy) does not. A change of resources alone changes the hash too:
// the sync loop tells such a resize apart (see WithResources).
// The pod should be defaulted (SetDefaults; manifest.Parse calls it), so
// that writing a default out does not change the hash. The hash is stable
// across runs and tug versions as long as new Container fields are added
// with omitempty.
func ContainerHash(p *Pod, c *Container) string {
	// The probes are not part of the container: the prober re-arms them
	// when they change, without recreating the container.
	// Nor is the resize policy: it says how a change of resources is
	// applied, and changes nothing in the running container.
	if c.LivenessProbe != nil || c.ReadinessProbe != nil || c.StartupProbe != nil || c.ResizePolicy != nil {
		cc := *c
		cc.LivenessProbe, cc.ReadinessProbe, cc.StartupProbe = nil, nil, nil
		cc.ResizePolicy = nil
		c = &cc
	}
	in := containerHashInput{
		Namespace:     p.Metadata.Namespace,
		Pod:           p.Metadata.Name,
		HostNetwork:   p.Spec.HostNetwork,
		UserNamespace: p.UserNamespace(),
		Container:     c,

		SecurityContext: p.Spec.SecurityContext,
		PodResources:    p.Spec.Resources,
		RuntimeClass:    p.Spec.RuntimeClass(),
	}
	for _, m := range c.VolumeMounts {
		i := slices.IndexFunc(p.Spec.Volumes, func(v Volume) bool { return v.Name == m.Name })
		if i < 0 || slices.ContainsFunc(in.Volumes, func(v Volume) bool { return v.Name == m.Name }) {
			continue
		}
		in.Volumes = append(in.Volumes, p.Spec.Volumes[i])
	}
	slices.SortFunc(in.Volumes, func(a, b Volume) int { return cmp.Compare(a.Name, b.Name) })
	return hashJSON(in)[:16]
}

func hashJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("pod: hash: %v", err)) // plain data: cannot fail
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// WithResources returns a copy of c whose cpu and memory requests and
// limits under the resize policy NotRequired are those of allocated, the
// others (and every other resource) c's own. When the ContainerHash of the
// copy is that of a running container, c differs from it only in resources
// that can be resized in place. The copy shares no map with c.
func WithResources(c *Container, allocated Resources) Container {
	cc := *c
	cc.Resources = Resources{Limits: cloneList(c.Resources.Limits), Requests: cloneList(c.Resources.Requests)}
	for _, name := range []ResourceName{ResourceCPU, ResourceMemory} {
		if c.ResizePolicyFor(name) != ResizeNotRequired {
			continue
		}
		setOrDelete(&cc.Resources.Limits, name, allocated.Limits)
		setOrDelete(&cc.Resources.Requests, name, allocated.Requests)
	}
	return cc
}

func cloneList(l ResourceList) ResourceList {
	if l == nil {
		return nil
	}
	out := make(ResourceList, len(l))
	for k, v := range l {
		out[k] = v
	}
	return out
}

// setOrDelete makes (*l)[name] what from holds for name.
func setOrDelete(l *ResourceList, name ResourceName, from ResourceList) {
	if q, ok := from[name]; ok {
		if *l == nil {
			*l = ResourceList{}
		}
		(*l)[name] = q
		return
	}
	delete(*l, name)
	if len(*l) == 0 {
		*l = nil
	}
}
