package specopts

import (
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"tug/internal/pod"
)

func TestWithUserNamespace(t *testing.T) {
	m := &pod.IDMapping{HostID: 131072, Size: 65536}
	want := []specs.LinuxIDMapping{{ContainerID: 0, HostID: 131072, Size: 65536}}
	for _, tt := range []struct {
		name    string
		ns      pod.Namespaces
		sysBind bool // /sys is a read-only bind of the node's
	}{
		{"pinned network namespace", pod.Namespaces{Net: "/run/tug/ns/net/x", IPC: "/run/tug/ns/ipc/x"}, true},
		{"own network namespace", pod.Namespaces{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := mustGenerate(t, WithNamespaces(tt.ns, false), WithUserNamespace(m))
			if !slices.ContainsFunc(s.Linux.Namespaces, func(n specs.LinuxNamespace) bool { return n.Type == specs.UserNamespace && n.Path == "" }) {
				t.Errorf("namespaces %v: no new user namespace", s.Linux.Namespaces)
			}
			if !slices.Equal(s.Linux.UIDMappings, want) || !slices.Equal(s.Linux.GIDMappings, want) {
				t.Errorf("mappings %v / %v, want %v", s.Linux.UIDMappings, s.Linux.GIDMappings, want)
			}
			for _, mt := range s.Mounts {
				if mt.Destination == "/dev/mqueue" {
					t.Errorf("/dev/mqueue is mounted: %+v", mt)
				}
				if mt.Destination == "/sys" {
					bind := mt.Type == "bind" && mt.Source == "/sys" && slices.Contains(mt.Options, "rbind") && slices.Contains(mt.Options, "ro")
					if bind != tt.sysBind || (!bind && mt.Type != "sysfs") {
						t.Errorf("/sys: %+v, want a read-only bind: %v", mt, tt.sysBind)
					}
				}
			}
		})
	}
	s := mustGenerate(t, WithNamespaces(pod.Namespaces{}, false), WithUserNamespace(nil))
	if s.Linux.UIDMappings != nil || slices.ContainsFunc(s.Linux.Namespaces, func(n specs.LinuxNamespace) bool { return n.Type == specs.UserNamespace }) {
		t.Errorf("nil mapping: namespaces %v, mappings %v", s.Linux.Namespaces, s.Linux.UIDMappings)
	}
}
