package policy

import (
	"fmt"
	"strconv"
	"strings"

	"tug/internal/pod"
)

// Violation is one field of a pod that breaks a rule.
type Violation struct {
	// Path is the field path, as in manifest errors:
	// "spec.containers[0].securityContext.capabilities.add[0]".
	Path string
	// Msg says what is wrong and is completed by the rule's name: either
	// `"ALL" is not allowed by` or `must be false under`, followed by
	// "the <level> policy" (see Error).
	Msg string
	// Level is the level whose rule the field breaks; "" for a node-wide
	// rule, whose Msg is complete.
	Level Level
}

// String is "path: msg", as printed in a pod's status.
func (v Violation) String() string { return v.Path + ": " + v.Msg }

// baselineCapabilities are the capabilities the baseline level lets a
// container add (the Pod Security Standards' list, which is containerd's
// and Docker's default set). Read-only.
var baselineCapabilities = map[string]bool{
	"AUDIT_WRITE": true, "CHOWN": true, "DAC_OVERRIDE": true, "FOWNER": true,
	"FSETID": true, "KILL": true, "MKNOD": true, "NET_BIND_SERVICE": true,
	"SETFCAP": true, "SETGID": true, "SETPCAP": true, "SETUID": true,
	"SYS_CHROOT": true,
}

// capName is a capability as written in a manifest ("CAP_NET_ADMIN",
// "net_admin" is refused by validation) without its "CAP_" prefix: tug
// treats both spellings alike, so the policy does too.
func capName(s string) string { return strings.TrimPrefix(strings.TrimSpace(s), "CAP_") }

// Check returns every field of p that breaks the rules of level, in
// manifest order: pod-level fields, then init containers, then containers.
// Privileged allows everything. The result is nil when p complies.
func Check(p *pod.Pod, level Level) []Violation {
	c := checker{level: level}
	switch level {
	case Privileged:
		return nil
	case Baseline, Restricted:
	default:
		// An unknown level is the strictest: a typo must not open the node.
		c.level = Restricted
	}
	c.pod(p)
	return c.out
}

type checker struct {
	level Level
	// userns: the pod runs in a user namespace of its own (hostUsers:
	// false), whose root is an unprivileged host ID: the restricted
	// level's "Running as Non-root" and "Running as Non-root user" checks
	// (runAsNonRoot, runAsUser 0) do not apply, as Kubernetes' Pod Security
	// admission relaxes them for such pods (UserNamespacesPodSecurityStandards).
	userns bool
	out    []Violation
}

func (c *checker) restricted() bool { return c.level == Restricted }

func (c *checker) notAllowed(path, value string) {
	c.out = append(c.out, Violation{Path: path, Msg: value + " is not allowed by", Level: c.level})
}

func (c *checker) must(path, what string) {
	c.out = append(c.out, Violation{Path: path, Msg: "must " + what + " under", Level: c.level})
}

func (c *checker) pod(p *pod.Pod) {
	s := &p.Spec
	c.userns = p.UserNamespace()
	// Host namespaces.
	if s.HostNetwork {
		c.notAllowed("spec.hostNetwork", "true")
	}
	if s.HostPID {
		c.notAllowed("spec.hostPID", "true")
	}
	if s.HostIPC {
		c.notAllowed("spec.hostIPC", "true")
	}
	// HostPath volumes (baseline); restricted allows only ephemeral and
	// projected volume types, of which tug has emptyDir.
	for i, v := range s.Volumes {
		if v.HostPath != nil {
			c.notAllowed(idx("spec.volumes", i)+".hostPath", "a hostPath volume")
		}
	}
	psc := s.SecurityContext
	if psc == nil {
		psc = &pod.PodSecurityContext{}
	}
	if sp := psc.SeccompProfile; sp != nil && sp.Type == pod.SeccompUnconfined {
		c.notAllowed("spec.securityContext.seccompProfile.type", strconv.Quote(string(sp.Type)))
	}
	if ap := psc.AppArmorProfile; ap != nil && ap.Type == pod.AppArmorUnconfined {
		c.notAllowed("spec.securityContext.appArmorProfile.type", strconv.Quote(string(ap.Type)))
	}
	for i, sy := range psc.Sysctls {
		if !SafeSysctl(sy.Name) {
			c.notAllowed(idx("spec.securityContext.sysctls", i)+".name", strconv.Quote(sy.Name)+" (not in the safe set)")
		}
	}
	if c.restricted() && !c.userns {
		if psc.RunAsNonRoot != nil && !*psc.RunAsNonRoot {
			c.notAllowed("spec.securityContext.runAsNonRoot", "false")
		}
		if psc.RunAsUser != nil && *psc.RunAsUser == 0 {
			c.notAllowed("spec.securityContext.runAsUser", "0")
		}
	}
	for i := range s.InitContainers {
		c.container(idx("spec.initContainers", i), &s.InitContainers[i], psc)
	}
	for i := range s.Containers {
		c.container(idx("spec.containers", i), &s.Containers[i], psc)
	}
}

