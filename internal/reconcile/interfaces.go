package reconcile

import (
	"context"
	"net/netip"
	"time"

	"tug/internal/pod"
)

// Runtime is what a pod worker needs from the container runtime
// (implemented by podruntime). Containers are found by their labels, never
// by memory alone.
type Runtime interface {
	// PodContainers lists every container of the pod with this UID (all
	// attempts, init and app), oldest first.
	PodContainers(ctx context.Context, uid string) ([]pod.RuntimeContainer, error)
	// PreparePod creates what the pod's containers mount: emptyDir volumes
	// (tmpfs for medium Memory), hostPath checks and creation by type, and the
	// pod's /etc/hostname, /etc/hosts (with the sandbox's IP) and
	// /etc/resolv.conf files, and returns sb with what the pod's
	// containers start in besides (its user namespace mapping, for a pod
	// with hostUsers: false). Idempotent.
	PreparePod(ctx context.Context, p *pod.Pod, sb pod.Sandbox) (pod.Sandbox, error)
	// StartContainer makes the image present (honouring imagePullPolicy),
	// creates the container with tug's labels and the OCI spec built from the
	// pod, joins the sandbox (namespaces, a cgroup below its cgroup parent)
	// with the given resources, sends its output to the pod's log file for
	// this attempt and starts its task. sb is the one PreparePod returned.
	// It returns the container ID.
	StartContainer(ctx context.Context, p *pod.Pod, c *pod.Container, init bool, attempt int, sb pod.Sandbox, res pod.LinuxResources) (string, error)
	// WaitContainer blocks until the container's task has exited and
	// returns its exit code (at once if it already has).
	WaitContainer(ctx context.Context, id string) (int, error)
	// StopContainer sends SIGTERM, waits up to grace, then SIGKILL, and
	// deletes the task. A container without a task is not an error.
	StopContainer(ctx context.Context, id string, grace time.Duration) error
	// RemoveContainer deletes the container and its snapshot. A missing
	// container is not an error.
	RemoveContainer(ctx context.Context, id string) error
	// CleanupPod removes what PreparePod made and the pod's log directory.
	// The pod's containers must already be removed.
	CleanupPod(ctx context.Context, p *pod.Pod) error
}

// Sandbox pins a pod's namespaces (implemented by network).
type Sandbox interface {
	// EnsureNamespaces creates (or finds) the pod's pinned net, ipc and uts
	// namespaces; a hostNetwork pod gets the host's net and uts.
	EnsureNamespaces(ctx context.Context, p *pod.Pod) (pod.Namespaces, error)
	// RemoveNamespaces unmounts and deletes the pod's pinned namespaces. A
	// pod with none is not an error.
	RemoveNamespaces(ctx context.Context, uid string) error
	// List returns the UIDs of the pods that have pinned namespaces.
	List() ([]string, error)
}

// Network connects pods that are not hostNetwork to the pod network
// (implemented by network.Pods).
type Network interface {
	// SetUp gives the pod, in its pinned network namespace netns, an
	// address (the same one again for the same UID), a link to the bridge,
	// a default route and its hostPort rules, and returns the address.
	// Idempotent. Its errors name the pod.
	SetUp(ctx context.Context, p *pod.Pod, netns string) (netip.Addr, error)
	// TearDown removes the pod's link, rules and address lease. Nothing
	// left to remove is not an error.
	TearDown(ctx context.Context, uid string) error
	// List returns the UIDs that own a lease, link or rule.
	List() ([]string, error)
	// HostIP is the node's address, reported as each pod's hostIP.
	HostIP() netip.Addr
}

// Cgroups places pods in the QoS cgroup tree (implemented by qos.Manager).
type Cgroups interface {
	// EnsurePod creates or updates the pod's cgroup and returns its path,
	// the parent of its containers' cgroups. Idempotent.
	EnsurePod(ctx context.Context, p *pod.Pod) (string, error)
	// Container returns a container's cgroup values and OOM score.
	Container(p *pod.Pod, c *pod.Container) pod.LinuxResources
	// RemovePod removes the pod's cgroup. A missing one is not an error.
	RemovePod(ctx context.Context, uid string) error
	// List returns the UIDs that have a pod cgroup.
	List() ([]string, error)
	// QOSClass is the pod's QoS class, for its status.
	QOSClass(p *pod.Pod) string
}

// ContainerCache is the PLEG's view of tug's containers (implemented by
// pleg.PLEG).
type ContainerCache interface {
	PodContainers(uid string) []pod.RuntimeContainer
	All() []pod.RuntimeContainer
}

// Ownership answers, for housekeeping, whether a source has reported and
// whether it still wants a pod (implemented by podconfig.Store). Both
// answers come from one look, so a pod the store has just added is never
// taken for an orphan.
type Ownership interface {
	Owns(source, uid string) (ready, wanted bool)
}

// ClaimSet lists the PersistentVolumeClaims the sources define now and
// those the desired pods mount (implemented by podconfig.Store).
type ClaimSet interface {
	Claims() []pod.ClaimKey
}

// ClaimRemover removes the local directories of claims (implemented by
// volume.Manager).
type ClaimRemover interface {
	// RemoveClaims removes every claim directory whose key is not in keep,
	// except those retained (a StatefulSet's claims, which outlive it),
	// and returns the directories removed.
	RemoveClaims(keep map[pod.ClaimKey]bool) ([]string, error)
}

// PodDirs lists and removes what pods leave on disk: their directory under
// <root-dir>/pods and their log directories (implemented by
// podruntime.Runtime).
type PodDirs interface {
	// PodDirUIDs returns the UIDs that have a pod or log directory.
	PodDirUIDs() ([]string, error)
	// RemovePodDirs removes the pod and log directories of uid.
	RemovePodDirs(uid string) error
}

// Admission decides whether a pod may run on this node (implemented by
// policy.Policy, and by agent's composition of it with the device
// manager). It is asked on every sync of the pod: the policy's answer is
// pure, and the device manager gives an admitted pod the same devices
// every time (it frees them when the runtime cleans the pod up).
type Admission interface {
	// Admit returns nil, or why the pod is refused: the error's text (one
	// violation per line) becomes the pod's Blocked status message.
	Admit(p *pod.Pod) error
}
