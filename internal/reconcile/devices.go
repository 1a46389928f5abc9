package reconcile

import (
	"slices"
	"strings"

	"tug/internal/pod"
	"tug/internal/podplan"
	"tug/internal/podstatus"
)

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

// noteDevices notes which of p's devices are gone (f, as the FactsHooks
// filled it), and reports a change with an event: Warning
// DeviceUnavailable when one goes, Normal DeviceAvailable when all are
// back. A container whose devices are gone is not started (the plan's
// WaitDevice).
func (s *podSyncer) noteDevices(p *pod.Pod, f podplan.Facts) {
	d := devicesNote{has: f.HasDevices, byName: f.GoneDevices}
	for _, gone := range f.GoneDevices {
		d.gone = append(d.gone, gone...)
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
