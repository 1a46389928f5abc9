package specopts

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/oci"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"tug/internal/pod"
	"tug/internal/volume"
)

// imageUser is the USER of an image whose config gives uid:gid ("" for
// root).
func imageUser(uid, gid uint32) string {
	if uid == 0 && gid == 0 {
		return ""
	}
	return strconv.FormatUint(uint64(uid), 10) + ":" + strconv.FormatUint(uint64(gid), 10)
}

func generate(t *testing.T, opts ...oci.SpecOpts) (*oci.Spec, error) {
	t.Helper()
	ctx := namespaces.WithNamespace(context.Background(), "test")
	return oci.GenerateSpec(ctx, nil, &containers.Container{ID: "c1"}, opts...)
}

func mustGenerate(t *testing.T, opts ...oci.SpecOpts) *oci.Spec {
	t.Helper()
	s, err := generate(t, opts...)
	if err != nil {
		t.Fatalf("GenerateSpec: %v", err)
	}
	return s
}

func TestWithProcessArgs(t *testing.T) {
	img := ocispec.ImageConfig{Entrypoint: []string{"/entry"}, Cmd: []string{"cmd", "arg"}}
	vars := map[string]string{"PORT": "8080"}
	tests := []struct {
		name          string
		img           ocispec.ImageConfig
		command, args []string
		want          []string
		wantErr       error
	}{
		{name: "image only", img: img, want: []string{"/entry", "cmd", "arg"}},
		{name: "command replaces entrypoint and cmd", img: img, command: []string{"/bin/sh"}, want: []string{"/bin/sh"}},
		{name: "command and args", img: img, command: []string{"/bin/sh", "-c"}, args: []string{"echo hi"}, want: []string{"/bin/sh", "-c", "echo hi"}},
		{name: "args keep entrypoint", img: img, args: []string{"x"}, want: []string{"/entry", "x"}},
		{name: "args without entrypoint", img: ocispec.ImageConfig{Cmd: []string{"sh"}}, args: []string{"ls"}, want: []string{"ls"}},
		{name: "expansion", img: img, command: []string{"srv"}, args: []string{"--port=$(PORT)", "$(NOPE)", "$$(PORT)"}, want: []string{"srv", "--port=8080", "$(NOPE)", "$(PORT)"}},
		{name: "nothing to run", img: ocispec.ImageConfig{}, wantErr: ErrNoCommand},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := generate(t, withProcessArgs(tt.img, tt.command, tt.args, vars))
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(s.Process.Args, tt.want) {
				t.Errorf("args = %q, want %q", s.Process.Args, tt.want)
			}
		})
	}
}

func TestWithEnv(t *testing.T) {
	env, _ := expandEnv([]pod.EnvVar{
		{Name: "A", Value: "from-pod"},
		{Name: "B", Value: "$(A)-b"},
		{Name: "EMPTY"},
	})
	s := mustGenerate(t,
		WithImageConfig(ocispec.ImageConfig{Env: []string{"PATH=/bin", "A=from-image", "C=image"}, Cmd: []string{"sh"}}),
		withEnv("web-node1", env))
	want := []string{"HOSTNAME=web-node1", "PATH=/bin", "A=from-pod", "C=image", "B=from-pod-b", "EMPTY="}
	if !slices.Equal(s.Process.Env, want) {
		t.Errorf("env = %q, want %q", s.Process.Env, want)
	}

	// The image may set HOSTNAME; the container's env wins over both.
	s = mustGenerate(t,
		WithImageConfig(ocispec.ImageConfig{Env: []string{"HOSTNAME=img"}, Cmd: []string{"sh"}}),
		withEnv("h", []string{"HOSTNAME=mine"}))
	if got := envValue(s.Process.Env, "HOSTNAME"); got != "mine" {
		t.Errorf("HOSTNAME = %q, want mine", got)
	}
}

func envValue(env []string, name string) string {
	for _, e := range env {
		if k, v, _ := strings.Cut(e, "="); k == name {
			return v
		}
	}
	return ""
}

func TestWithWorkingDir(t *testing.T) {
	s := mustGenerate(t, oci.WithProcessCwd("/img"), withWorkingDir(""))
	if s.Process.Cwd != "/img" {
		t.Errorf("cwd = %q, want the image's /img", s.Process.Cwd)
	}
	s = mustGenerate(t, oci.WithProcessCwd("/img"), withWorkingDir("/work"))
	if s.Process.Cwd != "/work" {
		t.Errorf("cwd = %q, want /work", s.Process.Cwd)
	}
}

