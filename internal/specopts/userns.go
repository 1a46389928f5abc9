package specopts

import (
	"context"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"tug/internal/pod"
)

// WithUserNamespace runs the container in a user namespace of its own that
// maps container IDs 0 to m.Size-1 (UIDs and GIDs alike) to the pod's
// block of host IDs from m.HostID; nil does nothing. Every container of
// the pod gets the same mapping, so its files and its processes have the
// same owners in all of them. Apply after WithNamespaces and the default
// mounts.
//
// The pod's network and IPC namespaces are tug's, pinned in the node's
// user namespace; runc joins them before it creates the user namespace,
// and a user namespace that does not own them may not mount their
// filesystems: /sys is then a read-only recursive bind of the node's
// sysfs (runc 1.1 cannot mount a new one) and /dev/mqueue is not mounted.
func WithUserNamespace(m *pod.IDMapping) oci.SpecOpts {
	return func(ctx context.Context, client oci.Client, c *containers.Container, s *oci.Spec) error {
		if m == nil {
			return nil
		}
		idmap := []specs.LinuxIDMapping{{ContainerID: 0, HostID: m.HostID, Size: m.Size}}
		if err := oci.WithUserNamespace(idmap, idmap)(ctx, client, c, s); err != nil {
			return err
		}
		joinsNet := false
		if s.Linux != nil {
			for _, n := range s.Linux.Namespaces {
				if n.Type == specs.NetworkNamespace && n.Path != "" {
					joinsNet = true
				}
			}
		}
		mounts := s.Mounts[:0]
		for _, mt := range s.Mounts {
			switch {
			case mt.Destination == "/dev/mqueue" && mt.Type == "mqueue":
				continue
			case mt.Destination == "/sys" && mt.Type == "sysfs" && joinsNet:
				mt = specs.Mount{Destination: "/sys", Type: "bind", Source: "/sys",
					Options: []string{"rbind", "nosuid", "noexec", "nodev", "ro"}}
			}
			mounts = append(mounts, mt)
		}
		s.Mounts = mounts
		return nil
	}
}
