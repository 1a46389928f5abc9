package pod

import (
	"crypto/sha256"
	"fmt"
	"strings"
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

// Hostname returns the pod's hostname as Kubernetes sets it:
// spec.hostnameOverride when set; else spec.hostname or else the pod name
// (the static name, with the node's hostname appended), cut to 63
// characters with no trailing '-' or '.'; with setHostnameAsFQDN and a
// subdomain, the FQDN (see FQDN), cut to 64.
func (p *Pod) Hostname() string {
	if o := p.Spec.HostnameOverride; o != nil && *o != "" {
		return *o
	}
	h := p.Spec.Hostname
	if h == "" {
		h = p.Metadata.Name
	}
	if len(h) > 63 {
		h = strings.TrimRight(h[:63], "-.")
	}
	if f := p.FQDN(); f != "" && p.Spec.SetHostnameAsFQDN != nil && *p.Spec.SetHostnameAsFQDN {
		if len(f) > 64 {
			f = strings.TrimRight(f[:64], "-.")
		}
		return f
	}
	return h
}

// ClusterDomain is the domain of a pod's FQDN. tug has no cluster DNS; it
// uses Kubernetes' default domain so that names match a cluster's.
const ClusterDomain = "cluster.local"

// FQDN returns "<hostname>.<subdomain>.<namespace>.svc.cluster.local" for
// a pod with a subdomain, as Kubernetes names it, or "" (no subdomain, or a
// hostnameOverride, which takes its place).
func (p *Pod) FQDN() string {
	if p.Spec.Subdomain == "" || p.Spec.HostnameOverride != nil && *p.Spec.HostnameOverride != "" {
		return ""
	}
	h := p.Spec.Hostname
	if h == "" {
		h = p.Metadata.Name
	}
	if len(h) > 63 {
		h = strings.TrimRight(h[:63], "-.")
	}
	return h + "." + p.Spec.Subdomain + "." + p.Metadata.Namespace + ".svc." + ClusterDomain
}
