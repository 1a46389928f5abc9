package specopts

import (
	"context"
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"tug/internal/pod"
)

// Params is what the OCI spec of one container is built from.
type Params struct {
	ID              string   // the container's ID, its cgroup's name
	Pod             *pod.Pod // nil: no pod-level securityContext
	Container       *pod.Container
	Image           ocispec.ImageConfig // the image's env, ENTRYPOINT, CMD, working directory and USER
	Sandbox         pod.Sandbox
	Resources       pod.LinuxResources
	Mounts          []specs.Mount // the pod's volumes and /etc files
	Hostname        string
	AllowPrivileged bool
	Seccomp         SeccompConfig
	// AppArmor is whether the kernel enforces AppArmor: without it no
	// profile is set (node admission refuses a Localhost one).
	AppArmor bool
}

// ForContainer returns the options of a container's spec: the image's
// config, then Kubernetes command/args/env semantics, working
// directory, user, capabilities or privileged mode, no_new_privs, seccomp,
// read-only root, mounts, namespaces and hostname, the cgroup below the
// pod's, resources and OOM score, and last the runAsNonRoot check of the
// resulting user. The security settings are the container's with the pod's
// as defaults. The order matters (hostname after namespaces, seccomp after
// the capabilities, the user check after the user).
func ForContainer(sp Params) []oci.SpecOpts {
	c := sp.Container
	env, vars := expandEnv(c.Env)
	sec := c.SecurityContext
	if sp.Pod != nil {
		merged := sp.Pod.ContainerSecurity(c)
		sec = &merged
	}
	privileged := sec != nil && sec.Privileged != nil && *sec.Privileged
	var seccompProfile *pod.SeccompProfile
	if sec != nil {
		seccompProfile = sec.SeccompProfile
	}
	return []oci.SpecOpts{
		WithImageConfig(sp.Image),
		withProcessArgs(sp.Image, c.Command, c.Args, vars),
		withEnv(sp.Hostname, env),
		withWorkingDir(c.WorkingDir),
		withUser(sp.Image.User, sec),
		withSecurity(sec, sp.AllowPrivileged),
		withSeccomp(seccompProfile, privileged, sp.Seccomp),
		withAppArmor(sec, sp.AppArmor),
		withRunAsNonRoot(sec, podName(sp.Pod), c.Name),
		withReadonlyRootfs(sec),
		WithNamespaces(sp.Sandbox.Namespaces, sp.Pod != nil && sp.Pod.Spec.HostPID),
		withPodSecurity(sp.Pod, sec),
		withHostname(sp.Hostname),
		withMounts(sp.Mounts),
		WithUserNamespace(sp.Sandbox.UserNS),
		WithCgroup(sp.Sandbox.CgroupParent, sp.ID),
		withResources(sp.Resources),
		WithFileSizeUnlimited(),
	}
}

// WithFileSizeUnlimited gives the container RLIMIT_FSIZE unlimited: runc,
// started by the shim, would otherwise hand on the limit tug sets on the
// shim for its raw output files (podruntime).
func WithFileSizeUnlimited() oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		unlimited := specs.POSIXRlimit{Type: "RLIMIT_FSIZE", Hard: ^uint64(0), Soft: ^uint64(0)}
		for i, l := range s.Process.Rlimits {
			if l.Type == unlimited.Type {
				s.Process.Rlimits[i] = unlimited
				return nil
			}
		}
		s.Process.Rlimits = append(s.Process.Rlimits, unlimited)
		return nil
	}
}

// WithCgroup puts the container's cgroup below its pod's (runc's cgroupfs
// driver takes cgroupsPath as a path from the hierarchy's root). An empty
// parent keeps containerd's default, /<namespace>/<id>.
func WithCgroup(parent, id string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if parent == "" {
			return nil
		}
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		s.Linux.CgroupsPath = path.Join(parent, id)
		return nil
	}
}

