package pod

import "testing"

func TestRuntimeContainerImageVolume(t *testing.T) {
	rc := RuntimeContainer{ImageVolumes: "assets=tug.test/assets:v1@sha256:aa,tools=docker.io/library/busybox:1.35@sha256:bb"}
	tests := []struct {
		volume string
		want   string
		ok     bool
	}{
		{"assets", "tug.test/assets:v1@sha256:aa", true},
		{"tools", "docker.io/library/busybox:1.35@sha256:bb", true},
		{"other", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.volume, func(t *testing.T) {
			if got, ok := rc.ImageVolume(tt.volume); got != tt.want || ok != tt.ok {
				t.Errorf("ImageVolume(%q) = %q, %v, want %q, %v", tt.volume, got, ok, tt.want, tt.ok)
			}
		})
	}
	if _, ok := (&RuntimeContainer{}).ImageVolume("assets"); ok {
		t.Error("a container with no image volumes has one")
	}
}
