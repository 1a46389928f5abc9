package policy

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"tug/internal/pod"
)

func ptr[T any](v T) *T { return &v }

// basePod is a pod every level admits.
func basePod() *pod.Pod {
	return &pod.Pod{
		Metadata: pod.ObjectMeta{Name: "web", Namespace: "default", Source: "http://fleet/pods"},
		Spec: pod.PodSpec{
			SecurityContext: &pod.PodSecurityContext{RunAsNonRoot: ptr(true), SeccompProfile: &pod.SeccompProfile{Type: pod.SeccompRuntimeDefault}},
			Containers: []pod.Container{{Name: "app", Image: "busybox", SecurityContext: &pod.SecurityContext{
				AllowPrivilegeEscalation: ptr(false),
				Capabilities:             &pod.Capabilities{Drop: []string{"ALL"}},
			}}},
		},
	}
}

func sc(p *pod.Pod) *pod.SecurityContext { return p.Spec.Containers[0].SecurityContext }

const c0 = "spec.containers[0].securityContext"

func TestCheck(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(p *pod.Pod)
		// want maps a level to the violation paths expected there.
		baseline, restricted []string
	}{
		{"compliant", func(*pod.Pod) {}, nil, nil},
		{"hostNetwork", func(p *pod.Pod) { p.Spec.HostNetwork = true }, []string{"spec.hostNetwork"}, []string{"spec.hostNetwork"}},
		{"privileged", func(p *pod.Pod) { sc(p).Privileged = ptr(true) }, []string{c0 + ".privileged"}, []string{c0 + ".privileged"}},
		{"privileged false", func(p *pod.Pod) { sc(p).Privileged = ptr(false) }, nil, nil},
		{"add ALL", func(p *pod.Pod) { sc(p).Capabilities.Add = []string{"ALL"} }, []string{c0 + ".capabilities.add[0]"}, []string{c0 + ".capabilities.add[0]"}},
		{"add SYS_ADMIN", func(p *pod.Pod) { sc(p).Capabilities.Add = []string{"CHOWN", "CAP_SYS_ADMIN"} },
			[]string{c0 + ".capabilities.add[1]"}, []string{c0 + ".capabilities.add[0]", c0 + ".capabilities.add[1]"}},
		{"add baseline set", func(p *pod.Pod) {
			sc(p).Capabilities.Add = []string{"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
		}, nil, []string{c0 + ".capabilities.add[0]", c0 + ".capabilities.add[1]", c0 + ".capabilities.add[2]", c0 + ".capabilities.add[3]", c0 + ".capabilities.add[4]", c0 + ".capabilities.add[5]", c0 + ".capabilities.add[6]", c0 + ".capabilities.add[7]", c0 + ".capabilities.add[8]", c0 + ".capabilities.add[9]", c0 + ".capabilities.add[10]", c0 + ".capabilities.add[11]"}},
		{"add NET_BIND_SERVICE", func(p *pod.Pod) { sc(p).Capabilities.Add = []string{"NET_BIND_SERVICE"} }, nil, nil},
		{"add NET_RAW", func(p *pod.Pod) { sc(p).Capabilities.Add = []string{"NET_RAW"} }, []string{c0 + ".capabilities.add[0]"}, []string{c0 + ".capabilities.add[0]"}},
		{"no drop ALL", func(p *pod.Pod) { sc(p).Capabilities.Drop = []string{"NET_RAW"} }, nil, []string{c0 + ".capabilities.drop"}},
		{"hostPath", func(p *pod.Pod) {
			p.Spec.Volumes = []pod.Volume{{Name: "a", EmptyDir: &pod.EmptyDirVolumeSource{}}, {Name: "h", HostPath: &pod.HostPathVolumeSource{Path: "/srv"}}}
		}, []string{"spec.volumes[1].hostPath"}, []string{"spec.volumes[1].hostPath"}},
		{"hostPort", func(p *pod.Pod) {
			p.Spec.Containers[0].Ports = []pod.ContainerPort{{ContainerPort: 80}, {ContainerPort: 81, HostPort: 8081}}
		}, []string{"spec.containers[0].ports[1].hostPort"}, []string{"spec.containers[0].ports[1].hostPort"}},
		{"pod seccomp Unconfined", func(p *pod.Pod) { p.Spec.SecurityContext.SeccompProfile.Type = pod.SeccompUnconfined },
			[]string{"spec.securityContext.seccompProfile.type"}, []string{"spec.securityContext.seccompProfile.type", c0 + ".seccompProfile.type"}},
		{"container seccomp Unconfined", func(p *pod.Pod) { sc(p).SeccompProfile = &pod.SeccompProfile{Type: pod.SeccompUnconfined} },
			[]string{c0 + ".seccompProfile.type"}, []string{c0 + ".seccompProfile.type"}},
		{"seccomp unset", func(p *pod.Pod) { p.Spec.SecurityContext.SeccompProfile = nil }, nil, []string{c0 + ".seccompProfile.type"}},
		{"pod AppArmor Unconfined", func(p *pod.Pod) {
			p.Spec.SecurityContext.AppArmorProfile = &pod.AppArmorProfile{Type: pod.AppArmorUnconfined}
		}, []string{"spec.securityContext.appArmorProfile.type"}, []string{"spec.securityContext.appArmorProfile.type"}},
		{"container AppArmor Unconfined", func(p *pod.Pod) { sc(p).AppArmorProfile = &pod.AppArmorProfile{Type: pod.AppArmorUnconfined} },
			[]string{c0 + ".appArmorProfile.type"}, []string{c0 + ".appArmorProfile.type"}},
		{"AppArmor RuntimeDefault", func(p *pod.Pod) { sc(p).AppArmorProfile = &pod.AppArmorProfile{Type: pod.AppArmorRuntimeDefault} }, nil, nil},
		{"seccomp on container only", func(p *pod.Pod) {
			p.Spec.SecurityContext.SeccompProfile = nil
			sc(p).SeccompProfile = &pod.SeccompProfile{Type: pod.SeccompLocalhost, LocalhostProfile: ptr("a.json")}
		}, nil, nil},
		{"allowPrivilegeEscalation unset", func(p *pod.Pod) { sc(p).AllowPrivilegeEscalation = nil }, nil, []string{c0 + ".allowPrivilegeEscalation"}},
		{"allowPrivilegeEscalation true", func(p *pod.Pod) { sc(p).AllowPrivilegeEscalation = ptr(true) }, nil, []string{c0 + ".allowPrivilegeEscalation"}},
		{"runAsNonRoot unset", func(p *pod.Pod) { p.Spec.SecurityContext.RunAsNonRoot = nil }, nil, []string{c0 + ".runAsNonRoot"}},
		{"runAsNonRoot on container only", func(p *pod.Pod) { p.Spec.SecurityContext.RunAsNonRoot = nil; sc(p).RunAsNonRoot = ptr(true) }, nil, nil},
		{"runAsNonRoot false on container", func(p *pod.Pod) { sc(p).RunAsNonRoot = ptr(false) }, nil, []string{c0 + ".runAsNonRoot"}},
		{"runAsNonRoot false on pod", func(p *pod.Pod) { p.Spec.SecurityContext.RunAsNonRoot = ptr(false) },
			nil, []string{"spec.securityContext.runAsNonRoot", c0 + ".runAsNonRoot"}},
		{"runAsUser 0", func(p *pod.Pod) { p.Spec.SecurityContext.RunAsUser = ptr(int64(0)); sc(p).RunAsUser = ptr(int64(0)) },
			nil, []string{"spec.securityContext.runAsUser", c0 + ".runAsUser"}},
		{"runAsUser 1000", func(p *pod.Pod) { sc(p).RunAsUser = ptr(int64(1000)) }, nil, nil},
		{"init container", func(p *pod.Pod) { p.Spec.InitContainers = []pod.Container{{Name: "init", Image: "busybox"}} },
			nil, []string{"spec.initContainers[0].securityContext.allowPrivilegeEscalation", "spec.initContainers[0].securityContext.capabilities.drop"}},
		{"no securityContext at all", func(p *pod.Pod) { p.Spec.SecurityContext = nil; p.Spec.Containers[0].SecurityContext = nil },
			nil, []string{c0 + ".allowPrivilegeEscalation", c0 + ".runAsNonRoot", c0 + ".seccompProfile.type", c0 + ".capabilities.drop"}},
		// A pod in its own user namespace: its root is an unprivileged host
		// ID, so the non-root checks are relaxed (and only those).
		{"userns runAsNonRoot unset", func(p *pod.Pod) { p.Spec.HostUsers = ptr(false); p.Spec.SecurityContext.RunAsNonRoot = nil }, nil, nil},
		{"userns runAsUser 0", func(p *pod.Pod) {
			p.Spec.HostUsers = ptr(false)
			p.Spec.SecurityContext.RunAsNonRoot = ptr(false)
			p.Spec.SecurityContext.RunAsUser = ptr(int64(0))
			sc(p).RunAsUser = ptr(int64(0))
			sc(p).RunAsNonRoot = ptr(false)
		}, nil, nil},
		{"userns no securityContext at all", func(p *pod.Pod) {
			p.Spec.HostUsers = ptr(false)
			p.Spec.SecurityContext = nil
			p.Spec.Containers[0].SecurityContext = nil
		}, nil, []string{c0 + ".allowPrivilegeEscalation", c0 + ".seccompProfile.type", c0 + ".capabilities.drop"}},
		{"hostUsers true runAsNonRoot unset", func(p *pod.Pod) { p.Spec.HostUsers = ptr(true); p.Spec.SecurityContext.RunAsNonRoot = nil },
			nil, []string{c0 + ".runAsNonRoot"}},
		{"userns privileged", func(p *pod.Pod) { p.Spec.HostUsers = ptr(false); sc(p).Privileged = ptr(true) },
			[]string{c0 + ".privileged"}, []string{c0 + ".privileged"}},
		// Bidirectional propagation needs privileged (validation) and is only
		// meaningful on a hostPath: both are refused by baseline and
		// restricted, as in Kubernetes (no rule of its own for propagation).
		{"Bidirectional hostPath", func(p *pod.Pod) {
			p.Spec.Volumes = []pod.Volume{{Name: "h", HostPath: &pod.HostPathVolumeSource{Path: "/mnt/shared"}}}
			sc(p).Privileged = ptr(true)
			p.Spec.Containers[0].VolumeMounts = []pod.VolumeMount{{Name: "h", MountPath: "/h", MountPropagation: ptr(pod.MountPropagationBidirectional)}}
		}, []string{"spec.volumes[0].hostPath", c0 + ".privileged"}, []string{"spec.volumes[0].hostPath", c0 + ".privileged"}},
		{"HostToContainer hostPath", func(p *pod.Pod) {
			p.Spec.Volumes = []pod.Volume{{Name: "h", HostPath: &pod.HostPathVolumeSource{Path: "/"}}}
			p.Spec.Containers[0].VolumeMounts = []pod.VolumeMount{{Name: "h", MountPath: "/host", MountPropagation: ptr(pod.MountPropagationHostToContainer)}}
		}, []string{"spec.volumes[0].hostPath"}, []string{"spec.volumes[0].hostPath"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, lv := range []struct {
				level Level
				want  []string
			}{{Privileged, nil}, {Baseline, tt.baseline}, {Restricted, tt.restricted}} {
				p := basePod()
				tt.mutate(p)
				var got []string
				for _, v := range Check(p, lv.level) {
					got = append(got, v.Path)
					if v.Level != lv.level {
						t.Errorf("%s: violation %v has level %q", lv.level, v, v.Level)
					}
				}
				if !slices.Equal(got, lv.want) {
					t.Errorf("%s: got %q, want %q", lv.level, got, lv.want)
				}
			}
		})
	}
}

