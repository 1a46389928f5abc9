package podruntime

import (
	"context"
	"fmt"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/errdefs"
	"github.com/opencontainers/image-spec/identity"

	"tug/internal/pod"
)

// UserNamespaces gives each pod with hostUsers: false its block of host
// IDs (implemented by userns.Allocator).
type UserNamespaces interface {
	// Mapping returns the pod's block, the same one for as long as the pod
	// holds it.
	Mapping(uid string) (pod.IDMapping, error)
	// Release frees the pod's block; a pod with none is not an error.
	Release(uid string) error
}

// ErrUserNamespacesUnavailable is returned for a pod with hostUsers: false
// on a runtime given no UserNamespaces.
var ErrUserNamespacesUnavailable = fmt.Errorf("%w: hostUsers: false, but this node gives pods no user namespace", pod.ErrCreateContainerConfig)

// withUserNS returns sb with the pod's user namespace mapping set when the
// pod runs in a user namespace of its own (hostUsers: false).
func (r *Runtime) withUserNS(p *pod.Pod, sb pod.Sandbox) (pod.Sandbox, error) {
	if !p.UserNamespace() {
		sb.UserNS = nil
		return sb, nil
	}
	if r.cfg.UserNamespaces == nil {
		return sb, ErrUserNamespacesUnavailable
	}
	m, err := r.cfg.UserNamespaces.Mapping(p.Metadata.UID)
	if err != nil {
		return sb, fmt.Errorf("user namespace of pod %s: %w", p.FullName(), err)
	}
	sb.UserNS = &m
	return sb, nil
}

// withSnapshot makes the container's new snapshot of img. In a pod's user
// namespace it is a remapped snapshot: containerd copies the image's
// layers once per image and block into a snapshot whose files belong to
// the block (file owner + idmap.HostID), shared by later containers of the
// same image and block. runc 1.1 cannot make idmapped mounts, which would
// map the image's own layers instead. containerd's option leaves its
// working snapshot behind when the copy fails or tug dies during it, and
// then fails on it at every later try: a leftover is removed first (a
// block is one pod's, whose containers start one at a time).
func (r *Runtime) withSnapshot(id string, img containerd.Image, idmap *pod.IDMapping) containerd.NewContainerOpts {
	if idmap == nil {
		return containerd.WithNewSnapshot(id, img)
	}
	remapped := containerd.WithRemappedSnapshot(id, img, idmap.HostID, idmap.HostID)
	return func(ctx context.Context, client *containerd.Client, c *containers.Container) error {
		diffIDs, err := img.RootFS(ctx)
		if err != nil {
			return fmt.Errorf("layers of %s: %w", img.Name(), err)
		}
		work := fmt.Sprintf("%s-%d-%d-remap", identity.ChainID(diffIDs), idmap.HostID, idmap.HostID)
		if err := client.SnapshotService(r.cfg.Snapshotter).Remove(ctx, work); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("remove leftover snapshot %s: %w", work, err)
		}
		return remapped(ctx, client, c)
	}
}
