package policy

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"tug/internal/pod"
)

// Protected is a host path tug refuses to mount into a pod whatever the
// level, unless AllowHostStateMounts: tug's own state, containerd's socket.
type Protected struct {
	Path string // absolute
	What string // what it is, for the message: "tug's root dir"
}

// Policy is the node's admission policy: a level per source, and the
// node-wide rules. Its zero value admits nothing privileged, no hostPath of
// "/" and holds every source to Restricted. It is read-only once built and
// safe for concurrent use.
type Policy struct {
	// Levels maps a source name (pod.Origin.Source, the pod's
	// Metadata.Source) to its level.
	Levels map[string]Level
	// Default is the level of a source not in Levels; "" means Restricted.
	Default Level
	// AllowPrivileged is --allow-privileged: without it a privileged
	// container is refused whatever its source's level.
	AllowPrivileged bool
	// AllowHostStateMounts is --allow-host-state-mounts: without it a
	// hostPath that is, is inside, or contains one of Protected (or "/")
	// is refused whatever the level.
	AllowHostStateMounts bool
	// Protected are the host paths pods may not mount.
	Protected []Protected
	// Resolve, when set, returns a host path with its symlinks resolved (as
	// far as the path exists), so that "/var/run/containerd" is seen as
	// "/run/containerd". It is the only I/O the policy does, and it is the
	// caller's. An error leaves the path as written.
	Resolve func(path string) (string, error)
	// Node, when set, holds the node's labels and taints: a pod that does
	// not match them is refused with a *NodeMismatch before any other rule.
	Node *Node
	// AllowedDevices maps a source name to the devices its pods may use:
	// extended resource names and CDI kinds ("vendor.com/class"). A pod of
	// a source in the map that asks for another extended resource, or
	// whose cdi.k8s.io/ annotation names a CDI device of another kind, is
	// refused; a source absent from the map may use every device.
	AllowedDevices map[string][]string
	// RequireUserNamespaces maps a source name to the flag that makes its
	// pods run in a user namespace of their own ("url-user-namespaces"): a
	// pod of such a source without spec.hostUsers: false is refused.
	RequireUserNamespaces map[string]string
}

// LevelOf returns the level of source.
func (pl *Policy) LevelOf(source string) Level {
	if l, ok := pl.Levels[source]; ok {
		return l
	}
	if pl.Default != "" {
		return pl.Default
	}
	return Restricted
}

// Error is an admission refusal: every violation of the pod, with the level
// and source it was judged by. It wraps ErrBlocked.
type Error struct {
	Source     string
	Violations []Violation
}

// Error prints one violation per line:
// `spec.containers[0].securityContext.capabilities.add[0]: "ALL" is not
// allowed by the baseline policy of source file:/etc/tug/manifests`.
func (e *Error) Error() string {
	lines := make([]string, len(e.Violations))
	for i, v := range e.Violations {
		lines[i] = e.line(v)
	}
	return strings.Join(lines, "\n")
}

func (e *Error) line(v Violation) string { return v.Path + ": " + e.Message(v) }

// Message is what Error prints of violation v after its field path.
func (e *Error) Message(v Violation) string {
	if v.Level == "" {
		return v.Msg
	}
	return fmt.Sprintf("%s the %s policy of source %s", v.Msg, v.Level, e.Source)
}

// Lines returns the violations as Error prints them, one per element.
func (e *Error) Lines() []string { return strings.Split(e.Error(), "\n") }

func (e *Error) Unwrap() error { return ErrBlocked }

// Admit returns nil when p may run on this node, else a *NodeMismatch when
// it does not match the node's labels or taints (see Node), else an *Error
// listing every rule it breaks: its source's level, then the node-wide
// rules.
func (pl *Policy) Admit(p *pod.Pod) error {
	src := p.Metadata.Source
	if err := pl.Node.Admit(p); err != nil {
		return err
	}
	v := Check(p, pl.LevelOf(src))
	v = append(v, pl.node(p)...)
	v = append(v, pl.devices(p)...)
	v = append(v, pl.userNamespace(p)...)
	if len(v) == 0 {
		return nil
	}
	return &Error{Source: src, Violations: v}
}

// node checks the rules that hold whatever the level.
func (pl *Policy) node(p *pod.Pod) []Violation {
	var out []Violation
	if !pl.AllowPrivileged {
		each(p, func(path string, c *pod.Container) {
			if sc := c.SecurityContext; sc != nil && sc.Privileged != nil && *sc.Privileged {
				out = append(out, Violation{Path: path + ".securityContext.privileged",
					Msg: "true is not allowed on this node (--allow-privileged is false)"})
			}
		})
	}
	if psc := p.Spec.SecurityContext; psc != nil {
		for i, sy := range psc.Sysctls {
			name := pod.SysctlDotted(sy.Name)
			switch {
			case p.Spec.HostNetwork && strings.HasPrefix(name, "net."):
				out = append(out, Violation{Path: idx("spec.securityContext.sysctls", i) + ".name",
					Msg: strconv.Quote(sy.Name) + " would change the node's own network settings (hostNetwork: true); refused whatever the policy"})
			case p.Spec.HostIPC && (strings.HasPrefix(name, "kernel.shm") || strings.HasPrefix(name, "kernel.msg") || strings.HasPrefix(name, "kernel.sem") || strings.HasPrefix(name, "fs.mqueue.")):
				out = append(out, Violation{Path: idx("spec.securityContext.sysctls", i) + ".name",
					Msg: strconv.Quote(sy.Name) + " would change the node's own IPC settings (hostIPC: true); refused whatever the policy"})
			case !namespacedSysctl(name):
				out = append(out, Violation{Path: idx("spec.securityContext.sysctls", i) + ".name",
					Msg: strconv.Quote(sy.Name) + " is not a namespaced sysctl: it would change the whole node; refused whatever the policy"})
			}
		}
	}
	if !pl.AllowHostStateMounts {
		for i, vol := range p.Spec.Volumes {
			if vol.HostPath == nil {
				continue
			}
			if what := pl.exposes(vol.HostPath.Path); what != "" {
				out = append(out, Violation{Path: idx("spec.volumes", i) + ".hostPath.path",
					Msg: fmt.Sprintf("%s exposes %s; refused whatever the policy (--allow-host-state-mounts is false)", strconv.Quote(vol.HostPath.Path), what)})
			}
		}
	}
	return out
}

