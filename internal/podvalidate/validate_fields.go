package podvalidate

import (
	"maps"
	"math"
	"path"
	"regexp"
	"slices"

	"tug/internal/fieldpath"
	"tug/internal/pod"
)

// Checks of the pod fields of the securityContext, host namespace,
// hostname and scheduling areas.

// sysctlName is Kubernetes' sysctl name syntax (dots or slashes).
var sysctlName = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)

// warnAt records a warning for the field at p (relative to the pod).
func (v *validator) warnAt(p, msg string) {
	full := fieldpath.Join(v.prefix, p)
	var line, col int
	if v.at != nil {
		line, col = v.at.Find(full)
	}
	v.warns = append(v.warns, &pod.FieldError{File: v.file, Line: line, Col: col, Path: fieldpath.Escape(full), Msg: msg})
}

// podFields checks the pod-level fields of points 4 to 6.
func (v *validator) podFields(s *pod.PodSpec) {
	if rc := s.RuntimeClassName; rc != nil && !pod.IsDNS1123Subdomain(*rc) {
		v.fail("spec.runtimeClassName", "invalid name %q: %s", *rc, pod.DNS1123SubdomainMsg)
	}
	if sc := s.SecurityContext; sc != nil {
		if sc.FSGroup != nil && (*sc.FSGroup < 0 || *sc.FSGroup > math.MaxInt32) {
			v.fail("spec.securityContext.fsGroup", "must be between 0 and 2147483647, inclusive")
		}
		if p := sc.SupplementalGroupsPolicy; p != nil && *p != pod.SupplementalGroupsMerge && *p != pod.SupplementalGroupsStrict {
			v.fail("spec.securityContext.supplementalGroupsPolicy", "unsupported value %q: must be \"Merge\" or \"Strict\"", *p)
		}
		if p := sc.FSGroupChangePolicy; p != nil && *p != "OnRootMismatch" && *p != "Always" {
			v.fail("spec.securityContext.fsGroupChangePolicy", "unsupported value %q: must be \"OnRootMismatch\" or \"Always\"", *p)
		}
		for i, g := range sc.SupplementalGroups {
			if g < 0 || g > math.MaxInt32 {
				v.fail(fieldpath.Index("spec.securityContext.supplementalGroups", i), "must be between 0 and 2147483647, inclusive")
			}
		}
		names := map[string]bool{}
		for i, sy := range sc.Sysctls {
			p := fieldpath.Index("spec.securityContext.sysctls", i)
			switch {
			case sy.Name == "":
				v.fail(p+".name", "required")
			case len(sy.Name) > 253 || !sysctlName.MatchString(sy.Name):
				v.fail(p+".name", "invalid sysctl name %q: lower case dot- or slash-separated words", sy.Name)
			case names[pod.SysctlDotted(sy.Name)]:
				v.fail(p+".name", "duplicate sysctl %q", sy.Name)
			}
			names[pod.SysctlDotted(sy.Name)] = true
		}
	}
	switch {
	case s.HostPID && s.ShareProcessNamespace != nil && *s.ShareProcessNamespace:
		v.fail("spec.shareProcessNamespace", "cannot be true together with hostPID")
	}
	if s.HostUsers != nil && !*s.HostUsers {
		// As Kubernetes' validateHostUsers: a pod in a user namespace of
		// its own shares no other namespace with the node.
		for _, h := range []struct {
			on   bool
			name string
		}{{s.HostNetwork, "hostNetwork"}, {s.HostPID, "hostPID"}, {s.HostIPC, "hostIPC"}} {
			if h.on {
				v.fail("spec."+h.name, "forbidden when spec.hostUsers is false: a pod in its own user namespace cannot share the node's namespaces; remove %s or hostUsers", h.name)
			}
		}
		if s.ShareProcessNamespace != nil && *s.ShareProcessNamespace {
			v.fail("spec.shareProcessNamespace", "%s: one PID namespace for the containers of a pod with hostUsers: false; remove one of them", NotYet)
		}
	}
	for i, a := range s.HostAliases {
		p := fieldpath.Index("spec.hostAliases", i)
		if !isPlainIP(a.IP) {
			v.fail(p+".ip", "%s, got %q", plainIPMsg, a.IP)
		}
		for j, h := range a.Hostnames {
			if !pod.IsDNS1123Subdomain(h) {
				v.fail(fieldpath.Index(p+".hostnames", j), "invalid hostname %q: %s", h, pod.DNS1123SubdomainMsg)
			}
		}
	}
	if s.Hostname != "" && !pod.IsDNS1123Label(s.Hostname) {
		v.fail("spec.hostname", "invalid hostname %q: %s", s.Hostname, pod.DNS1123LabelMsg)
	}
	if s.Subdomain != "" && !pod.IsDNS1123Label(s.Subdomain) {
		v.fail("spec.subdomain", "invalid subdomain %q: %s", s.Subdomain, pod.DNS1123LabelMsg)
	}
	v.hostnameOverride(s)
	for _, k := range slices.Sorted(maps.Keys(s.NodeSelector)) {
		if msg := pod.QualifiedNameError(k); msg != "" {
			v.failKey("spec.nodeSelector", k, "invalid key %q: %s", k, msg)
		}
	}
	if a := s.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.Required != nil {
		p := "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
		if len(a.NodeAffinity.Required.NodeSelectorTerms) == 0 {
			v.fail(p, "at least one term is required")
		}
		for i, t := range a.NodeAffinity.Required.NodeSelectorTerms {
			for j, r := range t.MatchExpressions {
				v.nodeSelectorRequirement(fieldpath.Index(fieldpath.Index(p, i)+".matchExpressions", j), r, false)
			}
			for j, r := range t.MatchFields {
				v.nodeSelectorRequirement(fieldpath.Index(fieldpath.Index(p, i)+".matchFields", j), r, true)
			}
		}
	}
	for i, t := range s.Tolerations {
		p := fieldpath.Index("spec.tolerations", i)
		switch t.Operator {
		case "", "Equal":
			if t.Key == "" {
				v.fail(p+".operator", "must be \"Exists\" when key is empty")
			}
		case "Exists":
			if t.Value != "" {
				v.fail(p+".value", "must be empty when operator is \"Exists\"")
			}
		default:
			v.fail(p+".operator", "unsupported value %q: must be \"Equal\" or \"Exists\"", t.Operator)
		}
		switch t.Effect {
		case "", "NoSchedule", "PreferNoSchedule", "NoExecute":
		default:
			v.fail(p+".effect", "unsupported value %q: must be \"NoSchedule\", \"PreferNoSchedule\" or \"NoExecute\"", t.Effect)
		}
	}
	if n := s.PriorityClassName; n != "" {
		if _, ok := pod.BuiltinPriorityClass(n); !ok && s.Priority == nil {
			v.warnAt("spec.priorityClassName", "ignored on a node: PriorityClass "+`"`+pod.Truncate(n)+`"`+" is a cluster object (only system-node-critical and system-cluster-critical are known); set spec.priority for the eviction order")
		}
	}
}

