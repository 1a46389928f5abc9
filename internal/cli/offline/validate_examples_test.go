package offline

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateKubernetesExamples checks that the pods of the Kubernetes
// documentation's tasks for the Pod fields of recent releases pass "tug
// validate" as they are published: "Use an Image Volume With a Pod"
// (pods/image-volumes.yaml and pods/image-volumes-subpath.yaml, in YAML's
// flow style), "Use a User Namespace With a Pod"
// (pods/user-namespaces-stateless.yaml) and "Set Permissions on an
// emptyDir Volume" (pods/emptydir-volume-mode.yaml), and the pod-level
// resources and resize tasks' (websiteResizeExamples); with no warning.
func TestValidateKubernetesExamples(t *testing.T) {
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
		{"user-namespaces-stateless.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: userns
spec:
  hostUsers: false
  containers:
  - name: shell
    command: ["sleep", "infinity"]
    image: debian
`},
		{"emptydir-volume-mode.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: emptydir-mode-demo
spec:
  containers:
  - image: registry.k8s.io/busybox
    name: test-container
    command: ["sleep", "3600"]
    volumeMounts:
    - mountPath: /tmp
      name: tmp-volume
  volumes:
  - name: tmp-volume
    emptyDir:
      mode: 01777
`},
	}
	for name, manifest := range websiteResizeExamples {
		tests = append(tests, struct {
			name     string
			manifest string
		}{name, manifest})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tt.name)
			if err := os.WriteFile(path, []byte(tt.manifest), 0o644); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			if code := testValidate([]string{path}, &stdout, &stderr); code != 0 {
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
