package policy

import (
	"errors"
	"strings"
	"testing"

	"tug/internal/pod"
)

func TestNodeAdmit(t *testing.T) {
	node := &Node{
		Name:   "gw1",
		Labels: map[string]string{"kubernetes.io/arch": "arm64", "kubernetes.io/os": "linux", "site": "plant-7", "slots": "4"},
		Taints: []Taint{{Key: "dedicated", Value: "edge", Effect: "NoSchedule"}, {Key: "soft", Effect: "PreferNoSchedule"}},
		// RuntimeClasses declares nvidia only.
		RuntimeClasses: map[string]bool{"nvidia": true},
	}
	class := func(s string) *string { return &s }
	tolerateAll := []pod.Toleration{{Operator: "Exists"}}
	term := func(rs ...pod.NodeSelectorRequirement) *pod.Affinity {
		return &pod.Affinity{NodeAffinity: &pod.NodeAffinity{Required: &pod.NodeSelector{NodeSelectorTerms: []pod.NodeSelectorTerm{{MatchExpressions: rs}}}}}
	}
	tests := []struct {
		name   string
		spec   pod.PodSpec
		reason string // "" admitted
	}{
		{"selector matches", pod.PodSpec{NodeSelector: map[string]string{"site": "plant-7"}, Tolerations: tolerateAll}, ""},
		{"selector value differs", pod.PodSpec{NodeSelector: map[string]string{"site": "plant-8"}, Tolerations: tolerateAll}, ReasonNodeAffinity},
		{"selector label missing", pod.PodSpec{NodeSelector: map[string]string{"gpu": "yes"}, Tolerations: tolerateAll}, ReasonNodeAffinity},
		{"affinity In", pod.PodSpec{Affinity: term(pod.NodeSelectorRequirement{Key: "kubernetes.io/arch", Operator: "In", Values: []string{"amd64", "arm64"}}), Tolerations: tolerateAll}, ""},
		{"affinity NotIn", pod.PodSpec{Affinity: term(pod.NodeSelectorRequirement{Key: "kubernetes.io/arch", Operator: "NotIn", Values: []string{"arm64"}}), Tolerations: tolerateAll}, ReasonNodeAffinity},
		{"affinity DoesNotExist", pod.PodSpec{Affinity: term(pod.NodeSelectorRequirement{Key: "gpu", Operator: "DoesNotExist"}), Tolerations: tolerateAll}, ""},
		{"affinity Gt", pod.PodSpec{Affinity: term(pod.NodeSelectorRequirement{Key: "slots", Operator: "Gt", Values: []string{"2"}}), Tolerations: tolerateAll}, ""},
		{"affinity Lt fails", pod.PodSpec{Affinity: term(pod.NodeSelectorRequirement{Key: "slots", Operator: "Lt", Values: []string{"2"}}), Tolerations: tolerateAll}, ReasonNodeAffinity},
		{"no toleration", pod.PodSpec{}, ReasonTaint},
		{"toleration Equal", pod.PodSpec{Tolerations: []pod.Toleration{{Key: "dedicated", Value: "edge", Effect: "NoSchedule"}}}, ""},
		{"toleration wrong value", pod.PodSpec{Tolerations: []pod.Toleration{{Key: "dedicated", Value: "core"}}}, ReasonTaint},
		{"toleration Exists by key", pod.PodSpec{Tolerations: []pod.Toleration{{Key: "dedicated", Operator: "Exists"}}}, ""},
		{"toleration other effect", pod.PodSpec{Tolerations: []pod.Toleration{{Key: "dedicated", Operator: "Exists", Effect: "NoExecute"}}}, ReasonTaint},
		{"runtime class declared", pod.PodSpec{Tolerations: tolerateAll, RuntimeClassName: class("nvidia")}, ""},
		{"runtime class not declared", pod.PodSpec{Tolerations: tolerateAll, RuntimeClassName: class("kata")}, ReasonRuntimeClass},
		{"no runtime class", pod.PodSpec{Tolerations: tolerateAll}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &pod.Pod{Spec: tt.spec}
			err := node.Admit(p)
			var nm *NodeMismatch
			switch {
			case tt.reason == "" && err != nil:
				t.Fatalf("Admit = %v, want admitted", err)
			case tt.reason == "":
			case !errors.As(err, &nm) || !errors.Is(err, ErrNodeMismatch):
				t.Fatalf("Admit = %v, want a *NodeMismatch", err)
			case nm.Reason != tt.reason:
				t.Fatalf("reason %q (%v), want %q", nm.Reason, err, tt.reason)
			case tt.reason == ReasonRuntimeClass && (!strings.Contains(err.Error(), `"kata"`) || !strings.Contains(err.Error(), "--runtime-class")):
				t.Fatalf("Admit = %q: want the class and the setting named", err)
			}
		})
	}
}

