package kit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSleepPod: the manifest of the benchmarks' resting pods, with and
// without an imagePullPolicy.
func TestSleepPod(t *testing.T) {
	plain := `apiVersion: v1
kind: Pod
metadata:
  name: idle-00
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - name: main
      image: busybox:1.35
      command: ["sleep", "86400"]
`
	tests := []struct {
		name, pullPolicy, want string
	}{
		{"default pull policy", "", plain},
		{"IfNotPresent", "IfNotPresent", strings.Replace(plain, "      command:", "      imagePullPolicy: IfNotPresent\n      command:", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SleepPod("idle-00", "busybox:1.35", tt.pullPolicy); got != tt.want {
				t.Errorf("SleepPod =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestWriteSleepPodsAndAddImage: the pods' files in tug's manifest
// directory, and the archive copied into its image directory.
func TestWriteSleepPodsAndAddImage(t *testing.T) {
	dir := t.TempDir()
	tug := &Tug{Manifests: filepath.Join(dir, "manifests"), ImageDir: filepath.Join(dir, "images")}
	for _, d := range []string{tug.Manifests, tug.ImageDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := tug.WriteSleepPods("fp", 3, "busybox:1.35", ""); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"fp-00", "fp-01", "fp-02"} {
		data, err := os.ReadFile(filepath.Join(tug.Manifests, name+".yaml"))
		if err != nil || string(data) != SleepPod(name, "busybox:1.35", "") {
			t.Errorf("%s.yaml: %q, %v", name, data, err)
		}
	}
	archive := filepath.Join(dir, "busybox.tar")
	if err := os.WriteFile(archive, []byte("layout"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := tug.AddImage(archive); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(tug.ImageDir, "busybox.tar")); err != nil || string(data) != "layout" {
		t.Errorf("image dir holds %q, %v", data, err)
	}
	if err := tug.AddImage(filepath.Join(dir, "missing.tar")); err == nil {
		t.Error("AddImage of a missing archive succeeded")
	}
}
