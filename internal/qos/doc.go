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
// Each container's cgroup sits below its pod: the pod's path (returned by
// Manager.EnsurePod) is the parent of the container's OCI cgroupsPath, and
// runc creates "<parent>/<container>" with the values of Manager.Container
// (cgroupfs driver).
//
// The conversions mirror the kubelet (pkg/kubelet/cm/helper_linux.go,
// qos_container_manager_linux.go, node_container_manager_linux.go,
// kuberuntime/kuberuntime_container_linux.go, pkg/kubelet/qos/policy.go and
// pkg/apis/core/v1/helper/qos); each function's doc names the one it
// mirrors. tug writes the cgroup files itself rather than through
// containerd/cgroups: the handful of files it sets are the same few lines of
// code for v1 and v2, and it must also clean up after runc in hierarchies no
// library manages for it (the name=systemd and the empty unified hierarchy
// of a hybrid host).
//
// qos imports pod and golang.org/x/sys only; it must not import reconcile,
// podruntime, network or any other adapter (internal/deps_test.go). It has
// no package state; a Manager is safe for concurrent use.
package qos
