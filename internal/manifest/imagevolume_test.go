package manifest

import (
	"testing"

	"tug/internal/pod"
)

// TestImageVolumeDefaults: an image volume's pullPolicy defaults as a
// container's imagePullPolicy does, and a set one is kept.
func TestImageVolumeDefaults(t *testing.T) {
	const manifest = `apiVersion: v1
kind: Pod
metadata: {name: assets}
spec:
  containers:
  - name: app
    image: busybox:1.36
    volumeMounts: [{name: tagged, mountPath: /a}, {name: latest, mountPath: /b, subPath: dir}, {name: never, mountPath: /c}]
  volumes:
  - {name: tagged, image: {reference: "quay.io/crio/artifact:v2"}}
  - {name: latest, image: {reference: "quay.io/crio/artifact"}}
  - {name: never, image: {reference: "quay.io/crio/artifact", pullPolicy: Never}}
`
	pods, err := Parse([]byte(manifest), testOptions("assets.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]pod.PullPolicy{"tagged": pod.PullIfNotPresent, "latest": pod.PullAlways, "never": pod.PullNever}
	for _, v := range pods[0].Spec.Volumes {
		if v.Image == nil || v.Image.PullPolicy != want[v.Name] {
			t.Errorf("volume %s: %+v, want pullPolicy %s", v.Name, v.Image, want[v.Name])
		}
	}
}
