package podvalidate

import (
	"strings"
	"testing"

	"tug/internal/pod"
)

func TestImageRefProblem(t *testing.T) {
	tests := []struct {
		name, ref, want string
	}{
		{"short name", "busybox", ""},
		{"tag", "busybox:1.36", ""},
		{"registry with port", "127.0.0.1:5000/tug/busybox:1.35", ""},
		{"digest", "docker.io/library/busybox@sha256:" + strings.Repeat("a", 64), ""},
		{"tag and digest", "busybox:1.36@sha256:" + strings.Repeat("a", 64), ""},
		{"upper-case tag", "busybox:V1", ""},
		{"upper-case registry host", "Registry.example.com/app:v1", ""},
		{"placeholder", "<your_username>/app:v1", "invalid reference format"},
		{"helm template", "{{ .Values.image }}", "invalid reference format: repository name must be lowercase"},
		{"lower-case template", "{{ image }}", "invalid reference format"},
		{"space", "busybox :1.36", "invalid reference format"},
		{"upper-case repository", "example.com/MyApp:v1", "invalid reference format: repository name must be lowercase"},
		{"upper-case short name", "Busybox", "invalid reference format: repository name must be lowercase"},
		{"image ID", strings.Repeat("f", 64), "invalid repository name, cannot specify 64-byte hexadecimal strings"},
		{"short digest", "busybox@sha256:abc", "invalid reference format"},
		{"empty tag", "busybox:", "invalid reference format"},
		{"name too long", strings.Repeat("a", 256), "repository name must not be more than 255 characters"},
		{"control byte", "busybox\x1b[31m", "invalid reference format"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := imageRefProblem(tt.ref)
			if got != tt.want {
				t.Errorf("imageRefProblem(%q) = %q, want %q", tt.ref, got, tt.want)
			}
			if strings.Contains(got, tt.ref) && tt.ref != "" && got != "" {
				t.Errorf("imageRefProblem(%q) = %q echoes the reference", tt.ref, got)
			}
		})
	}
}

func TestValidateImages(t *testing.T) {
	const bad = "<your_username>/app:v1"
	p := &pod.Pod{
		Metadata: pod.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: pod.PodSpec{
			InitContainers: []pod.Container{{Name: "init", Image: bad}},
			Containers:     []pod.Container{{Name: "app", Image: "Busybox"}, {Name: "ok", Image: "busybox:1.36"}},
			Volumes:        []pod.Volume{{Name: "data", Image: &pod.ImageVolumeSource{Reference: "{{ .Values.data }}"}}},
		},
	}
	pod.SetDefaults(p)
	err := Validate(p)
	if err == nil {
		t.Fatal("Validate accepted unparsable images")
	}
	got := err.Error()
	for _, want := range []string{
		`spec.initContainers[0].image: InvalidImageName: couldn't parse image name "<your_username>/app:v1": invalid reference format`,
		`spec.containers[0].image: InvalidImageName: couldn't parse image name "Busybox": invalid reference format: repository name must be lowercase`,
		`spec.volumes[0].image.reference: InvalidImageName: couldn't parse image name "{{ .Values.data }}": invalid reference format: repository name must be lowercase`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Validate:\n%s\nwant a line %s", got, want)
		}
	}
	if strings.Contains(got, "containers[1]") {
		t.Errorf("Validate refused the valid image busybox:1.36:\n%s", got)
	}
}