func i64(v int64) *int64 { return &v }
func boolp(v bool) *bool { return &v }

// imageRoot writes a minimal image root with /etc/passwd and /etc/group.
func imageRoot(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	passwd := "root:x:0:0:root:/root:/bin/sh\napp:x:1000:1001:app:/home/app:/bin/sh\n"
	group := "root:x:0:\napp:x:1001:\nextra:x:2000:app\n"
	for name, data := range map[string]string{"passwd": passwd, "group": group} {
		if err := os.WriteFile(filepath.Join(dir, "etc", name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestWithUser(t *testing.T) {
	root := imageRoot(t)
	tests := []struct {
		name       string
		imgUID     uint32
		imgGID     uint32
		sc         *pod.SecurityContext
		uid, gid   uint32
		additional []uint32
	}{
		{name: "no security context keeps the image user", imgUID: 5, imgGID: 6, sc: nil, uid: 5, gid: 6},
		{name: "runAsUser takes the primary group from passwd", sc: &pod.SecurityContext{RunAsUser: i64(1000)}, uid: 1000, gid: 1001, additional: []uint32{1001, 2000}},
		{name: "runAsUser unknown to the image gets gid 0", sc: &pod.SecurityContext{RunAsUser: i64(4242)}, uid: 4242, gid: 0, additional: []uint32{0}},
		{name: "runAsUser and runAsGroup", sc: &pod.SecurityContext{RunAsUser: i64(1000), RunAsGroup: i64(3000)}, uid: 1000, gid: 3000, additional: []uint32{3000, 2000}},
		{name: "runAsGroup alone keeps the image uid", imgUID: 1000, imgGID: 1001, sc: &pod.SecurityContext{RunAsGroup: i64(3000)}, uid: 1000, gid: 3000, additional: []uint32{3000, 2000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustGenerate(t, oci.WithRootFSPath(root),
				WithImageConfig(ocispec.ImageConfig{Cmd: []string{"sh"}}),
				withUser(imageUser(tt.imgUID, tt.imgGID), tt.sc))
			u := s.Process.User
			if u.UID != tt.uid || u.GID != tt.gid {
				t.Errorf("uid:gid = %d:%d, want %d:%d", u.UID, u.GID, tt.uid, tt.gid)
			}
			if tt.additional != nil && !slices.Equal(u.AdditionalGids, tt.additional) {
				t.Errorf("additional gids = %v, want %v", u.AdditionalGids, tt.additional)
			}
		})
	}
}

func TestWithSecurityCapabilities(t *testing.T) {
	defaults := mustGenerate(t).Process.Capabilities.Bounding
	tests := []struct {
		name       string
		caps       *pod.Capabilities
		has, hasnt []string
		exactly    []string
	}{
		{name: "defaults", caps: nil, exactly: defaults},
		{name: "add with and without prefix", caps: &pod.Capabilities{Add: []string{"NET_ADMIN", "CAP_SYS_TIME"}}, has: []string{"CAP_NET_ADMIN", "CAP_SYS_TIME", "CAP_CHOWN"}},
		{name: "drop", caps: &pod.Capabilities{Drop: []string{"chown", "NET_RAW"}}, has: []string{"CAP_KILL"}, hasnt: []string{"CAP_CHOWN", "CAP_NET_RAW"}},
		{name: "drop ALL then add", caps: &pod.Capabilities{Drop: []string{"ALL"}, Add: []string{"NET_BIND_SERVICE"}}, exactly: []string{"CAP_NET_BIND_SERVICE"}},
		{name: "drop ALL", caps: &pod.Capabilities{Drop: []string{"ALL"}}, exactly: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustGenerate(t, withSecurity(&pod.SecurityContext{Capabilities: tt.caps}, false))
			c := s.Process.Capabilities
			for _, set := range [][]string{c.Bounding, c.Effective, c.Permitted} {
				for _, h := range tt.has {
					if !slices.Contains(set, h) {
						t.Errorf("%s missing from %v", h, set)
					}
				}
				for _, h := range tt.hasnt {
					if slices.Contains(set, h) {
						t.Errorf("%s still in %v", h, set)
					}
				}
				if tt.has == nil && tt.hasnt == nil && !slices.Equal(set, tt.exactly) {
					t.Errorf("caps = %v, want %v", set, tt.exactly)
				}
			}
			if s.Process.NoNewPrivileges {
				t.Error("noNewPrivileges set; Kubernetes allows privilege escalation by default")
			}
		})
	}
}

func TestWithSecurityAddAll(t *testing.T) {
	s := mustGenerate(t, withSecurity(&pod.SecurityContext{Capabilities: &pod.Capabilities{Add: []string{"ALL"}, Drop: []string{"SYS_ADMIN"}}}, false))
	c := s.Process.Capabilities
	if slices.Contains(c.Bounding, "CAP_SYS_ADMIN") {
		t.Error("CAP_SYS_ADMIN not dropped after add ALL")
	}
	if len(c.Bounding) <= len(mustGenerate(t).Process.Capabilities.Bounding) {
		t.Errorf("add ALL gave only %d capabilities", len(c.Bounding))
	}
}

func TestWithSecurityPrivileged(t *testing.T) {
	sc := &pod.SecurityContext{Privileged: boolp(true)}
	if _, err := generate(t, withSecurity(sc, false)); !errors.Is(err, ErrPrivilegedNotAllowed) {
		t.Fatalf("err = %v, want ErrPrivilegedNotAllowed", err)
	}
	s := mustGenerate(t, withSecurity(sc, true))
	if len(s.Linux.MaskedPaths) != 0 || len(s.Linux.ReadonlyPaths) != 0 {
		t.Errorf("privileged keeps masked %v / readonly %v paths", s.Linux.MaskedPaths, s.Linux.ReadonlyPaths)
	}
	if !slices.Contains(s.Process.Capabilities.Bounding, "CAP_SYS_ADMIN") {
		t.Error("privileged lacks CAP_SYS_ADMIN")
	}
	if r := s.Linux.Resources.Devices; len(r) == 0 || !r[len(r)-1].Allow {
		t.Errorf("privileged devices cgroup = %+v, want all allowed", r)
	}
	// privileged: false is not privileged
	s = mustGenerate(t, withSecurity(&pod.SecurityContext{Privileged: boolp(false)}, false))
	if slices.Contains(s.Process.Capabilities.Bounding, "CAP_SYS_ADMIN") {
		t.Error("privileged: false got CAP_SYS_ADMIN")
	}
}

func TestWithReadonlyRootfs(t *testing.T) {
	for _, tt := range []struct {
		sc   *pod.SecurityContext
		want bool
	}{
		{nil, false},
		{&pod.SecurityContext{ReadOnlyRootFilesystem: boolp(false)}, false},
		{&pod.SecurityContext{ReadOnlyRootFilesystem: boolp(true)}, true},
	} {
		if got := mustGenerate(t, withReadonlyRootfs(tt.sc)).Root.Readonly; got != tt.want {
			t.Errorf("%+v: readonly = %v, want %v", tt.sc, got, tt.want)
		}
	}
}

func nsMap(s *oci.Spec) map[specs.LinuxNamespaceType]string {
	m := map[specs.LinuxNamespaceType]string{}
	for _, n := range s.Linux.Namespaces {
		m[n.Type] = n.Path
	}
	return m
}

func TestWithNamespacesAndHostname(t *testing.T) {
	tests := []struct {
		name         string
		ns           pod.Namespaces
		want         map[specs.LinuxNamespaceType]string
		wantHostname string
	}{
		{
			name: "pod namespaces joined by path",
			ns:   pod.Namespaces{Net: "/run/tug/ns/u/net", IPC: "/run/tug/ns/u/ipc", UTS: "/run/tug/ns/u/uts"},
			want: map[specs.LinuxNamespaceType]string{
				specs.PIDNamespace: "", specs.MountNamespace: "",
				specs.NetworkNamespace: "/run/tug/ns/u/net", specs.IPCNamespace: "/run/tug/ns/u/ipc", specs.UTSNamespace: "/run/tug/ns/u/uts",
			},
			wantHostname: "", // the pinned namespace carries it
		},
		{
			name:         "host network and uts",
			ns:           pod.Namespaces{IPC: "/run/tug/ns/u/ipc"},
			want:         map[specs.LinuxNamespaceType]string{specs.PIDNamespace: "", specs.MountNamespace: "", specs.IPCNamespace: "/run/tug/ns/u/ipc"},
			wantHostname: "", // runc refuses a hostname without a private UTS namespace
		},
		{
			name:         "all host",
			ns:           pod.Namespaces{},
			want:         map[specs.LinuxNamespaceType]string{specs.PIDNamespace: "", specs.MountNamespace: ""},
			wantHostname: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustGenerate(t, WithNamespaces(tt.ns, false), withHostname("web"))
			if got := nsMap(s); !maps.Equal(got, tt.want) {
				t.Errorf("namespaces = %v, want %v", got, tt.want)
			}
			if s.Hostname != tt.wantHostname {
				t.Errorf("hostname = %q, want %q", s.Hostname, tt.wantHostname)
			}
		})
	}
	// A new UTS namespace (the spec default) gets the hostname.
	if s := mustGenerate(t, withHostname("web")); s.Hostname != "web" {
		t.Errorf("hostname with a new UTS namespace = %q, want web", s.Hostname)
	}
}

func TestWithMounts(t *testing.T) {
	mounts := []specs.Mount{
		volume.BindMount("/host/data/sub", "/data/sub", false),
		volume.BindMount("/host/data", "/data", true),
		volume.BindMount("/var/lib/tug/pods/u/etc-hostname", "/etc/hostname", true),
		{Type: "tmpfs", Source: "tmpfs", Destination: "/run", Options: []string{"nosuid"}},
	}
	s := mustGenerate(t, withMounts(mounts))
	var dests []string
	byDest := map[string]specs.Mount{}
	for _, m := range s.Mounts {
		dests = append(dests, m.Destination)
		byDest[m.Destination] = m
	}
	idx := func(d string) int { return slices.Index(dests, d) }
	if idx("/data") > idx("/data/sub") {
		t.Errorf("/data mounted after /data/sub: %v", dests)
	}
	if idx("/dev") > idx("/dev/pts") {
		t.Errorf("/dev after /dev/pts: %v", dests)
	}
	count := 0
	for _, d := range dests {
		if d == "/run" {
			count++
		}
	}
	if count != 1 || !slices.Equal(byDest["/run"].Options, []string{"nosuid"}) {
		t.Errorf("default /run not replaced: %v", s.Mounts)
	}
	if m := byDest["/data"]; m.Type != "bind" || !slices.Equal(m.Options, []string{"rbind", "rprivate", "ro"}) {
		t.Errorf("/data mount = %+v", m)
	}
	if m := byDest["/data/sub"]; !slices.Contains(m.Options, "rw") {
		t.Errorf("/data/sub mount = %+v, want rw", m)
	}
	if _, ok := byDest["/proc"]; !ok {
		t.Error("default /proc mount lost")
	}
	if s.Linux.RootfsPropagation != "" {
		t.Errorf("rootfsPropagation = %q with private mounts only, want runc's default", s.Linux.RootfsPropagation)
	}
}

func TestWithMountsRootfsPropagation(t *testing.T) {
	bind := func(dest, prop string) specs.Mount {
		return specs.Mount{Type: "bind", Source: "/host" + dest, Destination: dest, Options: []string{"rbind", prop, "rw"}}
	}
	tests := []struct {
		name   string
		mounts []specs.Mount
		want   string
	}{
		{"private", []specs.Mount{bind("/a", "rprivate")}, ""},
		{"HostToContainer", []specs.Mount{bind("/a", "rprivate"), bind("/b", "rslave")}, "rslave"},
		{"Bidirectional", []specs.Mount{bind("/a", "rshared")}, "rshared"},
		{"both", []specs.Mount{bind("/a", "rslave"), bind("/b", "rshared"), bind("/c", "rslave")}, "rshared"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustGenerate(t, withMounts(tt.mounts))
			if s.Linux.RootfsPropagation != tt.want {
				t.Fatalf("rootfsPropagation = %q, want %q", s.Linux.RootfsPropagation, tt.want)
			}
		})
	}
}

func TestContainerSpecOpts(t *testing.T) {
	c := &pod.Container{
		Name:       "app",
		Command:    []string{"sh", "-c"},
		Args:       []string{"echo $(GREETING)"},
		Env:        []pod.EnvVar{{Name: "GREETING", Value: "hello"}},
		WorkingDir: "/srv",
		SecurityContext: &pod.SecurityContext{
			ReadOnlyRootFilesystem: boolp(true),
			Capabilities:           &pod.Capabilities{Drop: []string{"ALL"}},
		},
	}
	opts := append([]oci.SpecOpts{oci.WithRootFSPath(imageRoot(t))},
		ForContainer(Params{
			ID:        "c1",
			Image:     ocispec.ImageConfig{Env: []string{"PATH=/bin"}},
			Container: c,
			Sandbox:   pod.Sandbox{Namespaces: pod.Namespaces{Net: "/n", IPC: "/i", UTS: "/u"}},
			Mounts:    []specs.Mount{volume.BindMount("/h", "/etc/hostname", true)},
			Hostname:  "web-node1",
		})...)
	s := mustGenerate(t, opts...)
	if want := []string{"sh", "-c", "echo hello"}; !slices.Equal(s.Process.Args, want) {
		t.Errorf("args = %q, want %q", s.Process.Args, want)
	}
	if envValue(s.Process.Env, "HOSTNAME") != "web-node1" || envValue(s.Process.Env, "GREETING") != "hello" {
		t.Errorf("env = %q", s.Process.Env)
	}
	if s.Process.Cwd != "/srv" || !s.Root.Readonly || len(s.Process.Capabilities.Bounding) != 0 {
		t.Errorf("cwd %q readonly %v caps %v", s.Process.Cwd, s.Root.Readonly, s.Process.Capabilities.Bounding)
	}
	if s.Hostname != "" {
		t.Errorf("hostname %q set in a joined UTS namespace", s.Hostname)
	}
	if s.Process.OOMScoreAdj != nil {
		t.Errorf("oomScoreAdj = %d, want unset", *s.Process.OOMScoreAdj)
	}
	if s.Linux.CgroupsPath != "/test/c1" {
		t.Errorf("cgroupsPath = %q, want containerd's default /test/c1", s.Linux.CgroupsPath)
	}
}

func TestSpecCgroupAndResources(t *testing.T) {
	adj := 500
	tests := []struct {
		name string
		sb   pod.Sandbox
		res  pod.LinuxResources
		want func(t *testing.T, s *oci.Spec)
	}{{
		name: "guaranteed",
		sb:   pod.Sandbox{CgroupParent: "/tugpods/podu1"},
		res:  pod.LinuxResources{CPUShares: 512, CPUQuota: 50000, CPUPeriod: 100000, MemoryLimit: 64 << 20, OOMScoreAdj: &adj},
		want: func(t *testing.T, s *oci.Spec) {
			r := s.Linux.Resources
			if s.Linux.CgroupsPath != "/tugpods/podu1/c1" {
				t.Errorf("cgroupsPath = %q", s.Linux.CgroupsPath)
			}
			if *r.CPU.Shares != 512 || *r.CPU.Quota != 50000 || *r.CPU.Period != 100000 || *r.Memory.Limit != 64<<20 {
				t.Errorf("cpu %+v memory %+v", r.CPU, r.Memory)
			}
			if *s.Process.OOMScoreAdj != 500 {
				t.Errorf("oomScoreAdj = %d", *s.Process.OOMScoreAdj)
			}
		},
	}, {
		name: "best effort with memory qos",
		sb:   pod.Sandbox{CgroupParent: "/tugpods/besteffort/podu2"},
		res:  pod.LinuxResources{CPUShares: 2, Unified: map[string]string{"memory.high": "max"}},
		want: func(t *testing.T, s *oci.Spec) {
			r := s.Linux.Resources
			if *r.CPU.Shares != 2 || r.CPU.Quota != nil || r.Memory != nil || r.Unified["memory.high"] != "max" {
				t.Errorf("cpu %+v memory %+v unified %v", r.CPU, r.Memory, r.Unified)
			}
			if s.Process.OOMScoreAdj != nil {
				t.Errorf("oomScoreAdj = %d, want unset", *s.Process.OOMScoreAdj)
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := append([]oci.SpecOpts{oci.WithRootFSPath(imageRoot(t))},
				ForContainer(Params{ID: "c1", Image: ocispec.ImageConfig{Env: []string{"PATH=/bin"}}, Container: &pod.Container{Name: "app", Command: []string{"sh"}}, Sandbox: tt.sb, Resources: tt.res, Hostname: "h"})...)
			tt.want(t, mustGenerate(t, opts...))
		})
	}
}

func TestWithPodSecurity(t *testing.T) {
	fsGroup := int64(2000)
	unmasked := "Unmasked"
	p := &pod.Pod{Spec: pod.PodSpec{HostPID: true, SecurityContext: &pod.PodSecurityContext{
		FSGroup:            &fsGroup,
		SupplementalGroups: []int64{4000, 2000},
		Sysctls:            []pod.Sysctl{{Name: "net.ipv4.ping_group_range", Value: "0 1000"}, {Name: "net/ipv4/conf/eth0.100/forwarding", Value: "1"}},
	}}}
	s := mustGenerate(t, WithNamespaces(pod.Namespaces{}, true), withPodSecurity(p, &pod.SecurityContext{ProcMount: &unmasked}))
	if got := s.Process.User.AdditionalGids; !slices.Contains(got, 2000) || !slices.Contains(got, 4000) || len(got) != len(slices.Compact(slices.Sorted(slices.Values(got)))) {
		t.Errorf("additional gids %v, want 2000 and 4000 once each", got)
	}
	if s.Linux.Sysctl["net.ipv4.ping_group_range"] != "0 1000" || s.Linux.Sysctl["net.ipv4.conf.eth0/100.forwarding"] != "1" {
		t.Errorf("sysctls %v", s.Linux.Sysctl)
	}
	if len(s.Linux.MaskedPaths) != 0 || len(s.Linux.ReadonlyPaths) != 0 {
		t.Errorf("procMount Unmasked left masked paths %v / read-only paths %v", s.Linux.MaskedPaths, s.Linux.ReadonlyPaths)
	}
	for _, ns := range s.Linux.Namespaces {
		if ns.Type == specs.PIDNamespace {
			t.Errorf("hostPID: the spec still has a PID namespace")
		}
	}
	d := mustGenerate(t, withPodSecurity(p, nil))
	if len(d.Linux.MaskedPaths) == 0 {
		t.Error("without procMount Unmasked the masked paths are gone")
	}
}

// TestSupplementalGroupsPolicy: Merge keeps the groups the image's
// /etc/group gave the user; Strict keeps only the primary group, fsGroup
// and supplementalGroups.
func TestSupplementalGroupsPolicy(t *testing.T) {
	fsGroup := int64(2000)
	imageGroups := func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		s.Process.User = specs.User{UID: 1000, GID: 1000, AdditionalGids: []uint32{1000, 10, 27}} // what /etc/group gave
		return nil
	}
	tests := []struct {
		policy *pod.SupplementalGroupsPolicy
		want   []uint32
	}{
		{policy: nil, want: []uint32{1000, 10, 27, 2000, 4000}},
		{policy: new(pod.SupplementalGroupsMerge), want: []uint32{1000, 10, 27, 2000, 4000}},
		{policy: new(pod.SupplementalGroupsStrict), want: []uint32{1000, 2000, 4000}},
	}
	for _, tt := range tests {
		name := "unset"
		if tt.policy != nil {
			name = string(*tt.policy)
		}
		t.Run(name, func(t *testing.T) {
			p := &pod.Pod{Spec: pod.PodSpec{SecurityContext: &pod.PodSecurityContext{
				FSGroup: &fsGroup, SupplementalGroups: []int64{4000}, SupplementalGroupsPolicy: tt.policy,
			}}}
			s := mustGenerate(t, imageGroups, withPodSecurity(p, nil))
			if got := s.Process.User.AdditionalGids; !slices.Equal(got, tt.want) {
				t.Errorf("additional gids %v, want %v", got, tt.want)
			}
		})
	}
}

// TestWithAppArmor: the profile reaches the spec only when the kernel
// enforces AppArmor; a container's profile overrides the pod's.
func TestWithAppArmor(t *testing.T) {
	local := &pod.AppArmorProfile{Type: pod.AppArmorLocalhost, LocalhostProfile: new("k8s-nginx")}
	tests := []struct {
		name     string
		pod, ctr *pod.AppArmorProfile
		enabled  bool
		want     string
	}{
		{name: "off", pod: local, want: ""},
		{name: "pod localhost", pod: local, enabled: true, want: "k8s-nginx"},
		{name: "container unconfined", pod: local, ctr: &pod.AppArmorProfile{Type: pod.AppArmorUnconfined}, enabled: true, want: "unconfined"},
		{name: "none", enabled: true, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &pod.Pod{Spec: pod.PodSpec{SecurityContext: &pod.PodSecurityContext{AppArmorProfile: tt.pod}}}
			c := &pod.Container{Name: "app", Command: []string{"sh"}, SecurityContext: &pod.SecurityContext{AppArmorProfile: tt.ctr}}
			s := mustGenerate(t, append([]oci.SpecOpts{oci.WithRootFSPath(imageRoot(t))},
				ForContainer(Params{ID: "c1", Pod: p, Container: c, Hostname: "h", AppArmor: tt.enabled})...)...)
			if s.Process.ApparmorProfile != tt.want {
				t.Errorf("apparmor profile %q, want %q", s.Process.ApparmorProfile, tt.want)
			}
		})
	}
}