func (c *checker) container(path string, ct *pod.Container, psc *pod.PodSecurityContext) {
	scp := path + ".securityContext"
	sc := ct.SecurityContext
	if sc == nil {
		sc = &pod.SecurityContext{}
	}
	if sc.Privileged != nil && *sc.Privileged {
		c.notAllowed(scp+".privileged", "true")
	}
	var add, drop []string
	if sc.Capabilities != nil {
		add, drop = sc.Capabilities.Add, sc.Capabilities.Drop
	}
	for i, name := range add {
		n := capName(name)
		switch {
		case c.restricted() && n != "NET_BIND_SERVICE":
			c.notAllowed(idx(scp+".capabilities.add", i), strconv.Quote(name))
		case !baselineCapabilities[n]:
			c.notAllowed(idx(scp+".capabilities.add", i), strconv.Quote(name))
		}
	}
	for i, port := range ct.Ports {
		if port.HostPort != 0 {
			c.notAllowed(idx(path+".ports", i)+".hostPort", strconv.Itoa(int(port.HostPort)))
		}
	}
	if sp := sc.SeccompProfile; sp != nil && sp.Type == pod.SeccompUnconfined {
		c.notAllowed(scp+".seccompProfile.type", strconv.Quote(string(sp.Type)))
	}
	if ap := sc.AppArmorProfile; ap != nil && ap.Type == pod.AppArmorUnconfined {
		c.notAllowed(scp+".appArmorProfile.type", strconv.Quote(string(ap.Type)))
	}
	if sc.ProcMount != nil && *sc.ProcMount == "Unmasked" {
		c.notAllowed(scp+".procMount", `"Unmasked"`)
	}
	if !c.restricted() {
		return
	}

	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		c.must(scp+".allowPrivilegeEscalation", "be false")
	}
	if !c.userns {
		podNonRoot := psc.RunAsNonRoot != nil && *psc.RunAsNonRoot
		switch {
		case sc.RunAsNonRoot != nil && !*sc.RunAsNonRoot:
			c.notAllowed(scp+".runAsNonRoot", "false")
		case sc.RunAsNonRoot == nil && !podNonRoot:
			c.must(scp+".runAsNonRoot", "be true (here or in spec.securityContext)")
		}
		if sc.RunAsUser != nil && *sc.RunAsUser == 0 {
			c.notAllowed(scp+".runAsUser", "0")
		}
	}
	podSeccomp := psc.SeccompProfile != nil && psc.SeccompProfile.Type != pod.SeccompUnconfined
	if sc.SeccompProfile == nil && !podSeccomp {
		c.must(scp+".seccompProfile.type", "be RuntimeDefault or Localhost (here or in spec.securityContext)")
	}
	dropsAll := false
	for _, name := range drop {
		if capName(name) == "ALL" {
			dropsAll = true
		}
	}
	if !dropsAll {
		c.must(scp+".capabilities.drop", `include "ALL"`)
	}
}

func idx(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// safeSysctls are the sysctls the baseline level allows (the Pod Security
// Standards' safe set): namespaced, and unable to affect other pods or the
// node. Read-only.
var safeSysctls = map[string]bool{
	"kernel.shm_rmid_forced":              true,
	"net.ipv4.ip_local_port_range":        true,
	"net.ipv4.ip_local_reserved_ports":    true,
	"net.ipv4.ip_unprivileged_port_start": true,
	"net.ipv4.tcp_syncookies":             true,
	"net.ipv4.ping_group_range":           true,
	"net.ipv4.tcp_keepalive_time":         true,
	"net.ipv4.tcp_fin_timeout":            true,
	"net.ipv4.tcp_keepalive_intvl":        true,
	"net.ipv4.tcp_keepalive_probes":       true,
}

// SafeSysctl reports whether name ("net.ipv4.tcp_syncookies", or with
// slashes) is in the safe set.
func SafeSysctl(name string) bool { return safeSysctls[pod.SysctlDotted(name)] }