func TestUnknownLevelIsRestricted(t *testing.T) {
	p := basePod()
	sc(p).AllowPrivilegeEscalation = nil
	if v := Check(p, "restrictd"); len(v) != 1 {
		t.Fatalf("got %v, want the restricted violation", v)
	}
}

func TestAdmitMessages(t *testing.T) {
	pl := &Policy{Levels: map[string]Level{"http://fleet/pods": Baseline}}
	p := basePod()
	sc(p).Capabilities.Add = []string{"ALL"}
	err := pl.Admit(p)
	if !errors.Is(err, ErrBlocked) {
		t.Fatalf("Admit: %v, want ErrBlocked", err)
	}
	want := `spec.containers[0].securityContext.capabilities.add[0]: "ALL" is not allowed by the baseline policy of source http://fleet/pods`
	if err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
	sc(p).Capabilities.Add = nil
	sc(p).AllowPrivilegeEscalation = nil
	pl.Levels["http://fleet/pods"] = Restricted
	want = `spec.containers[0].securityContext.allowPrivilegeEscalation: must be false under the restricted policy of source http://fleet/pods`
	if err := pl.Admit(p); err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
	if err := (&Policy{Default: Privileged}).Admit(basePod()); err != nil {
		t.Errorf("compliant pod: %v", err)
	}
}

