package testutil

import (
	"testing"

	"tug/internal/pod"
)

func TestPod(t *testing.T) {
	tests := []struct {
		name string
		opts []PodOption
		want func(p *pod.Pod) bool
	}{
		{"defaults", nil, func(p *pod.Pod) bool {
			return p.FullName() == "default/web" && p.Metadata.UID == "uid-web" && p.Spec.RestartPolicy == pod.RestartAlways &&
				len(p.Spec.Containers) == 1 && p.Spec.Containers[0].Name == "app" && p.Spec.Containers[0].Image == "busybox:1.35"
		}},
		{"init and apps", []PodOption{WithInit("setup"), WithApps("a", "b")}, func(p *pod.Pod) bool {
			return len(p.Spec.InitContainers) == 1 && p.Spec.InitContainers[0].Name == "setup" && len(p.Spec.Containers) == 2 && p.Spec.Containers[1].Name == "b"
		}},
		{"image after the containers", []PodOption{WithInit("setup"), WithImage("nginx")}, func(p *pod.Pod) bool {
			return p.Spec.InitContainers[0].Image == "nginx" && p.Spec.Containers[0].Image == "nginx"
		}},
		{"uid, policy, annotations", []PodOption{WithUID("u1"), WithRestartPolicy(pod.RestartNever), WithAnnotations(map[string]string{"a": "b"})}, func(p *pod.Pod) bool {
			return p.Metadata.UID == "u1" && p.Spec.RestartPolicy == pod.RestartNever && p.Metadata.Annotations["a"] == "b"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if p := Pod("web", tt.opts...); !tt.want(p) {
				t.Errorf("Pod(web, %s) = %+v", tt.name, p)
			}
		})
	}
}
