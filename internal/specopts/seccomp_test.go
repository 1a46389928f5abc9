package specopts

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/pkg/oci"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"tug/internal/pod"
)

const testProfile = `{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["read","write","exit_group"],"action":"SCMP_ACT_ALLOW"}]}`

// profileDir is a seccomp profile directory with one good profile, a
// symlink inside it, a symlink out of it and a secret beside it.
func profileDir(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "seccomp")
	for _, d := range []string{root, filepath.Join(root, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, data string) {
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "sub", "app.json"), testProfile)
	write(filepath.Join(base, "outside.json"), testProfile)
	write(filepath.Join(root, "garbage.json"), "not json")
	for link, target := range map[string]string{"inside.json": "sub/app.json", "escape.json": "../outside.json", "abs.json": filepath.Join(base, "outside.json"), "up": ".."} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestWithSeccomp(t *testing.T) {
	root := profileDir(t)
	localhost := func(p string) *pod.SeccompProfile {
		return &pod.SeccompProfile{Type: pod.SeccompLocalhost, LocalhostProfile: &p}
	}
	tests := []struct {
		name       string
		profile    *pod.SeccompProfile
		privileged bool
		unconfined bool   // --default-seccomp=unconfined
		want       string // "default", "none", "test", or "error"
	}{
		{name: "tug's default is RuntimeDefault", want: "default"},
		{name: "opt-out of the default", unconfined: true, want: "none"},
		{name: "RuntimeDefault", profile: &pod.SeccompProfile{Type: pod.SeccompRuntimeDefault}, unconfined: true, want: "default"},
		{name: "Unconfined", profile: &pod.SeccompProfile{Type: pod.SeccompUnconfined}, want: "none"},
		{name: "privileged gets none", privileged: true, want: "none"},
		{name: "privileged ignores RuntimeDefault", privileged: true, profile: &pod.SeccompProfile{Type: pod.SeccompRuntimeDefault}, want: "none"},
		{name: "Localhost", profile: localhost("sub/app.json"), want: "test"},
		{name: "Localhost through a symlink inside", profile: localhost("inside.json"), want: "test"},
		{name: "Localhost ../", profile: localhost("../outside.json"), want: "error"},
		{name: "Localhost sub/../../", profile: localhost("sub/../../outside.json"), want: "error"},
		{name: "Localhost absolute", profile: localhost(filepath.Join(filepath.Dir(root), "outside.json")), want: "error"},
		{name: "Localhost symlink out", profile: localhost("escape.json"), want: "error"},
		{name: "Localhost absolute symlink", profile: localhost("abs.json"), want: "error"},
		{name: "Localhost through a dir symlink out", profile: localhost("up/outside.json"), want: "error"},
		{name: "Localhost missing", profile: localhost("nope.json"), want: "error"},
		{name: "Localhost a directory", profile: localhost("sub"), want: "error"},
		{name: "Localhost not JSON", profile: localhost("garbage.json"), want: "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := generate(t, withSecurity(&pod.SecurityContext{Privileged: &tt.privileged}, true),
				withSeccomp(tt.profile, tt.privileged, SeccompConfig{Root: root, DefaultUnconfined: tt.unconfined}))
			if tt.want == "error" {
				if !errors.Is(err, pod.ErrCreateContainerConfig) {
					t.Fatalf("err = %v, want ErrCreateContainerConfig", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sc := s.Linux.Seccomp
			switch tt.want {
			case "none":
				if sc != nil {
					t.Errorf("seccomp = %+v, want none", sc.DefaultAction)
				}
			case "default":
				if sc == nil || sc.DefaultAction != specs.ActErrno || len(sc.Syscalls) < 10 {
					t.Errorf("seccomp = %+v, want containerd's default profile", sc)
				}
			case "test":
				if sc == nil || sc.DefaultAction != specs.ActErrno || len(sc.Syscalls) != 1 || sc.Syscalls[0].Names[0] != "read" {
					t.Errorf("seccomp = %+v, want the test profile", sc)
				}
			}
		})
	}
}

func TestNoNewPrivileges(t *testing.T) {
	for _, tt := range []struct {
		ape  *bool
		want bool
	}{{nil, false}, {boolp(true), false}, {boolp(false), true}} {
		s := mustGenerate(t, withSecurity(&pod.SecurityContext{AllowPrivilegeEscalation: tt.ape}, false))
		if s.Process.NoNewPrivileges != tt.want {
			t.Errorf("allowPrivilegeEscalation %v: noNewPrivileges = %v, want %v", tt.ape, s.Process.NoNewPrivileges, tt.want)
		}
	}
}

func TestWithRunAsNonRoot(t *testing.T) {
	tests := []struct {
		name    string
		imgUID  uint32
		sc      *pod.SecurityContext
		wantErr string
	}{
		{name: "not asked", sc: &pod.SecurityContext{}},
		{name: "image root", sc: &pod.SecurityContext{RunAsNonRoot: boolp(true)}, wantErr: "container has runAsNonRoot and image will run as root"},
		{name: "image non-root", imgUID: 1000, sc: &pod.SecurityContext{RunAsNonRoot: boolp(true)}},
		{name: "runAsUser 0", imgUID: 1000, sc: &pod.SecurityContext{RunAsNonRoot: boolp(true), RunAsUser: i64(0)}, wantErr: "container's runAsUser breaks non-root policy"},
		{name: "runAsUser over an image root", sc: &pod.SecurityContext{RunAsNonRoot: boolp(true), RunAsUser: i64(1000)}},
		{name: "runAsNonRoot false", sc: &pod.SecurityContext{RunAsNonRoot: boolp(false)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := generate(t, oci.WithRootFSPath(imageRoot(t)), WithImageConfig(ocispec.ImageConfig{Cmd: []string{"sh"}}),
				withUser(imageUser(tt.imgUID, 0), tt.sc), withRunAsNonRoot(tt.sc, "default/web", "app"))
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("err = %v", err)
			case tt.wantErr != "" && (!errors.Is(err, pod.ErrCreateContainerConfig) || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("err = %v, want ErrCreateContainerConfig %q", err, tt.wantErr)
			}
		})
	}
}

// TestPodSecurityDefaults: the pod's securityContext is the default of the
// container's, in the spec.
func TestPodSecurityDefaults(t *testing.T) {
	p := &pod.Pod{Metadata: pod.ObjectMeta{Name: "web", Namespace: "default"}}
	p.Spec.SecurityContext = &pod.PodSecurityContext{RunAsUser: i64(1000), RunAsNonRoot: boolp(true),
		SeccompProfile: &pod.SeccompProfile{Type: pod.SeccompUnconfined}}
	c := &pod.Container{Name: "app", Command: []string{"sh"}}
	s := mustGenerate(t, append([]oci.SpecOpts{oci.WithRootFSPath(imageRoot(t))},
		ForContainer(Params{ID: "c1", Pod: p, Container: c, Hostname: "h"})...)...)
	if s.Process.User.UID != 1000 || s.Linux.Seccomp != nil {
		t.Errorf("uid %d seccomp %v, want the pod's 1000 and Unconfined", s.Process.User.UID, s.Linux.Seccomp != nil)
	}
	c.SecurityContext = &pod.SecurityContext{RunAsUser: i64(0), SeccompProfile: &pod.SeccompProfile{Type: pod.SeccompRuntimeDefault}}
	_, err := generate(t, append([]oci.SpecOpts{oci.WithRootFSPath(imageRoot(t))},
		ForContainer(Params{ID: "c1", Pod: p, Container: c, Hostname: "h"})...)...)
	if !errors.Is(err, pod.ErrCreateContainerConfig) {
		t.Errorf("container runAsUser 0 under the pod's runAsNonRoot: err = %v", err)
	}
}
