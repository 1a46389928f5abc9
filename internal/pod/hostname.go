package pod

import "strings"

// Hostname returns the pod's hostname as Kubernetes sets it: the pod name
// (the static name, with the node's hostname appended), cut to 63
// characters with no trailing '-' or '.'.
func (p *Pod) Hostname() string {
	h := p.Metadata.Name
	if len(h) > 63 {
		h = strings.TrimRight(h[:63], "-.")
	}
	return h
}