// withResources writes the container's cgroup values and OOM score into
// the spec; zero values leave the runtime's defaults.
func withResources(res pod.LinuxResources) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		if s.Linux.Resources == nil {
			s.Linux.Resources = &specs.LinuxResources{}
		}
		r := s.Linux.Resources
		if res.CPUShares > 0 || res.CPUQuota > 0 {
			if r.CPU == nil {
				r.CPU = &specs.LinuxCPU{}
			}
			if res.CPUShares > 0 {
				r.CPU.Shares = &res.CPUShares
			}
			if res.CPUQuota > 0 {
				r.CPU.Quota, r.CPU.Period = &res.CPUQuota, &res.CPUPeriod
			}
		}
		if res.MemoryLimit > 0 {
			if r.Memory == nil {
				r.Memory = &specs.LinuxMemory{}
			}
			r.Memory.Limit = &res.MemoryLimit
		}
		if len(res.Unified) > 0 {
			r.Unified = maps.Clone(res.Unified)
		}
		if res.OOMScoreAdj != nil {
			if s.Process == nil {
				s.Process = &specs.Process{}
			}
			adj := *res.OOMScoreAdj
			s.Process.OOMScoreAdj = &adj
		}
		return nil
	}
}

// withProcessArgs sets the process args as Kubernetes does: command
// replaces the image's ENTRYPOINT and args its CMD; args alone keep the
// ENTRYPOINT; neither runs the image's ENTRYPOINT and CMD. $(VAR) references
// in command and args are expanded from the container's env (vars). An empty
// result is ErrNoCommand.
func withProcessArgs(img ocispec.ImageConfig, command, args []string, vars map[string]string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		var argv []string
		switch {
		case len(command) > 0:
			argv = append(expandAll(command, vars), expandAll(args, vars)...)
		case len(args) > 0:
			argv = append(append([]string{}, img.Entrypoint...), expandAll(args, vars)...)
		default:
			argv = append(append([]string{}, img.Entrypoint...), img.Cmd...)
		}
		if len(argv) == 0 || argv[0] == "" {
			return ErrNoCommand
		}
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		s.Process.Args = argv
		return nil
	}
}

// withEnv sets HOSTNAME, then the environment already in the spec (the
// image's, applied by WithImageConfig) overrides it by name, then env
// (the container's, "NAME=value") overrides both, as the kubelet and
// containerd's CRI do.
func withEnv(hostname string, env []string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		merged := mergeEnv([]string{"HOSTNAME=" + hostname}, s.Process.Env)
		s.Process.Env = mergeEnv(merged, env)
		return nil
	}
}

// mergeEnv returns base with each of over replacing the entry of the same
// name in place, or appended.
func mergeEnv(base, over []string) []string {
	out := append([]string{}, base...)
	idx := make(map[string]int, len(out))
	for i, e := range out {
		k, _, _ := strings.Cut(e, "=")
		idx[k] = i
	}
	for _, e := range over {
		k, _, _ := strings.Cut(e, "=")
		if i, ok := idx[k]; ok {
			out[i] = e
			continue
		}
		idx[k] = len(out)
		out = append(out, e)
	}
	return out
}

// withWorkingDir sets the process's working directory when dir is set
// (else the image's, or "/").
func withWorkingDir(dir string) oci.SpecOpts {
	return func(ctx context.Context, cl oci.Client, c *containers.Container, s *oci.Spec) error {
		if dir == "" {
			return nil
		}
		return oci.WithProcessCwd(dir)(ctx, cl, c, s)
	}
}

// withSecurity applies privileged mode (only when allowed: else
// ErrPrivilegedNotAllowed) or the capability changes. Capabilities start from
// containerd's default set; "ALL" in add grants every capability this
// process has, "ALL" in drop removes all before the additions, and names get
// the "CAP_" prefix the runtime spec uses. As in Kubernetes,
// allowPrivilegeEscalation is on unless set to false, which sets the
// process's no_new_privs.
func withSecurity(sc *pod.SecurityContext, allowPrivileged bool) oci.SpecOpts {
	if sc != nil && sc.Privileged != nil && *sc.Privileged {
		if !allowPrivileged {
			return func(context.Context, oci.Client, *containers.Container, *oci.Spec) error {
				return ErrPrivilegedNotAllowed
			}
		}
		return oci.Compose(oci.WithPrivileged, oci.WithAllDevicesAllowed, oci.WithHostDevices, oci.WithNewPrivileges)
	}
	opts := []oci.SpecOpts{oci.WithNewPrivileges}
	if sc != nil && sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		opts = []oci.SpecOpts{oci.WithNoNewPrivileges}
	}
	if sc != nil && sc.Capabilities != nil {
		add, addAll := capNames(sc.Capabilities.Add)
		drop, dropAll := capNames(sc.Capabilities.Drop)
		if addAll {
			opts = append(opts, oci.WithAllCurrentCapabilities)
		}
		if dropAll {
			opts = append(opts, oci.WithCapabilities(nil))
		}
		opts = append(opts, oci.WithAddedCapabilities(add), oci.WithDroppedCapabilities(drop))
	}
	return oci.Compose(opts...)
}

