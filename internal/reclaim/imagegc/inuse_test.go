package imagegc

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"tug/internal/pod"
)

// TestInUseOf: which names keep an image.
func TestInUseOf(t *testing.T) {
	// normalize is the shape of images.NormalizeRef: a short name gains
	// its registry and tag; a name with a space does not parse.
	normalize := func(ref string) (string, error) {
		if strings.Contains(ref, " ") {
			return "", errors.New("invalid reference")
		}
		if !strings.Contains(ref, "/") {
			ref = "docker.io/library/" + ref
		}
		if !strings.Contains(ref, ":") {
			ref += ":latest"
		}
		return ref, nil
	}
	withImages := func(init, app, volume string) *pod.Pod {
		p := &pod.Pod{}
		if init != "" {
			p.Spec.InitContainers = []pod.Container{{Name: "init", Image: init}}
		}
		p.Spec.Containers = []pod.Container{{Name: "app", Image: app}}
		if volume != "" {
			p.Spec.Volumes = []pod.Volume{{Name: "v", Image: &pod.ImageVolumeSource{Reference: volume}}}
		}
		return p
	}
	tests := []struct {
		name       string
		containers []pod.RuntimeContainer
		wanted     []*pod.Pod
		mounted    []string
		want       []string
	}{
		{name: "nothing", want: []string{}},
		{
			name:       "a container: its name, normalized, and its image ID",
			containers: []pod.RuntimeContainer{{Image: "busybox", ImageID: "sha256:aa"}},
			want:       []string{"busybox", "docker.io/library/busybox:latest", "sha256:aa"},
		},
		{
			name:       "a container whose image ID is not known yet",
			containers: []pod.RuntimeContainer{{Image: "reg.local/app:v1"}},
			want:       []string{"reg.local/app:v1"},
		},
		{
			name:   "a wanted pod that has no container yet: init, app and image volume",
			wanted: []*pod.Pod{withImages("reg.local/init:v1", "reg.local/app:v2", "reg.local/models:v3")},
			want:   []string{"reg.local/app:v2", "reg.local/init:v1", "reg.local/models:v3"},
		},
		{
			name:    "mounted image volumes, as given",
			mounted: []string{"reg.local/models:v2", "sha256:bb"},
			want:    []string{"reg.local/models:v2", "sha256:bb"},
		},
		{
			name:       "a name that does not parse stays as written",
			containers: []pod.RuntimeContainer{{Image: "bad name"}},
			want:       []string{"bad name"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := slices.Sorted(maps.Keys(InUseOf(tt.containers, tt.wanted, tt.mounted, normalize)))
			if !slices.Equal(got, tt.want) {
				t.Errorf("InUseOf = %q, want %q", got, tt.want)
			}
		})
	}
}
