package specopts

import (
	"context"
	"fmt"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// DeviceNode is a host device node given to a container: the node the
// runtime creates in the container (Path, type, numbers, mode, owner) and
// the cgroup access the container gets to it.
type DeviceNode struct {
	specs.LinuxDevice
	// Access is the cgroup access: a non-empty subset of "rwm".
	Access string
}

// WithDeviceNodes adds each node to the spec's linux.devices (replacing
// one at the same path) and allows its type and numbers with its access in
// the device cgroup rules, after the default deny. A privileged container
// has every host device already; the nodes are added all the same.
func WithDeviceNodes(nodes []DeviceNode) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if len(nodes) == 0 {
			return nil
		}
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		if s.Linux.Resources == nil {
			s.Linux.Resources = &specs.LinuxResources{}
		}
		for _, n := range nodes {
			if n.Type != "c" && n.Type != "b" {
				return fmt.Errorf("device %s: type %q is not c or b", n.Path, n.Type)
			}
			replaced := false
			for i := range s.Linux.Devices {
				if s.Linux.Devices[i].Path == n.Path {
					s.Linux.Devices[i], replaced = n.LinuxDevice, true
				}
			}
			if !replaced {
				s.Linux.Devices = append(s.Linux.Devices, n.LinuxDevice)
			}
			major, minor := n.Major, n.Minor
			s.Linux.Resources.Devices = append(s.Linux.Resources.Devices, specs.LinuxDeviceCgroup{
				Allow: true, Type: n.Type, Major: &major, Minor: &minor, Access: n.Access,
			})
		}
		return nil
	}
}

// CDIInjector applies the edits of CDI devices, named by their fully
// qualified names ("vendor.com/class=name"), to a spec (implemented by
// devices.Manager through the CDI library).
type CDIInjector interface {
	InjectCDI(s *specs.Spec, names []string) error
}

// WithCDIDevices injects the CDI devices names into the spec through inj:
// device nodes, cgroup rules, mounts, env and hooks, as their CDI specs
// say. No names: nothing is done.
func WithCDIDevices(inj CDIInjector, names []string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if len(names) == 0 {
			return nil
		}
		if inj == nil {
			return fmt.Errorf("inject CDI devices %v: no CDI registry", names)
		}
		return inj.InjectCDI(s, names)
	}
}
