package manifest

import (
	"fmt"
	"strings"
	"testing"

	"tug/internal/pod"
)

// TestErrorsTruncateEchoedValues: a huge value in a manifest is cut in
// the error that quotes it, not echoed back whole.
func TestErrorsTruncateEchoedValues(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	src := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers: [{name: app, image: busybox}]\n"
	tests := []struct {
		name, manifest string
	}{
		{"label value", strings.Replace(src, "name: web", "name: web\n  labels: {a: \""+huge+"!\"}", 1)},
		{"label key", strings.Replace(src, "name: web", "name: web\n  labels: {\""+strings.Repeat("k", 1000)+"!\": a}", 1)},
		{"image", strings.Replace(minimalPod, "image: busybox", "image: \"bu sy"+huge+"\"", 1)},
		{"restart policy", minimalPod + "  restartPolicy: " + huge + "\n"},
		{"kind", strings.Replace(minimalPod, "kind: Pod", "kind: "+huge, 1)},
		{"quantity", strings.Replace(src, "image: busybox}", "image: busybox, resources: {limits: {cpu: \""+huge+"\"}}}", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A kind tug does not run is a warning, which quotes it too.
			var warns []string
			opts := testOptions("t.yaml")
			opts.Warn = func(w *pod.FieldError) { warns = append(warns, w.Error()) }
			_, err := Parse([]byte(tt.manifest), opts)
			if err == nil && len(warns) == 0 {
				t.Fatal("no error or warning")
			}
			msg := strings.Join(warns, "\n")
			if err != nil {
				msg = err.Error()
			}
			if len(msg) > 2000 || !strings.Contains(msg, "bytes)") {
				t.Errorf("error of %d bytes, want the value cut: %.300s", len(msg), msg)
			}
		})
	}
}

func TestCaps(t *testing.T) {
	containers := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "    - {name: c%d, image: busybox}\n", i)
		}
		return b.String()
	}
	env := func(n int) string {
		var b strings.Builder
		b.WriteString("      env:\n")
		for i := range n {
			fmt.Fprintf(&b, "        - {name: E%d, value: v}\n", i)
		}
		return b.String()
	}
	head := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n"
	tests := []struct {
		name, manifest, want string
	}{
		{"containers at the cap", head + containers(pod.MaxContainers), ""},
		{"containers over the cap", head + containers(pod.MaxContainers+1), "65 containers (init containers included): tug runs at most 64 per pod"},
		{"init containers count", head + containers(pod.MaxContainers) + "  initContainers:\n    - {name: i, image: busybox}\n", "tug runs at most 64 per pod"},
		{"env at the cap", head + "    - name: c\n      image: busybox\n" + env(pod.MaxEnv), ""},
		{"env over the cap", head + "    - name: c\n      image: busybox\n" + env(pod.MaxEnv+1), "spec.containers[0].env: 1025 entries: tug takes at most 1024 per container"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.manifest), testOptions("t.yaml"))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}
