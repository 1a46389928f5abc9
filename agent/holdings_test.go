package main

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"tug/internal/pod"
	"tug/internal/podruntime"
)

type fakeSpecs struct {
	specs []podruntime.ContainerSpec
	err   error
}

func (f fakeSpecs) ContainerSpecs(context.Context) ([]podruntime.ContainerSpec, error) {
	return f.specs, f.err
}

// TestReadHoldings: what the containers' specs say the pods hold.
func TestReadHoldings(t *testing.T) {
	spec := func(uid, json string) podruntime.ContainerSpec {
		return podruntime.ContainerSpec{PodUID: uid, Spec: []byte(json)}
	}
	tests := []struct {
		name    string
		specs   []podruntime.ContainerSpec
		idmaps  map[string]pod.IDMapping
		devices map[string][]string
	}{
		{name: "nothing", idmaps: map[string]pod.IDMapping{}, devices: map[string][]string{}},
		{
			name:    "a pod in a user namespace of its own",
			specs:   []podruntime.ContainerSpec{spec("u1", `{"linux":{"uidMappings":[{"containerID":0,"hostID":1000000,"size":65536}]}}`)},
			idmaps:  map[string]pod.IDMapping{"u1": {HostID: 1000000, Size: 65536}},
			devices: map[string][]string{},
		},
		{
			name: "the host's IDs and several ranges are no block of tug's",
			specs: []podruntime.ContainerSpec{
				spec("u1", `{"linux":{"uidMappings":[{"containerID":0,"hostID":0,"size":65536}]}}`),
				spec("u2", `{"linux":{"uidMappings":[{"hostID":100,"size":1},{"hostID":200,"size":1}]}}`),
			},
			idmaps: map[string]pod.IDMapping{}, devices: map[string][]string{},
		},
		{
			name: "device nodes under /dev, once per pod, across its containers",
			specs: []podruntime.ContainerSpec{
				spec("u1", `{"linux":{"devices":[{"path":"/dev/ttyUSB0"},{"path":"/run/not-a-device"}]}}`),
				spec("u1", `{"linux":{"devices":[{"path":"/dev/ttyUSB0"},{"path":"/dev/ttyUSB1"}]}}`),
			},
			idmaps:  map[string]pod.IDMapping{},
			devices: map[string][]string{"u1": {"/dev/ttyUSB0", "/dev/ttyUSB1"}},
		},
		{
			name: "a privileged container holds no device as a pod's unit",
			specs: []podruntime.ContainerSpec{spec("u1",
				`{"linux":{"devices":[{"path":"/dev/ttyUSB0"}],"resources":{"devices":[{"allow":true,"access":"rwm"}]}}}`)},
			idmaps: map[string]pod.IDMapping{}, devices: map[string][]string{},
		},
		{
			name:   "a spec that does not parse is skipped",
			specs:  []podruntime.ContainerSpec{spec("u1", `{"linux":`), spec("u2", `{}`)},
			idmaps: map[string]pod.IDMapping{}, devices: map[string][]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := readHoldings(t.Context(), fakeSpecs{specs: tt.specs})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(h.idmaps, tt.idmaps) || !reflect.DeepEqual(h.devices, tt.devices) {
				t.Errorf("holdings = %v, %v; want %v, %v", h.idmaps, h.devices, tt.idmaps, tt.devices)
			}
		})
	}
	if _, err := readHoldings(t.Context(), fakeSpecs{err: errors.New("containerd is down")}); err == nil {
		t.Error("a listing that fails: no error")
	}
}