// nodeSelectorRequirement checks one matchExpressions or matchFields entry.
func (v *validator) nodeSelectorRequirement(p string, r pod.NodeSelectorRequirement, field bool) {
	switch {
	case field && r.Key != "metadata.name":
		v.fail(p+".key", "unsupported value %q: matchFields can only name \"metadata.name\"", r.Key)
	case !field:
		if msg := pod.QualifiedNameError(r.Key); msg != "" {
			v.fail(p+".key", "invalid key %q: %s", r.Key, msg)
		}
	}
	switch r.Operator {
	case "In", "NotIn":
		if len(r.Values) == 0 {
			v.fail(p+".values", "must be specified when operator is %q", r.Operator)
		}
	case "Exists", "DoesNotExist":
		if len(r.Values) > 0 && !field {
			v.fail(p+".values", "must be empty when operator is %q", r.Operator)
		}
	case "Gt", "Lt":
		if len(r.Values) != 1 {
			v.fail(p+".values", "must have one integer when operator is %q", r.Operator)
		}
	default:
		v.fail(p+".operator", "unsupported value %q: must be \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\", \"Gt\" or \"Lt\"", r.Operator)
	}
}

// containerFields checks the container fields of points 4 and 5.
func (v *validator) containerFields(p string, c *pod.Container, init bool) {
	if c.RestartPolicy != nil {
		switch rp := *c.RestartPolicy; {
		case init && rp != pod.RestartAlways:
			v.fail(p+".restartPolicy", "unsupported value %q: an init container's restartPolicy can only be \"Always\" (a sidecar)", rp)
		case rp != pod.RestartAlways && rp != pod.RestartOnFailure && rp != pod.RestartNever:
			v.fail(p+".restartPolicy", "unsupported value %q: must be \"Always\", \"OnFailure\" or \"Never\"", rp)
		}
	}
	v.restartPolicyRules(p, c, init)
	if mp := c.TerminationMessagePath; mp != "" && (!path.IsAbs(mp) || hasDotDot(mp)) {
		v.fail(p+".terminationMessagePath", "must be an absolute path without '..'")
	}
	switch c.TerminationMessagePolicy {
	case "", "File", "FallbackToLogsOnError":
	default:
		v.fail(p+".terminationMessagePolicy", "unsupported value %q: must be \"File\" or \"FallbackToLogsOnError\"", c.TerminationMessagePolicy)
	}
	if c.StdinOnce && !c.Stdin {
		v.fail(p+".stdinOnce", "requires stdin: true")
	}
	if sc := c.SecurityContext; sc != nil && sc.ProcMount != nil && *sc.ProcMount != "Default" && *sc.ProcMount != "Unmasked" {
		v.fail(p+".securityContext.procMount", "unsupported value %q: must be \"Default\" or \"Unmasked\"", *sc.ProcMount)
	}
}