// withRunAsNonRoot refuses, with ErrCreateContainerConfig and the kubelet's
// messages, a container whose runAsNonRoot is true but whose process would
// run as uid 0: its runAsUser, else the image's USER as withUser resolved
// it (a name through the image's /etc/passwd). It
// runs while the spec is generated, inside NewContainer, so a refused
// container is never created. Apply after withUser.
func withRunAsNonRoot(sc *pod.SecurityContext, podName, name string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
			return nil
		}
		if sc.RunAsUser != nil && *sc.RunAsUser == 0 {
			return fmt.Errorf("%w: container's runAsUser breaks non-root policy (pod: %q, container: %s)", pod.ErrCreateContainerConfig, podName, name)
		}
		if s.Process == nil || s.Process.User.UID == 0 {
			return fmt.Errorf("%w: container has runAsNonRoot and image will run as root (pod: %q, container: %s)", pod.ErrCreateContainerConfig, podName, name)
		}
		return nil
	}
}

// podName is "namespace/name", or "" without a pod.
func podName(p *pod.Pod) string {
	if p == nil {
		return ""
	}
	return p.FullName()
}

// capNames returns names as runtime-spec capability names ("NET_ADMIN" ->
// "CAP_NET_ADMIN"; a "CAP_" prefix already there is kept), without "ALL",
// and whether "ALL" was among them.
func capNames(names []string) (caps []string, all bool) {
	for _, n := range names {
		n = strings.ToUpper(strings.TrimSpace(n))
		if n == "ALL" {
			all = true
			continue
		}
		if !strings.HasPrefix(n, "CAP_") {
			n = "CAP_" + n
		}
		caps = append(caps, n)
	}
	return caps, all
}

// withReadonlyRootfs makes the root filesystem read-only when
// readOnlyRootFilesystem is true.
func withReadonlyRootfs(sc *pod.SecurityContext) oci.SpecOpts {
	return func(ctx context.Context, cl oci.Client, c *containers.Container, s *oci.Spec) error {
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			return nil
		}
		return oci.WithRootFSReadonly()(ctx, cl, c, s)
	}
}

// WithNamespaces joins the pod's network, IPC and UTS namespaces by path;
// an empty path means the host's namespace (the entry is removed from the
// spec). The mount namespace is always new, and so is the PID namespace
// unless hostPID.
func WithNamespaces(ns pod.Namespaces, hostPID bool) oci.SpecOpts {
	opts := []oci.SpecOpts{
		oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.PIDNamespace}),
		oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.MountNamespace}),
	}
	if hostPID {
		opts[0] = oci.WithHostNamespace(specs.PIDNamespace)
	}
	for _, n := range []struct {
		typ  specs.LinuxNamespaceType
		path string
	}{
		{specs.NetworkNamespace, ns.Net},
		{specs.IPCNamespace, ns.IPC},
		{specs.UTSNamespace, ns.UTS},
	} {
		if n.path == "" {
			opts = append(opts, oci.WithHostNamespace(n.typ))
		} else {
			opts = append(opts, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: n.typ, Path: n.path}))
		}
	}
	return oci.Compose(opts...)
}

