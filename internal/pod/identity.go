package pod

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// UID returns the deterministic UID of a static pod: a UUID-shaped hash of
// the source and the pod's namespace and (static) name.
//
// It deliberately does not hash the rest of the content. An edit to a
// manifest must be an update of the same pod, so that the sync loop compares
// container hashes and recreates only the containers that changed, while the
// pod keeps its sandbox (network namespace and IP lease, cgroup, emptyDir
// volumes, log directory), all of which are keyed by UID. A content hash
// would turn every edit into a delete and an add: every container restarted,
// every emptyDir lost. The same name from another source is another pod; two
// files of one source defining the same pod are a conflict that the pod
// store resolves, not the UID.
func UID(source, namespace, name string) string {
	h := sha256.Sum256([]byte(source + "\x00" + namespace + "\x00" + name))
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// FullName returns "namespace/name".
func (p *Pod) FullName() string { return p.Metadata.Namespace + "/" + p.Metadata.Name }

// GracePeriod returns terminationGracePeriodSeconds as a duration (30 s when
// unset).
func (p *Pod) GracePeriod() time.Duration {
	if p.Spec.TerminationGracePeriodSeconds == nil {
		return DefaultTerminationGracePeriodSeconds * time.Second
	}
	return time.Duration(*p.Spec.TerminationGracePeriodSeconds) * time.Second
}

// Hash returns a hash (64 hex characters) of the whole pod, metadata and
// spec: two pods with the same hash need no update. It hashes the JSON form,
// so it is stable across runs and tug versions as long as new fields are
// added with omitempty.
func (p *Pod) Hash() string { return hashJSON(p) }

// containerHashInput is what ContainerHash covers. Its field names are part
// of the hash: renaming one restarts every container after an upgrade.
type containerHashInput struct {
	Namespace   string     `json:"namespace"`
	Pod         string     `json:"pod"` // static pod name: the container's hostname without hostNetwork
	HostNetwork bool       `json:"hostNetwork,omitempty"`
	Container   *Container `json:"container"`
	Volumes     []Volume   `json:"volumes,omitempty"` // the volumes c mounts, sorted by name
	// SecurityContext is the pod's: its runAsUser, runAsGroup, runAsNonRoot
	// and seccompProfile are defaults of every container's.
	SecurityContext *PodSecurityContext `json:"securityContext,omitempty"`
}

// ContainerHash returns the spec hash of container c in pod p, 16 hex
// characters: it covers the container and every pod-level field that goes
// into its OCI spec (namespace and name, hostNetwork, the volumes it
// mounts, the pod's securityContext), so a change in it means the container must be recreated, and a
// change elsewhere in the pod (labels, another container, a volume it does
// not mount, restartPolicy) does not. The pod should be defaulted (Parse
// does this), so that writing a default out does not change the hash. The
// hash is stable across runs and tug versions as long as new Container
// fields are added with omitempty.
func ContainerHash(p *Pod, c *Container) string {
	in := containerHashInput{
		Namespace:   p.Metadata.Namespace,
		Pod:         p.Metadata.Name,
		HostNetwork: p.Spec.HostNetwork,
		Container:   c,

		SecurityContext: p.Spec.SecurityContext,
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