func TestAllowPrivilegedCeiling(t *testing.T) {
	p := basePod()
	sc(p).Privileged = ptr(true)
	pl := &Policy{Default: Privileged}
	err := pl.Admit(p)
	if err == nil || !strings.Contains(err.Error(), "spec.containers[0].securityContext.privileged: true is not allowed on this node (--allow-privileged is false)") {
		t.Fatalf("without --allow-privileged: %v", err)
	}
	pl.AllowPrivileged = true
	if err := pl.Admit(p); err != nil {
		t.Errorf("with --allow-privileged under privileged: %v", err)
	}
	pl.Default = Baseline
	if err := pl.Admit(p); err == nil {
		t.Error("with --allow-privileged under baseline: admitted")
	}
}

func TestHostStateMounts(t *testing.T) {
	protected := []Protected{
		{"/var/lib/tug", "tug's root dir"},
		{"/run/tug", "tug's run dir"},
		{"/run/containerd/containerd.sock", "containerd's socket"},
		{"/run/containerd", "containerd's socket directory"},
	}
	links := map[string]string{"/var/run/containerd": "/run/containerd", "/srv/link": "/var/lib/tug/pods"}
	resolve := func(p string) (string, error) {
		if r, ok := links[p]; ok {
			return r, nil
		}
		return p, nil
	}
	tests := []struct {
		path    string
		blocked bool
	}{
		{"/", true},
		{"//", true},
		{"/var/lib/tug", true},
		{"/var/lib/tug/", true},
		{"/var/lib/tug/pods/x", true},
		{"/var/lib/./tug", true},
		{"/var/lib/../lib/tug", true},
		{"/var/lib", true},
		{"/var", true},
		{"/run", true},
		{"/run/containerd/containerd.sock", true},
		{"/run/containerd", true},
		{"/var/run/containerd", true},
		{"/srv/link", true},
		{"/var/lib/tugboat", false},
		{"/srv/data", false},
		{"/run/user", false},
		{"/dev/ttyUSB0", false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			p := basePod()
			p.Spec.Volumes = []pod.Volume{{Name: "h", HostPath: &pod.HostPathVolumeSource{Path: tt.path}}}
			pl := &Policy{Default: Privileged, Protected: protected, Resolve: resolve}
			err := pl.Admit(p)
			if (err != nil) != tt.blocked {
				t.Fatalf("Admit(%s) = %v, want blocked %v", tt.path, err, tt.blocked)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "spec.volumes[0].hostPath.path: ") {
				t.Errorf("message %q", err)
			}
			pl.AllowHostStateMounts = true
			if err := pl.Admit(p); err != nil {
				t.Errorf("with --allow-host-state-mounts: %v", err)
			}
		})
	}
}