// maxHostnameOverride is the longest spec.hostnameOverride: the kernel's
// limit on a host name.
const maxHostnameOverride = 64

// hostnameOverride checks spec.hostnameOverride as Kubernetes does: a DNS
// subdomain of at most 64 characters, not with setHostnameAsFQDN, not with
// hostNetwork (the pod has the node's hostname then).
func (v *validator) hostnameOverride(s *pod.PodSpec) {
	o := s.HostnameOverride
	if o == nil {
		return
	}
	const p = "spec.hostnameOverride"
	switch {
	case *o == "":
		v.fail(p, "must not be empty")
	case len(*o) > maxHostnameOverride:
		v.fail(p, "must be no more than %d characters, got %d", maxHostnameOverride, len(*o))
	case !pod.IsDNS1123Subdomain(*o):
		v.fail(p, "invalid hostname %q: %s", *o, pod.DNS1123SubdomainMsg)
	}
	if s.SetHostnameAsFQDN != nil && *s.SetHostnameAsFQDN {
		v.fail(p, "may not be set with setHostnameAsFQDN: true (the two are mutually exclusive)")
	}
	if s.HostNetwork {
		v.fail(p, "may not be set with hostNetwork: true (the pod has the node's hostname)")
	}
}

// Limits of restartPolicyRules, as in Kubernetes.
const (
	maxRestartRules      = 20
	maxRestartRuleValues = 255
)

// restartPolicyRules checks a container's restartPolicyRules as
// Kubernetes does (KEP-5307): only with the container's own restartPolicy,
// not on a sidecar, at most 20 rules, each a Restart on exitCodes In or
// NotIn at most 255 values. tug takes them on app containers only.
func (v *validator) restartPolicyRules(p string, c *pod.Container, init bool) {
	if len(c.RestartPolicyRules) == 0 {
		return
	}
	rp := p + ".restartPolicyRules"
	switch {
	case init && c.IsSidecar():
		v.fail(rp, "may not be set for a sidecar (restartPolicy: Always init container)")
		return
	case init:
		v.fail(rp, "not supported by tug yet on an init container")
		return
	case c.RestartPolicy == nil:
		v.fail(rp, "requires the container's restartPolicy to be set")
	case len(c.RestartPolicyRules) > maxRestartRules:
		v.fail(rp, "must have at most %d rules, got %d", maxRestartRules, len(c.RestartPolicyRules))
	}
	for i, r := range c.RestartPolicyRules {
		ip := fieldpath.Index(rp, i)
		switch r.Action {
		case pod.RestartRuleRestart:
		case "":
			v.fail(ip+".action", "required")
		case "RestartAllContainers":
			v.fail(ip+".action", "not supported by tug yet: restarting all of the pod's containers")
		default:
			v.fail(ip+".action", "unsupported value %q: must be \"Restart\"", r.Action)
		}
		e := r.ExitCodes
		if e == nil {
			v.fail(ip+".exitCodes", "required")
			continue
		}
		if e.Operator != "In" && e.Operator != "NotIn" {
			v.fail(ip+".exitCodes.operator", "unsupported value %q: must be \"In\" or \"NotIn\"", e.Operator)
		}
		if len(e.Values) > maxRestartRuleValues {
			v.fail(ip+".exitCodes.values", "must have at most %d values, got %d", maxRestartRuleValues, len(e.Values))
		}
		seen := map[int32]bool{}
		for j, code := range e.Values {
			switch {
			case code < 0:
				v.fail(fieldpath.Index(ip+".exitCodes.values", j), "must be greater than or equal to 0")
			case seen[code]:
				v.fail(fieldpath.Index(ip+".exitCodes.values", j), "duplicate value %d", code)
			}
			seen[code] = true
		}
	}
}
