// Package policy owns admission: whether a pod may run on this node, decided
// before anything of it is created. It implements the three levels of the
// Kubernetes Pod Security Standards (privileged, baseline, restricted) with
// the published rules, applied to every field tug's manifest types have, one
// level per source, and the node-wide rules that hold whatever the level: no
// privileged container without --allow-privileged, and no hostPath that
// exposes tug's own state or containerd's socket without
// --allow-host-state-mounts.
//
// Everything here is a pure function of the pod and the configuration: no
// I/O (a path resolver may be injected). It imports only tug/internal/pod
// and the standard library; reconcile consumes it through an interface it
// declares, and agent/ builds it.
package policy
