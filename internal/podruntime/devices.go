package podruntime

import (
	"tug/internal/pod"
	"tug/internal/specopts"
)

// Devices is what the runtime needs of the node's devices (implemented by
// devices.Manager).
type Devices interface {
	// ContainerDevices returns the host device nodes and the fully
	// qualified CDI device names container c of p gets.
	ContainerDevices(p *pod.Pod, c *pod.Container) ([]specopts.DeviceNode, []string, error)
	// InjectCDI applies CDI devices to a spec.
	specopts.CDIInjector
	// Release frees what pod uid holds.
	Release(uid string) error
}
