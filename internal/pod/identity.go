package pod

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// UID returns the deterministic UID of a static pod: a UUID-shaped hash of
// the source and the pod's namespace and (static) name. It does not depend
// on the rest of the content, so an edit to a manifest is an update of the
// same pod (only changed containers are recreated), while the same name from
// another source is another pod.
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
		return 30 * time.Second
	}
	return time.Duration(*p.Spec.TerminationGracePeriodSeconds) * time.Second
}

// Hash returns a hash of the whole pod (metadata and spec): two pods with the
// same hash need no update.
func (p *Pod) Hash() string { return hashJSON(p) }

// ContainerHash returns the spec hash of container c in pod p: it covers the
// container and every pod-level field that goes into its OCI spec, so a
// change in it means the container must be recreated.
func ContainerHash(p *Pod, c *Container) string {
	return hashJSON(struct {
		C           *Container
		HostNetwork bool
		Volumes     []Volume
		Name        string
	}{c, p.Spec.HostNetwork, p.Spec.Volumes, p.Metadata.Name})[:16]
}

func hashJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("pod: hash: %v", err)) // plain data: cannot fail
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
