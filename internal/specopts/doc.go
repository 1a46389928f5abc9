// Package specopts builds the OCI runtime spec of a pod's containers from
// the manifest: pure oci.SpecOpts (process, command and args with
// Kubernetes' $(VAR) expansion, environment, user and groups, capabilities
// or privileged mode, no_new_privs, seccomp profiles read beneath their
// root, read-only root, namespaces, hostname, mounts, the cgroup below the
// pod's, resources, rlimits). Every option works with a nil client, so a
// spec is tested without containerd (oci.GenerateSpec).
package specopts
