package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"tug/internal/pod"
)

// Node admission, as the kubelet's for static pods: a pod whose
// nodeSelector or required node affinity does not match the node's labels,
// or that does not tolerate one of its NoSchedule or NoExecute taints, is
// not run and ends Failed with reason NodeAffinity or Taint; one that asks
// for a Localhost AppArmor profile on a node without AppArmor ends Failed
// with reason AppArmor; one whose runtimeClassName the node does not
// declare (--runtime-class) ends Failed with reason RuntimeClass.

// Reasons of a NodeMismatch: the pod's status.reason.
const (
	ReasonNodeAffinity = "NodeAffinity"
	ReasonTaint        = "Taint"
	ReasonAppArmor     = "AppArmor"
	ReasonRuntimeClass = "RuntimeClass"
)

// Taint is one of the node's taints (--register-with-taints).
type Taint struct {
	Key    string
	Value  string
	Effect string // NoSchedule, PreferNoSchedule or NoExecute
}

// String is "key=value:Effect".
func (t Taint) String() string {
	if t.Value == "" {
		return t.Key + ":" + t.Effect
	}
	return t.Key + "=" + t.Value + ":" + t.Effect
}

// Node is what node admission judges a pod by. Its zero value has no labels
// and no taints. It is read-only once built and safe for concurrent use.
type Node struct {
	Name   string            // matchFields metadata.name
	Labels map[string]string // the standard labels and --node-labels
	Taints []Taint
	// AppArmor is whether the kernel enforces AppArmor profiles.
	AppArmor bool
	// RuntimeClasses are the runtime class names the node declares
	// (--runtime-class): a pod's runtimeClassName must be one of them.
	RuntimeClasses map[string]bool
}

// NodeMismatch is a refusal because of the node's labels, taints or
// AppArmor. It wraps ErrNodeMismatch.
type NodeMismatch struct {
	Reason string // ReasonNodeAffinity, ReasonTaint, ReasonAppArmor or ReasonRuntimeClass
	Msg    string
}

func (e *NodeMismatch) Error() string { return e.Msg }

// Unwrap returns ErrNodeMismatch.
func (e *NodeMismatch) Unwrap() error { return ErrNodeMismatch }

// PodReason returns the pod's status reason, NodeAffinity, Taint,
// AppArmor or RuntimeClass; a refused pod's phase is Failed.
func (e *NodeMismatch) PodReason() string { return e.Reason }

// StandardLabels returns the labels tug sets on every node, as the kubelet
// does: kubernetes.io/hostname, kubernetes.io/os and kubernetes.io/arch.
func StandardLabels(hostname, goos, goarch string) map[string]string {
	return map[string]string{
		"kubernetes.io/hostname": strings.ToLower(hostname),
		"kubernetes.io/os":       goos,
		"kubernetes.io/arch":     goarch,
	}
}

// ParseNodeLabels parses --node-labels: "key=value" pairs separated by
// commas ("" is none).
func ParseNodeLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	for kv := range strings.SplitSeq(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%w: label %q: want key=value", ErrBadNodeSetting, kv)
		}
		out[k] = v
	}
	return out, nil
}

// ParseTaints parses --register-with-taints: "key=value:Effect" (or
// "key:Effect") separated by commas.
func ParseTaints(s string) ([]Taint, error) {
	var out []Taint
	for t := range strings.SplitSeq(s, ",") {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		kv, effect, ok := strings.Cut(t, ":")
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case !ok || k == "":
			return nil, fmt.Errorf("%w: taint %q: want key=value:Effect", ErrBadNodeSetting, t)
		case effect != "NoSchedule" && effect != "PreferNoSchedule" && effect != "NoExecute":
			return nil, fmt.Errorf("%w: taint %q: effect must be NoSchedule, PreferNoSchedule or NoExecute", ErrBadNodeSetting, t)
		}
		out = append(out, Taint{Key: k, Value: v, Effect: effect})
	}
	return out, nil
}

