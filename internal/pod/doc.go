// Package pod owns tug's manifest types (a Kubernetes Pod v1 subset and the
// ConfigMap, Secret and PersistentVolumeClaim beside it), their defaults,
// the identity of a static pod (its name on the node, its deterministic
// UID), the pod and per-container spec hashes, and the plain data types the
// other packages exchange about a pod: what a source read (Manifest), what
// a pod's containers share (Sandbox), what the runtime found
// (RuntimeContainer) and the observed status (Status, NodeStatus). The
// status API's shapes made of them (View, List, ManifestStatus, NodeView)
// are package podview's.
//
// It reads no manifest: package manifest decodes and validates the bytes
// into these types (reporting each problem as a *FieldError, defined here
// because every reader of a manifest prints it), and package objects
// resolves a pod's references to its ConfigMaps and Secrets into plain
// values. Bind stays here rather than in objects: it is what the store does
// to a pod (attach the objects of its source and fold them into its hash),
// and the store imports only this package.
//
// One job per file:
//
//	types.go               the manifest types (Pod, PodSpec, Container, ...), IsEnvVarName, SysctlDotted
//	probe.go               Probe, lifecycle handlers, IntOrString, ResolvePort
//	volumesources.go       the fields that read objects or the downward API, Subscript, IsObjectVolume
//	quantity.go            Quantity, Kubernetes resource quantities, ParseQuantity
//	objects.go             ConfigMap, Secret, PersistentVolumeClaim, Object; Refs, Bound, Bind
//	defaults.go            SetDefaults, DefaultPullPolicy, GracePeriod, PodPriority
//	identity.go            UID, FullName, Hostname, FQDN
//	names.go               Kubernetes' name rules (RFC 1123 labels and subdomains, label keys and values, port names) and their messages
//	hash.go                Pod.Hash, ContainerHash
//	errors.go              sentinels, FieldError, HostPortInUseError
//	truncate.go            caps on sizes, Truncate and TruncateArgs for values echoed in errors
//	rollout.go             the rollout annotations and their values, RolloutHistory
//	manifest.go            Origin, Manifest: what a source read from one file
//	sandbox.go             Namespaces, Sandbox, LinuxResources: runtime inputs
//	runtimecontainer.go    RunState, RuntimeContainer: the runtime's view
//	status.go              Status, ContainerStatus, phases, conditions, reasons
//	node.go                NodeCondition, NodeStatus: the node's state
//
// The observed-state types (status.go, runtimecontainer.go, node.go) stay in this package rather than a sub-package of their own:
// they are plain data with no dependency, Kubernetes keeps them beside the
// Pod type too, and almost every package uses both (docs/decisions.md,
// "Packages").
//
// It imports only the standard library; every other internal package may
// import it, and it must import none. It has no mutable package state:
// every function is safe for concurrent use, and the pods it returns belong
// to the caller.
package pod
