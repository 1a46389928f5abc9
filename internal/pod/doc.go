// Package pod owns tug's manifest types (a Kubernetes Pod v1 subset), their
// strict decoding with file:line:col errors, defaults, validation, static pod
// naming, the deterministic pod UID and per-container spec hashes, and the
// plain data types the other packages exchange about a pod: what a source
// read (Manifest), what a pod's containers share (Sandbox), what the runtime
// found (RuntimeContainer) and what the status API shows (Status, View).
//
// Parse is the entry point for manifest bytes: it decodes YAML or JSON
// through yaml.Node with a reflection-based decoder of its own, so that every
// problem in a file is reported at once as a *FieldError
// ("web.yaml:12:7: spec.containers[0].image: required"), then applies
// SetDefaults, names the pods and runs the checks of Validate. A Kubernetes
// field tug does not implement is an error of its own ("not supported by tug
// yet"), never silently ignored.
//
// One job per file:
//
//	types.go               the manifest types (Pod, PodSpec, Container, ...)
//	quantity.go            Quantity, Kubernetes resource quantities
//	parse.go               Parse: documents, kinds, lists, naming the pods
//	decode.go              the strict yaml.Node decoder
//	decode_fields.go       field tables of the decoder, "did you mean" hints
//	unsupported.go         Kubernetes fields tug rejects as not supported yet
//	defaults.go            SetDefaults, DefaultPullPolicy, GracePeriod
//	validate.go            Validate
//	validate_names.go      name, label and port-name syntax (apimachinery's rules)
//	validate_capabilities.go  the Linux capability names
//	truncate.go            caps on sizes, Truncate for values echoed in errors
//	identity.go            UID, FullName, Hostname
//	hash.go                Pod.Hash, ContainerHash
//	errors.go              sentinels, FieldError, HostPortInUseError
//	manifest.go            Origin, Manifest: what a source read from one file
//	sandbox.go             Namespaces, Sandbox, LinuxResources: runtime inputs
//	runtimecontainer.go    RunState, RuntimeContainer: the runtime's view
//	status.go              Status, ContainerStatus, phases, conditions, reasons
//	view.go                View, List, ManifestStatus, FetchStatus: API shapes
//
// The observed-state types (status.go, view.go, runtimecontainer.go) stay in
// this package rather than a sub-package of their own: they are plain data
// with no dependency, Kubernetes keeps them beside the Pod type too, and
// almost every package uses both (docs/decisions.md, "Packages").
//
// Objects beside pods (ConfigMap, Secret, PersistentVolumeClaim) are not
// implemented yet. Their types, strict decoding and validation will go here,
// one file per kind (configmap.go, secret.go, pvc.go), because Parse reads
// them from the same files and documents as pods with the same decoder;
// resolving a pod's references to them (env, envFrom, volumes) into plain
// values will be a package of its own, internal/objects, which imports pod.
//
// It imports only the standard library and gopkg.in/yaml.v3; every other
// internal package may import it, and it must import none. It has no mutable
// package state: every function is safe for concurrent use, and the pods it
// returns belong to the caller.
package pod
