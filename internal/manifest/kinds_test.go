package manifest

import (
	"strings"
	"testing"
	"tug/internal/pod"
)

// TestKindTyposRefused: a misspelt kind is an error that names the kind
// meant; a Kubernetes kind that needs an API server, or a custom resource,
// is skipped with a warning.
func TestKindTyposRefused(t *testing.T) {
	tests := []struct {
		kind, apiVersion string
		want             string // "" for a skipped kind
	}{
		{"Pdo", "v1", `did you mean "Pod"?`},
		{"Pods", "v1", `did you mean "Pod"?`},
		{"pod", "v1", `did you mean "Pod"?`},
		{"Deploymnet", "apps/v1", `did you mean "Deployment"?`},
		{"Daemonset", "apps/v1", `did you mean "DaemonSet"?`},
		{"statefulset", "apps/v1", `did you mean "StatefulSet"?`},
		{"Jobs", "batch/v1", `did you mean "Job"?`},
		{"ConfigMapp", "v1", `did you mean "ConfigMap"?`},
		{"Secrets", "v1", `did you mean "Secret"?`},
		{"PersistentVolumeClam", "v1", `did you mean "PersistentVolumeClaim"?`},
		{"Servce", "v1", `did you mean "Service"?`},
		{"Lst", "v1", `did you mean "List"?`},
		{"Widget", "v1", `unknown kind "Widget": tug runs Pod,`},
		{"Service", "v1", ""},
		{"Ingress", "networking.k8s.io/v1", ""},
		{"ClusterRoleBinding", "rbac.authorization.k8s.io/v1", ""},
		{"Certificate", "cert-manager.io/v1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			src := "apiVersion: " + tt.apiVersion + "\nkind: " + tt.kind + "\nmetadata: {name: x}\n"
			var warns []string
			_, err := Parse([]byte(src), ParseOptions{Origin: testOptions("k.yaml").Origin, Hostname: "node1",
				Warn: func(fe *pod.FieldError) { warns = append(warns, fe.Error()) }})
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("kind %s: %v, want it skipped", tt.kind, err)
			case tt.want == "" && (len(warns) != 1 || !strings.Contains(warns[0], "skipped")):
				t.Errorf("kind %s: warnings %q, want one saying it is skipped", tt.kind, warns)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("kind %s: %v, want an error with %q", tt.kind, err, tt.want)
			}
		})
	}
}
