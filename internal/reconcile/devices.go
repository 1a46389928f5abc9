package reconcile

import (
	"slices"
	"strings"

	"tug/internal/pod"
	"tug/internal/podstatus"
)

// Devices says which devices a pod's containers were given are gone
// (implemented by devices.Manager): a USB stick pulled out, a CDI spec
// removed.
type Devices interface {
	// Gone returns the devices container c of p was given that are not
	// present now, each named for a message ("/dev/ttyUSB0 of
	// tug.io/serial"), and whether c was given any device.
	Gone(p *pod.Pod, c *pod.Container) (gone []string, has bool)
}

// reasonDeviceAvailable is the Normal event's reason when every device of
// a pod is back (podstatus.ReasonDeviceUnavailable is the Warning's, when
// one goes).
const reasonDeviceAvailable = "DeviceAvailable"

// devicesNote is what the last sync found of a pod's devices.
type devicesNote struct {
	has    bool                // a container of the pod was given a device
	gone   []string            // the devices that are not present, sorted
	byName map[string][]string // gone, by the name of the container given them
}

// syncDevices notes which of p's devices are gone, and reports a change
// with an event: Warning DeviceUnavailable when one goes, Normal
// DeviceAvailable when all are back. A container whose devices are gone
// is not started (deviceWait).
func (s *podSyncer) syncDevices(p *pod.Pod) {
	if s.devices == nil {
		return
	}
	d := devicesNote{byName: map[string][]string{}}
	for _, list := range [][]pod.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range list {
			gone, has := s.devices.Gone(p, &list[i])
			d.has = d.has || has
			if len(gone) > 0 {
				d.byName[list[i].Name] = gone
				d.gone = append(d.gone, gone...)
			}
		}
	}
	slices.Sort(d.gone)
	d.gone = slices.Compact(d.gone)
	prev := s.notes.devices(p.Metadata.UID, d)
	switch {
	case slices.Equal(prev.gone, d.gone):
	case len(d.gone) > 0:
		s.event(p, "", eventWarning, podstatus.ReasonDeviceUnavailable, "Device "+strings.Join(d.gone, ", ")+" unavailable")
		s.log.Warn("device of a pod unavailable; the containers that use it are not restarted until it is back",
			"pod", p.FullName(), "uid", p.Metadata.UID, "devices", d.gone)
	default:
		s.event(p, "", eventNormal, reasonDeviceAvailable, "Every device of the pod is available")
		s.log.Info("devices of a pod available again", "pod", p.FullName(), "uid", p.Metadata.UID)
	}
}
