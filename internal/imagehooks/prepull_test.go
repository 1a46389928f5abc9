package imagehooks

import (
	"testing"

	"tug/internal/pod"
)

func TestImageVolumesChanged(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := []struct {
		name    string
		ref     string // the manifest's image volume reference; "" for no image volume
		mounted string // the running container's ImageVolumes
		want    bool
	}{
		{"no image volume", "", "", false},
		{"same, normalised", "busybox:1.36", "vol=docker.io/library/busybox:1.36@" + digest, false},
		{"same, full", "quay.io/crio/artifact:v2", "vol=quay.io/crio/artifact:v2@" + digest, false},
		{"same, pinned", "quay.io/crio/artifact@" + digest, "vol=quay.io/crio/artifact@" + digest, false},
		{"other tag", "quay.io/crio/artifact:v3", "vol=quay.io/crio/artifact:v2@" + digest, true},
		{"not mounted", "quay.io/crio/artifact:v2", "", true},
		{"no tag counts as changed", "quay.io/crio/artifact", "vol=quay.io/crio/artifact:latest@" + digest, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &pod.Pod{}
			c := pod.Container{Name: "app", VolumeMounts: []pod.VolumeMount{{Name: "vol", MountPath: "/vol"}}}
			v := pod.Volume{Name: "vol", EmptyDir: &pod.EmptyDirVolumeSource{}}
			if tt.ref != "" {
				v = pod.Volume{Name: "vol", Image: &pod.ImageVolumeSource{Reference: tt.ref}}
			}
			p.Spec.Volumes = []pod.Volume{v}
			r := pod.RuntimeContainer{ImageVolumes: tt.mounted}
			if got := imageVolumesChanged(p, &c, &r); got != tt.want {
				t.Errorf("imageVolumesChanged(%q, %q) = %v, want %v", tt.ref, tt.mounted, got, tt.want)
			}
		})
	}
}