func TestParseNodeSettings(t *testing.T) {
	labels, err := ParseNodeLabels("site=plant-7, tier=edge,,empty=")
	if err != nil || len(labels) != 3 || labels["site"] != "plant-7" || labels["empty"] != "" {
		t.Fatalf("ParseNodeLabels = %v, %v", labels, err)
	}
	if _, err := ParseNodeLabels("novalue"); !errors.Is(err, ErrBadNodeSetting) {
		t.Errorf("ParseNodeLabels(novalue) = %v, want ErrBadNodeSetting", err)
	}
	taints, err := ParseTaints("dedicated=edge:NoSchedule,gpu:NoExecute")
	if err != nil || len(taints) != 2 || taints[1].Key != "gpu" || taints[1].Effect != "NoExecute" || taints[0].String() != "dedicated=edge:NoSchedule" {
		t.Fatalf("ParseTaints = %v, %v", taints, err)
	}
	for _, bad := range []string{"dedicated=edge", "x:Sometimes", ":NoSchedule"} {
		if _, err := ParseTaints(bad); !errors.Is(err, ErrBadNodeSetting) {
			t.Errorf("ParseTaints(%q) = %v, want ErrBadNodeSetting", bad, err)
		}
	}
}

// TestNodeAdmitAppArmor: on a node without AppArmor a Localhost profile,
// the pod's or a container's, is refused; RuntimeDefault and Unconfined are
// admitted (they have no effect there). A node with AppArmor admits all.
func TestNodeAdmitAppArmor(t *testing.T) {
	profile := func(typ pod.AppArmorProfileType) *pod.AppArmorProfile {
		ap := &pod.AppArmorProfile{Type: typ}
		if typ == pod.AppArmorLocalhost {
			ap.LocalhostProfile = new("tug-test")
		}
		return ap
	}
	tests := []struct {
		name     string
		pod, ctr *pod.AppArmorProfile
		wantPath string // "" admitted without AppArmor
	}{
		{name: "none"},
		{name: "runtime default", pod: profile(pod.AppArmorRuntimeDefault)},
		{name: "unconfined", ctr: profile(pod.AppArmorUnconfined)},
		{name: "pod localhost", pod: profile(pod.AppArmorLocalhost), wantPath: "spec.securityContext.appArmorProfile"},
		{name: "container localhost", ctr: profile(pod.AppArmorLocalhost), wantPath: "spec.containers[1].securityContext.appArmorProfile"},
		{name: "container overrides pod", pod: profile(pod.AppArmorLocalhost), ctr: profile(pod.AppArmorUnconfined), wantPath: "spec.securityContext.appArmorProfile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &pod.Pod{Spec: pod.PodSpec{
				SecurityContext: &pod.PodSecurityContext{AppArmorProfile: tt.pod},
				Containers:      []pod.Container{{Name: "a"}, {Name: "b", SecurityContext: &pod.SecurityContext{AppArmorProfile: tt.ctr}}},
			}}
			if err := (&Node{AppArmor: true}).Admit(p); err != nil {
				t.Errorf("a node with AppArmor refuses: %v", err)
			}
			err := (&Node{}).Admit(p)
			var nm *NodeMismatch
			switch {
			case tt.wantPath == "" && err != nil:
				t.Fatalf("Admit = %v, want admitted", err)
			case tt.wantPath == "":
			case !errors.As(err, &nm) || nm.Reason != ReasonAppArmor || !strings.Contains(nm.Msg, tt.wantPath):
				t.Fatalf("Admit = %v, want reason AppArmor naming %s", err, tt.wantPath)
			}
		})
	}
}
