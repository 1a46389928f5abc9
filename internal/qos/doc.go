// Package qos owns tug's QoS cgroup tree: the QoS class of a pod, computed
// exactly as Kubernetes computes it (Class), the cgroup values of pods and
// containers computed with the kubelet's published formulas (convert.go),
// and the cgroup directories themselves on the host's cgroup filesystem
// (Manager), on cgroup v2 (unified) as well as on v1 and hybrid hosts.
//
// The tree, below the hierarchy root of every controller tug uses:
//
//	/<root>                  node allocatable: cpu shares/weight, memory limit
//	/<root>/pod<uid>         Guaranteed pods
//	/<root>/burstable        shares/weight from the cpu requests of its pods
//	/<root>/burstable/pod<uid>
//	/<root>/besteffort       minimal shares (2; weight 1 on v2)
//	/<root>/besteffort/pod<uid>
//
// Root is the tug instance's own: List and RemovePod (housekeeping's view
// of the tree) touch only pod cgroups below it, so tugs with different
// roots never see each other's pods. Two tugs on one host need different
// roots (--cgroup-root), as they need different containerd namespaces.
//
// Each container's cgroup sits below its pod: the pod's path (returned by
// Manager.EnsurePod) is the parent of the container's OCI cgroupsPath, and
// runc creates "<parent>/<container>" with the values of Manager.Container
// (cgroupfs driver).
//
// The conversions mirror the kubelet (pkg/kubelet/cm/helper_linux.go,
// qos_container_manager_linux.go, node_container_manager_linux.go,
// kuberuntime/kuberuntime_container_linux.go, pkg/kubelet/qos/policy.go and
// pkg/apis/core/v1/helper/qos); each function's doc names the one it
// mirrors.
//
// Libraries and hand-written code: the cgroup mounts are read with
// github.com/moby/sys/mountinfo. The cgroup files are written by this
// package, not through github.com/containerd/cgroups/v3 (the design's
// choice), which was tried piece by piece and kept out (docs/decisions.md,
// "Cgroups and QoS"): its v1 Update stops at the first file the kernel
// refuses, where tug must go on and defer only a quota or limit a running
// container holds up (EINVAL/EBUSY); its v2 memory.max is an int64, so a
// limit cannot go back to "max"; its removal covers the hierarchies it
// manages, not the name=systemd and unified hierarchies of a hybrid host
// where runc also creates each container's cgroup; and it would add 1.7 MB
// (cilium/ebpf, go-systemd, dbus) to the binary every tug and every
// per-container log driver runs. The handful of files tug sets are the same
// few lines for v1 and v2. Reading cgroup statistics (memory.stat,
// memory.events) is where the library would serve first, when a feature
// needs them.
//
// qos imports pod, github.com/moby/sys/mountinfo and golang.org/x/sys only; it must not import reconcile,
// podruntime, network or any other adapter (internal/deps_test.go). It has
// no package state; a Manager is safe for concurrent use.
package qos
