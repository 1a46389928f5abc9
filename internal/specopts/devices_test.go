package specopts

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

type fakeInjector struct{ got []string }

func (f *fakeInjector) InjectCDI(s *specs.Spec, names []string) error {
	f.got = names
	if slices.Contains(names, "bad") {
		return errors.New("unresolvable")
	}
	s.Process.Env = append(s.Process.Env, "INJECTED=1")
	return nil
}

func TestWithDeviceNodes(t *testing.T) {
	ctx := namespaces.WithNamespace(context.Background(), "test")
	node := func(path string, minor int64, access string) DeviceNode {
		return DeviceNode{LinuxDevice: specs.LinuxDevice{Path: path, Type: "c", Major: 1, Minor: minor}, Access: access}
	}
	tests := []struct {
		name        string
		nodes       []DeviceNode
		wantDevices int
		wantRules   []string // access of the allow rules added
		wantErr     bool
	}{
		{"none", nil, 0, nil, false},
		{"two", []DeviceNode{node("/dev/a", 3, "rw"), node("/dev/b", 5, "r")}, 2, []string{"rw", "r"}, false},
		{"bad type", []DeviceNode{{LinuxDevice: specs.LinuxDevice{Path: "/dev/p", Type: "p"}, Access: "rw"}}, 0, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s oci.Spec
			err := oci.ApplyOpts(ctx, nil, &containers.Container{ID: "c"}, &s, WithDeviceNodes(tt.nodes))
			if tt.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var devs int
			var rules []string
			if s.Linux != nil {
				devs = len(s.Linux.Devices)
				for _, r := range s.Linux.Resources.Devices {
					if r.Allow {
						rules = append(rules, r.Access)
						if *r.Major != 1 {
							t.Errorf("rule %+v: wrong major", r)
						}
					}
				}
			}
			if devs != tt.wantDevices || !slices.Equal(rules, tt.wantRules) {
				t.Errorf("devices %d rules %v; want %d and %v", devs, rules, tt.wantDevices, tt.wantRules)
			}
		})
	}
}

func TestWithCDIDevices(t *testing.T) {
	ctx := namespaces.WithNamespace(context.Background(), "test")
	inj := &fakeInjector{}
	s := oci.Spec{Process: &specs.Process{}}
	if err := oci.ApplyOpts(ctx, nil, &containers.Container{ID: "c"}, &s, WithCDIDevices(inj, nil)); err != nil || inj.got != nil {
		t.Fatalf("no names: %v, injector called with %v", err, inj.got)
	}
	if err := oci.ApplyOpts(ctx, nil, &containers.Container{ID: "c"}, &s, WithCDIDevices(inj, []string{"a.com/b=c"})); err != nil || !slices.Contains(s.Process.Env, "INJECTED=1") {
		t.Fatalf("inject: %v, env %v", err, s.Process.Env)
	}
	if err := oci.ApplyOpts(ctx, nil, &containers.Container{ID: "c"}, &s, WithCDIDevices(inj, []string{"bad"})); err == nil {
		t.Fatal("an injector's error was lost")
	}
	if err := oci.ApplyOpts(ctx, nil, &containers.Container{ID: "c"}, &s, WithCDIDevices(nil, []string{"a.com/b=c"})); err == nil {
		t.Fatal("names without a registry were accepted")
	}
}
