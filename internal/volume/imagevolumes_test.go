package volume

import (
	"reflect"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"tug/internal/pod"
	"tug/internal/testutil"
)

// TestImageVolumeMounts: Prepare leaves an image volume to the runtime, and
// a container binds the volume's directory read-only, nosuid, nodev and
// noexec, whatever its readOnly says.
func TestImageVolumeMounts(t *testing.T) {
	m := testManager(t)
	p := testutil.Pod("web-node1")
	p.Spec.Volumes = []pod.Volume{{Name: "assets", Image: &pod.ImageVolumeSource{Reference: "tug.test/assets:v1", PullPolicy: pod.PullNever}}}
	c := &p.Spec.Containers[0]
	c.VolumeMounts = []pod.VolumeMount{
		{Name: "assets", MountPath: "/assets", ReadOnly: false},
		{Name: "assets", MountPath: "/again", ReadOnly: true},
	}
	if err := m.Prepare(p, pod.Sandbox{IP: "10.244.0.7"}); err != nil {
		t.Fatal(err)
	}
	mounts, err := m.Mounts(p, c, m.StagingDir(p.Metadata.UID, "web_app_0"))
	if err != nil {
		t.Fatal(err)
	}
	src := m.imageVolumePath(p.Metadata.UID, "assets")
	opts := []string{"rbind", "rprivate", "ro", "nosuid", "nodev", "noexec"}
	want := []specs.Mount{
		{Type: "bind", Source: src, Destination: "/assets", Options: opts},
		{Type: "bind", Source: src, Destination: "/again", Options: opts},
	}
	if !reflect.DeepEqual(mounts[:2], want) {
		t.Errorf("mounts = %+v, want %+v", mounts[:2], want)
	}
	if ok, err := m.imageVolumeMounted(p.Metadata.UID, "assets"); ok || err != nil {
		t.Errorf("imageVolumeMounted before any mount = %v, %v, want false", ok, err)
	}
	if _, err := m.imageVolumeMounted(p.Metadata.UID, "../x"); err == nil {
		t.Error("imageVolumeMounted accepted a volume name that climbs out")
	}
}

func TestImageVolumeID(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{"tag", map[string]string{labelImageVolumeRef: "quay.io/crio/artifact:v2", labelImageVolumeID: "sha256:aa"}, "quay.io/crio/artifact:v2@sha256:aa"},
		{"pinned", map[string]string{labelImageVolumeRef: "quay.io/crio/artifact@sha256:aa", labelImageVolumeID: "sha256:aa"}, "quay.io/crio/artifact@sha256:aa"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := imageID(tt.labels); got != tt.want {
				t.Errorf("imageID = %q, want %q", got, tt.want)
			}
		})
	}
}
