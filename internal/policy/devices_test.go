package policy

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"tug/internal/pod"
)

func TestAllowedDevices(t *testing.T) {
	const url = "http://fleet/pods"
	one := pod.MustParseQuantity("1")
	tests := []struct {
		name    string
		source  string
		allowed map[string][]string
		mutate  func(p *pod.Pod)
		want    []string // violation paths
	}{
		{"no device", url, map[string][]string{url: nil}, func(*pod.Pod) {}, nil},
		{"resource, none allowed", url, map[string][]string{url: nil}, func(p *pod.Pod) {
			p.Spec.Containers[0].Resources.Limits = pod.ResourceList{"example.com/dongle": one, "cpu": one}
		}, []string{"spec.containers[0].resources.limits[example.com/dongle]"}},
		{"resource allowed", url, map[string][]string{url: {"example.com/dongle"}}, func(p *pod.Pod) {
			p.Spec.Containers[0].Resources.Limits = pod.ResourceList{"example.com/dongle": one}
			p.Spec.Containers[0].Resources.Requests = pod.ResourceList{"example.com/dongle": one}
		}, nil},
		{"file source may use any", "file:/etc/tug/manifests", map[string][]string{url: nil}, func(p *pod.Pod) {
			p.Spec.Containers[0].Resources.Limits = pod.ResourceList{"example.com/dongle": one}
			p.Metadata.Annotations = map[string]string{"cdi.k8s.io/x": "vendor.com/gpu=0"}
		}, nil},
		{"CDI annotation, kind not allowed", url, map[string][]string{url: {"example.com/dongle"}}, func(p *pod.Pod) {
			p.Metadata.Annotations = map[string]string{"cdi.k8s.io/x": "example.com/dongle=a,vendor.com/gpu=0", "other": "vendor.com/gpu=0"}
		}, []string{"metadata.annotations[cdi.k8s.io/x]"}},
		{"CDI annotation, kind allowed", url, map[string][]string{url: {"vendor.com/gpu"}}, func(p *pod.Pod) {
			p.Metadata.Annotations = map[string]string{"cdi.k8s.io/x": "vendor.com/gpu=0"}
		}, nil},
		{"kubernetes.io names are not devices", url, map[string][]string{url: nil}, func(p *pod.Pod) {
			p.Spec.Containers[0].Resources.Limits = pod.ResourceList{"kubernetes.io/x": one}
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := basePod()
			p.Metadata.Source = tt.source
			tt.mutate(p)
			pl := &Policy{Levels: map[string]Level{tt.source: Privileged}, AllowedDevices: tt.allowed}
			err := pl.Admit(p)
			var perr *Error
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.As(err, &perr) {
				t.Fatalf("Admit = %v, want a refusal", err)
			}
			var paths []string
			for _, v := range perr.Violations {
				paths = append(paths, v.Path)
				if !strings.Contains(v.Msg, "may not use (--url-allowed-devices does not name it)") {
					t.Errorf("message %q does not say which flag allows it", v.Msg)
				}
			}
			if !slices.Equal(paths, tt.want) {
				t.Errorf("violations %v, want %v", paths, tt.want)
			}
		})
	}
}