// withHostname sets the spec's hostname only when the container gets a new
// UTS namespace of its own. In the host's UTS namespace runc refuses a
// hostname ("unable to set hostname without a private UTS namespace"); in a
// joined one runc would set it, changing it for every container of the pod
// on each start, so the hostname is instead set once by whoever creates the
// pinned namespace. Apply after WithNamespaces.
func withHostname(hostname string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		s.Hostname = ""
		if s.Linux == nil {
			return nil
		}
		for _, n := range s.Linux.Namespaces {
			if n.Type == specs.UTSNamespace && n.Path == "" {
				s.Hostname = hostname
			}
		}
		return nil
	}
}

// withMounts adds mounts to the spec. A default mount with the same
// destination is replaced (and all of /dev's when /dev itself is mounted),
// and the mounts are ordered by depth so that a parent is mounted before
// what is mounted inside it. The root filesystem's propagation follows the
// mounts', as containerd's CRI sets it: rshared when a mount is rshared
// (Bidirectional), else rslave when one is rslave (HostToContainer), so
// that runc does not make the container's mounts private.
func withMounts(mounts []specs.Mount) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		dests := map[string]bool{}
		for _, m := range mounts {
			dests[filepath.Clean(m.Destination)] = true
		}
		var all []specs.Mount
		for _, m := range s.Mounts {
			d := filepath.Clean(m.Destination)
			if dests[d] || (dests["/dev"] && strings.HasPrefix(d, "/dev/")) {
				continue
			}
			all = append(all, m)
		}
		all = append(all, mounts...)
		sort.SliceStable(all, func(i, j int) bool {
			return mountDepth(all[i].Destination) < mountDepth(all[j].Destination)
		})
		s.Mounts = all
		if p := rootfsPropagation(mounts); p != "" {
			if s.Linux == nil {
				s.Linux = &specs.Linux{}
			}
			s.Linux.RootfsPropagation = p
		}
		return nil
	}
}

// rootfsPropagation is the root filesystem propagation mounts need:
// rshared, rslave or "" (runc's default).
func rootfsPropagation(mounts []specs.Mount) string {
	out := ""
	for _, m := range mounts {
		switch {
		case slices.Contains(m.Options, "rshared"):
			return "rshared"
		case slices.Contains(m.Options, "rslave"):
			out = "rslave"
		}
	}
	return out
}

func mountDepth(dest string) int {
	d := filepath.Clean(dest)
	if d == "/" {
		return 0
	}
	return strings.Count(d, "/")
}

// withPodSecurity applies the rest of the pod's securityContext: fsGroup
// and supplementalGroups join the process's supplementary groups (after
// the image's, as the kubelet adds them; with supplementalGroupsPolicy
// Strict, after the primary group only), sysctls are set in the pod's
// namespaces, and procMount Unmasked leaves /proc unmasked. Apply after
// withUser.
func withPodSecurity(p *pod.Pod, sec *pod.SecurityContext) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if p != nil && p.Spec.SecurityContext != nil {
			psc := p.Spec.SecurityContext
			if s.Process == nil {
				s.Process = &specs.Process{}
			}
			if psc.SupplementalGroupsPolicy != nil && *psc.SupplementalGroupsPolicy == pod.SupplementalGroupsStrict {
				s.Process.User.AdditionalGids = []uint32{s.Process.User.GID}
			}
			var groups []int64
			if psc.FSGroup != nil {
				groups = append(groups, *psc.FSGroup)
			}
			groups = append(groups, psc.SupplementalGroups...)
			for _, g := range groups {
				if !slices.Contains(s.Process.User.AdditionalGids, uint32(g)) {
					s.Process.User.AdditionalGids = append(s.Process.User.AdditionalGids, uint32(g))
				}
			}
			if len(psc.Sysctls) > 0 {
				if s.Linux == nil {
					s.Linux = &specs.Linux{}
				}
				if s.Linux.Sysctl == nil {
					s.Linux.Sysctl = map[string]string{}
				}
				for _, sy := range psc.Sysctls {
					s.Linux.Sysctl[pod.SysctlDotted(sy.Name)] = sy.Value
				}
			}
		}
		if sec != nil && sec.ProcMount != nil && *sec.ProcMount == "Unmasked" && s.Linux != nil {
			s.Linux.MaskedPaths, s.Linux.ReadonlyPaths = nil, nil
		}
		return nil
	}
}
