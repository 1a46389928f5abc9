package main

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"tug/internal/config"
	"tug/internal/devices"
	"tug/internal/pod"
	"tug/internal/policy"
)

// devicesStateFile is where the devices held by pods are recorded, below
// --root-dir.
const devicesStateFile = "devices/allocations.json"

// newDevices builds the node's device manager: the resources of
// --device-resource, the CDI registry of --cdi-spec-dirs, and the
// allocations kept in <root-dir>/devices/allocations.json.
func newDevices(cfg config.Config, log *slog.Logger) (*devices.Manager, error) {
	res, err := devices.ParseResources(cfg.DeviceResource)
	if err != nil {
		return nil, fmt.Errorf("--device-resource: %w", err)
	}
	return devices.New(devices.Config{
		Resources:   res,
		CDISpecDirs: cfg.CDISpecDirs,
		StateFile:   filepath.Join(cfg.RootDir, devicesStateFile),
		Log:         log,
	})
}

// admission is the node's admission: the policy (levels, node-wide
// rules, the node's labels and taints, the devices each source may use),
// then the allocation of the devices the pod asks for, which refuses it
// with OutOf<resource> when too few are free.
type admission struct {
	policy  *policy.Policy
	devices *devices.Manager
}

// Admit returns nil when p may run and holds its devices.
func (a admission) Admit(p *pod.Pod) error {
	if err := a.policy.Admit(p); err != nil {
		return err
	}
	return a.devices.Admit(p)
}
