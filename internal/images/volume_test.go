package images

import (
	"testing"

	"tug/internal/pod"
)

func TestVolumePullPolicy(t *testing.T) {
	tests := []struct {
		name string
		src  pod.ImageVolumeSource
		want pod.PullPolicy
	}{
		{"tagged", pod.ImageVolumeSource{Reference: "quay.io/crio/artifact:v2"}, pod.PullIfNotPresent},
		{"latest", pod.ImageVolumeSource{Reference: "quay.io/crio/artifact:latest"}, pod.PullAlways},
		{"no tag", pod.ImageVolumeSource{Reference: "quay.io/crio/artifact"}, pod.PullAlways},
		{"digest", pod.ImageVolumeSource{Reference: "quay.io/crio/artifact@sha256:" + sixtyFourZeros}, pod.PullIfNotPresent},
		{"set", pod.ImageVolumeSource{Reference: "quay.io/crio/artifact:v2", PullPolicy: pod.PullNever}, pod.PullNever},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := VolumePullPolicy(&tt.src); got != tt.want {
				t.Errorf("VolumePullPolicy(%+v) = %s, want %s", tt.src, got, tt.want)
			}
		})
	}
}

const sixtyFourZeros = "0000000000000000000000000000000000000000000000000000000000000000"

func TestIsTarLayer(t *testing.T) {
	tests := []struct {
		mediaType string
		want      bool
	}{
		{"application/vnd.oci.image.layer.v1.tar", true},
		{"application/vnd.oci.image.layer.v1.tar+gzip", true},
		{"application/vnd.oci.image.layer.v1.tar+zstd", true},
		{"application/vnd.docker.image.rootfs.diff.tar.gzip", true},
		{"application/vnd.example.data.v1.tar", true},
		{"application/vnd.example.data.v1.tar+gzip", true},
		{"application/vnd.oci.empty.v1+json", false},
		{"application/vnd.cncf.helm.config.v1+json", false},
		{"text/plain", false},
	}
	for _, tt := range tests {
		t.Run(tt.mediaType, func(t *testing.T) {
			if got := isTarLayer(tt.mediaType); got != tt.want {
				t.Errorf("isTarLayer(%q) = %v, want %v", tt.mediaType, got, tt.want)
			}
		})
	}
}
