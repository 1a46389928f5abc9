package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateUserNamespaceExample checks that the pod of the Kubernetes
// website's user namespace task ("Use a User Namespace With a Pod",
// pods/user-namespaces-stateless.yaml) passes "tug validate" as it is
// written there.
func TestValidateUserNamespaceExample(t *testing.T) {
	const example = `apiVersion: v1
kind: Pod
metadata:
  name: userns
spec:
  hostUsers: false
  containers:
  - name: shell
    command: ["sleep", "infinity"]
    image: debian
`
	file := filepath.Join(t.TempDir(), "user-namespaces-stateless.yaml")
	if err := os.WriteFile(file, []byte(example), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := testEnv.validate([]string{file}, &stdout, &stderr); code != 0 {
		t.Fatalf("validate = %d, want 0; stderr:\n%s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "user-namespaces-stateless.yaml: ok") {
		t.Errorf("stdout %q, want ok", stdout.String())
	}
	if stderr.Len() > 0 {
		t.Errorf("stderr not empty:\n%s", stderr.String())
	}
}