// Admit returns nil when p may run on n, else a *NodeMismatch saying why.
// A nil Node admits everything.
func (n *Node) Admit(p *pod.Pod) error {
	if n == nil {
		return nil
	}
	if msg := n.affinity(p); msg != "" {
		return &NodeMismatch{Reason: ReasonNodeAffinity, Msg: msg}
	}
	for _, t := range n.Taints {
		if t.Effect == "PreferNoSchedule" {
			continue
		}
		if !slices.ContainsFunc(p.Spec.Tolerations, func(tol pod.Toleration) bool { return tolerates(tol, t) }) {
			return &NodeMismatch{Reason: ReasonTaint, Msg: fmt.Sprintf("spec.tolerations: the node has taint %s, which the pod does not tolerate", t)}
		}
	}
	if !n.AppArmor {
		if path := localhostAppArmor(p); path != "" {
			return &NodeMismatch{Reason: ReasonAppArmor, Msg: "Cannot enforce AppArmor: AppArmor is not enabled on the host (" + path + " asks for a Localhost profile)"}
		}
	}
	if rc := p.Spec.RuntimeClass(); rc != "" && !n.RuntimeClasses[rc] {
		return &NodeMismatch{Reason: ReasonRuntimeClass, Msg: RuntimeClassNotDeclared(rc)}
	}
	return nil
}

// RuntimeClassNotDeclared is the refusal of a pod whose runtimeClassName,
// class, the node does not declare.
func RuntimeClassNotDeclared(class string) string {
	return fmt.Sprintf("spec.runtimeClassName: runtime class %q is not declared on this node: declare it with --runtime-class %s=RUNTIME_TYPE[:BINARY] (runtime-class in the config file)", class, class)
}

// localhostAppArmor returns the path of the first appArmorProfile of p
// that, once merged with the pod's, is a Localhost profile ("" if none).
func localhostAppArmor(p *pod.Pod) string {
	for _, list := range []struct {
		path string
		ctrs []pod.Container
	}{{"spec.initContainers", p.Spec.InitContainers}, {"spec.containers", p.Spec.Containers}} {
		for i := range list.ctrs {
			c := &list.ctrs[i]
			ap := p.ContainerSecurity(c).AppArmorProfile
			if ap == nil || ap.Type != pod.AppArmorLocalhost {
				continue
			}
			if c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil {
				return list.path + "[" + strconv.Itoa(i) + "].securityContext.appArmorProfile"
			}
			return "spec.securityContext.appArmorProfile"
		}
	}
	return ""
}

// affinity returns why the pod's nodeSelector or required node affinity
// does not match the node ("" if it does).
func (n *Node) affinity(p *pod.Pod) string {
	for _, k := range sortedKeys(p.Spec.NodeSelector) {
		want := p.Spec.NodeSelector[k]
		if got, ok := n.Labels[k]; !ok || got != want {
			return fmt.Sprintf("spec.nodeSelector[%s]: the node's label is %s, the pod wants %q (set it with --node-labels)", k, labelDesc(got, ok), want)
		}
	}
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.Required == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.Required.NodeSelectorTerms {
		if n.matchTerm(term) {
			return ""
		}
	}
	return "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution: no term matches the node's labels (set them with --node-labels)"
}

func labelDesc(v string, ok bool) string {
	if !ok {
		return "not set"
	}
	return strconv.Quote(v)
}

// matchTerm reports whether every requirement of term holds (an empty
// term matches nothing, as in Kubernetes).
func (n *Node) matchTerm(term pod.NodeSelectorTerm) bool {
	if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		return false
	}
	for _, r := range term.MatchExpressions {
		v, ok := n.Labels[r.Key]
		if !matchRequirement(r, v, ok) {
			return false
		}
	}
	for _, r := range term.MatchFields {
		if !matchRequirement(r, n.Name, true) {
			return false
		}
	}
	return true
}

// matchRequirement applies one requirement to the value v (ok: present).
func matchRequirement(r pod.NodeSelectorRequirement, v string, ok bool) bool {
	switch r.Operator {
	case "In":
		return ok && slices.Contains(r.Values, v)
	case "NotIn":
		return !ok || !slices.Contains(r.Values, v)
	case "Exists":
		return ok
	case "DoesNotExist":
		return !ok
	case "Gt", "Lt":
		if !ok || len(r.Values) != 1 {
			return false
		}
		have, err1 := strconv.ParseInt(v, 10, 64)
		want, err2 := strconv.ParseInt(r.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if r.Operator == "Gt" {
			return have > want
		}
		return have < want
	}
	return false
}

// tolerates reports whether tol tolerates taint t, as Kubernetes matches
// them: same key (or an empty key with Exists: every taint), the value
// with Equal, and the same effect (or an empty one: every effect).
func tolerates(tol pod.Toleration, t Taint) bool {
	if tol.Effect != "" && tol.Effect != t.Effect {
		return false
	}
	if tol.Key == "" {
		return tol.Operator == "Exists"
	}
	if tol.Key != t.Key {
		return false
	}
	switch tol.Operator {
	case "Exists":
		return true
	case "", "Equal":
		return tol.Value == t.Value
	}
	return false
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