// exposes returns what protected host state a hostPath would make visible
// in a container ("" for none): "/" itself, a protected path, a path inside
// one, or a parent of one. Paths are compared cleaned, as written and, with
// Resolve, with their symlinks resolved.
func (pl *Policy) exposes(hostPath string) string {
	candidates := []string{path.Clean("/" + hostPath)}
	if pl.Resolve != nil {
		if r, err := pl.Resolve(candidates[0]); err == nil && r != candidates[0] {
			candidates = append(candidates, path.Clean(r))
		}
	}
	for _, hp := range candidates {
		if hp == "/" {
			return "the host's root filesystem"
		}
		for _, pr := range pl.Protected {
			targets := []string{path.Clean(pr.Path)}
			if pl.Resolve != nil {
				if r, err := pl.Resolve(targets[0]); err == nil && r != targets[0] {
					targets = append(targets, path.Clean(r))
				}
			}
			for _, t := range targets {
				if within(hp, t) || within(t, hp) {
					return fmt.Sprintf("%s (%s)", pr.What, pr.Path)
				}
			}
		}
	}
	return ""
}

// within reports whether p is dir or below it (both clean and absolute).
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// each calls f for every init and app container with its field path.
func each(p *pod.Pod, f func(path string, c *pod.Container)) {
	for i := range p.Spec.InitContainers {
		f(idx("spec.initContainers", i), &p.Spec.InitContainers[i])
	}
	for i := range p.Spec.Containers {
		f(idx("spec.containers", i), &p.Spec.Containers[i])
	}
}

// namespacedSysctl reports whether a sysctl (dotted) is set per network or
// IPC namespace, the only ones a pod may set (as the kubelet allows).
func namespacedSysctl(name string) bool {
	switch name {
	case "kernel.shmall", "kernel.shmmax", "kernel.shmmni", "kernel.shm_rmid_forced",
		"kernel.msgmax", "kernel.msgmnb", "kernel.msgmni", "kernel.sem":
		return true
	}
	return strings.HasPrefix(name, "fs.mqueue.") || strings.HasPrefix(name, "net.")
}

// userNamespace refuses a pod that shares the node's user namespace when
// its source requires a user namespace of its own.
func (pl *Policy) userNamespace(p *pod.Pod) []Violation {
	flag, required := pl.RequireUserNamespaces[p.Metadata.Source]
	if !required || p.UserNamespace() {
		return nil
	}
	return []Violation{{Path: "spec.hostUsers",
		Msg: fmt.Sprintf("must be false: pods of source %s run in a user namespace of their own (--%s=required)", p.Metadata.Source, flag)}}
}

// cdiAnnotationPrefix is the prefix of the annotations that name CDI
// devices, containerd CRI's convention.
const cdiAnnotationPrefix = "cdi.k8s.io/"

// devices checks the devices a pod asks for against its source's
// AllowedDevices.
func (pl *Policy) devices(p *pod.Pod) []Violation {
	src := p.Metadata.Source
	allowed, limited := pl.AllowedDevices[src]
	if !limited {
		return nil
	}
	var out []Violation
	refuse := func(path, what string) {
		out = append(out, Violation{Path: path,
			Msg: fmt.Sprintf("%s is a device, which pods of source %s may not use (--url-allowed-devices does not name it)", what, src)})
	}
	each(p, func(cpath string, c *pod.Container) {
		for _, list := range []struct {
			path string
			rl   pod.ResourceList
		}{{cpath + ".resources.limits", c.Resources.Limits}, {cpath + ".resources.requests", c.Resources.Requests}} {
			names := make([]string, 0, len(list.rl))
			for name := range list.rl {
				names = append(names, string(name))
			}
			slices.Sort(names)
			for _, name := range names {
				if extended(name) && !slices.Contains(allowed, name) {
					refuse(list.path+"["+name+"]", strconv.Quote(name))
				}
			}
		}
	})
	keys := make([]string, 0, len(p.Metadata.Annotations))
	for k := range p.Metadata.Annotations {
		if strings.HasPrefix(k, cdiAnnotationPrefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		for dev := range strings.SplitSeq(p.Metadata.Annotations[k], ",") {
			kind, _, _ := strings.Cut(strings.TrimSpace(dev), "=")
			if !slices.Contains(allowed, kind) {
				refuse("metadata.annotations["+k+"]", fmt.Sprintf("CDI device %q (kind %s)", strings.TrimSpace(dev), kind))
			}
		}
	}
	return out
}

// extended reports whether a resource name is an extended resource's: it
// has a "/" and is not in the kubernetes.io domain.
func extended(name string) bool {
	domain, _, ok := strings.Cut(name, "/")
	return ok && domain != "kubernetes.io" && !strings.HasSuffix(domain, ".kubernetes.io")
}