func TestParseLevel(t *testing.T) {
	for _, s := range []string{"privileged", "baseline", "restricted"} {
		if l, err := ParseLevel(s); err != nil || string(l) != s {
			t.Errorf("ParseLevel(%q) = %q, %v", s, l, err)
		}
	}
	if _, err := ParseLevel("Baseline"); !errors.Is(err, ErrUnknownLevel) {
		t.Errorf("ParseLevel(Baseline) = %v", err)
	}
}

func TestRequireUserNamespaces(t *testing.T) {
	pl := &Policy{Default: Privileged, RequireUserNamespaces: map[string]string{"http://fleet/pods": "url-user-namespaces"}}
	for _, tt := range []struct {
		name      string
		source    string
		hostUsers *bool
		want      string
	}{
		{"unset", "http://fleet/pods", nil, "spec.hostUsers: must be false: pods of source http://fleet/pods run in a user namespace of their own (--url-user-namespaces=required)"},
		{"true", "http://fleet/pods", ptr(true), "spec.hostUsers: must be false"},
		{"false", "http://fleet/pods", ptr(false), ""},
		{"other source", "file:/etc/tug/manifests", nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := basePod()
			p.Metadata.Source, p.Spec.HostUsers = tt.source, tt.hostUsers
			err := pl.Admit(p)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Admit: %v, want nil", err)
			case tt.want != "" && (!errors.Is(err, ErrBlocked) || !strings.HasPrefix(err.Error(), tt.want)):
				t.Errorf("Admit: %v, want %q", err, tt.want)
			}
		})
	}
}
