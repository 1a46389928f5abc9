package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"tug/internal/pod"
	"tug/internal/podruntime"
)

// holdings is what the pods of tug's containers were given, read back
// from the containers' OCI specs: the host ID block of each pod in a user
// namespace of its own, and the device nodes of each pod. It feeds
// userns.Allocator.Restore and devices.Manager.Restore, so that a lost or
// damaged allocation file never gives what a running pod holds to
// another pod.
type holdings struct {
	idmaps  map[string]pod.IDMapping
	devices map[string][]string
}

// specHoldings is the part of an OCI spec that holdings reads.
type specHoldings struct {
	Linux *struct {
		UIDMappings []struct {
			HostID uint32 `json:"hostID"`
			Size   uint32 `json:"size"`
		} `json:"uidMappings"`
		Devices []struct {
			Path string `json:"path"`
		} `json:"devices"`
		Resources *struct {
			Devices []struct {
				Allow bool   `json:"allow"`
				Type  string `json:"type"`
				Major *int64 `json:"major"`
				Minor *int64 `json:"minor"`
			} `json:"devices"`
		} `json:"resources"`
	} `json:"linux"`
}

// allDevices reports whether the spec's device cgroup allows every device:
// a privileged container's, which gets every host device node and holds
// none of them as a pod's unit.
func (s specHoldings) allDevices() bool {
	if s.Linux.Resources == nil {
		return false
	}
	for _, d := range s.Linux.Resources.Devices {
		if d.Allow && (d.Type == "" || d.Type == "a") && d.Major == nil && d.Minor == nil {
			return true
		}
	}
	return false
}

// containerSpecs lists the OCI specs of tug's containers, oldest first
// (podruntime.Runtime).
type containerSpecs interface {
	ContainerSpecs(ctx context.Context) ([]podruntime.ContainerSpec, error)
}

// readHoldings reads what tug's containers hold from their specs (any
// state: a pod holds its block and devices until it is removed), oldest
// first.
func readHoldings(ctx context.Context, rt containerSpecs) (holdings, error) {
	h := holdings{idmaps: map[string]pod.IDMapping{}, devices: map[string][]string{}}
	specs, err := rt.ContainerSpecs(ctx)
	if err != nil {
		return h, fmt.Errorf("containers' holdings: %w", err)
	}
	for _, cs := range specs {
		var s specHoldings
		if err := json.Unmarshal(cs.Spec, &s); err != nil || s.Linux == nil {
			continue
		}
		uid := cs.PodUID
		if m := s.Linux.UIDMappings; len(m) == 1 && m[0].HostID != 0 {
			h.idmaps[uid] = pod.IDMapping{HostID: m[0].HostID, Size: m[0].Size}
		}
		if s.allDevices() {
			continue
		}
		for _, d := range s.Linux.Devices {
			if strings.HasPrefix(d.Path, "/dev/") && !slices.Contains(h.devices[uid], d.Path) {
				h.devices[uid] = append(h.devices[uid], d.Path)
			}
		}
	}
	return h, nil
}
