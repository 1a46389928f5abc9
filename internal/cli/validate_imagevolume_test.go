package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateImageVolumeExamples checks that the image-volume pods of the
// Kubernetes documentation (the task "Use an Image Volume With a Pod":
// examples pods/image-volumes.yaml and pods/image-volumes-subpath.yaml,
// written in YAML's flow style as published) pass "tug validate"
// unchanged.
func TestValidateImageVolumeExamples(t *testing.T) {
	tests := []struct {
		name     string
		manifest string
	}{
		{"image-volumes.yaml", `---
{
  apiVersion: "v1",
  kind: "Pod",
  metadata: {
    name: "image-volume",
  },
  spec: {
    containers: [{
      name: "shell",
      command: [
        "sleep",
        "infinity",
      ],
      image: "debian",
      volumeMounts: [{
        name: "volume",
        mountPath: "/volume",
      }],
    }],
    volumes: [{
      name: "volume",
      image: {
        reference: "quay.io/crio/artifact:v2",
        pullPolicy: "IfNotPresent",
      },
    }],
  },
}
`},
		{"image-volumes-subpath.yaml", `---
{
  apiVersion: "v1",
  kind: "Pod",
  metadata: {
    name: "image-volume",
  },
  spec: {
    containers: [{
      name: "shell",
      command: [
        "sleep",
        "infinity",
      ],
      image: "debian",
      volumeMounts: [{
        name: "volume",
        mountPath: "/volume",
        subPath: "dir",
      }],
    }],
    volumes: [{
      name: "volume",
      image: {
        reference: "quay.io/crio/artifact:v2",
        pullPolicy: "IfNotPresent",
      },
    }],
  },
}
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tt.name)
			if err := os.WriteFile(path, []byte(tt.manifest), 0o644); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			if code := testEnv.validate([]string{path}, &stdout, &stderr); code != 0 {
				t.Fatalf("validate %s = %d, want 0; stderr:\n%s", tt.name, code, stderr.String())
			}
			if stderr.Len() > 0 {
				t.Errorf("stderr not empty:\n%s", stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.name+": ok") {
				t.Errorf("stdout does not say %s is ok:\n%s", tt.name, stdout.String())
			}
		})
	}
}
