package offline

import (
	"bytes"
	"testing"
)

// TestValidateObjectRefs: "tug validate FILE" warns (exit 0) about a
// reference to an object the file does not hold; "tug validate DIR" reads
// the files together, as the agent does, and a missing object is an error
// there. A claim's storage class is a warning in both.
func TestValidateObjectRefs(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{
			name:   "file alone",
			args:   []string{"testdata/objects/pod.yaml"},
			code:   0,
			stdout: "testdata/objects/pod.yaml: ok (default/web)\n",
			stderr: "warning: testdata/objects/pod.yaml: pod web: spec.containers[0].envFrom[0].configMapRef.name: ConfigMap default/settings is not in this file; it must be in another file of the directory or the bundle\n" +
				"warning: testdata/objects/pod.yaml: pod web: spec.volumes[0].persistentVolumeClaim.claimName: PersistentVolumeClaim default/data is not in this file; it must be in another file of the directory or the bundle\n",
		},
		{
			name: "directory",
			args: []string{"testdata/objects"},
			code: 1,
			stdout: "testdata/objects/claim.yaml: ok (PersistentVolumeClaim default/data)\n" +
				"testdata/objects/pod.yaml: ok (default/web)\n",
			stderr: "warning: testdata/objects/claim.yaml:6: spec.storageClassName: storage class \"fast-ssd\" ignored: tug backs every claim with a local directory\n" +
				"testdata/objects/pod.yaml: pod web: spec.containers[0].envFrom[0].configMapRef.name: ConfigMap default/settings is not defined in testdata/objects: the pod would wait (CreateContainerConfigError)\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := testValidate(tt.args, &stdout, &stderr)
			if code != tt.code || stdout.String() != tt.stdout || stderr.String() != tt.stderr {
				t.Errorf("validate %v = %d, want %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s\nwant:\n%s",
					tt.args, code, tt.code, stdout.String(), tt.stdout, stderr.String(), tt.stderr)
			}
		})
	}
}
