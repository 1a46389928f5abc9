package testutil

import (
	"os"
	"testing"

	"tug/internal/manifest"
	"tug/internal/pod"
)

// ParseOnePod parses src, which must hold exactly one pod.
func ParseOnePod(t testing.TB, src string, opts manifest.ParseOptions) *pod.Pod {
	t.Helper()
	pods, err := manifest.Parse([]byte(src), opts)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(pods) != 1 {
		t.Fatalf("Parse returned %d pods, want 1", len(pods))
	}
	return pods[0]
}

// BoundPod parses the manifest file at path, whose first pod uses its
// objects, and binds that pod to them as the store does.
func BoundPod(t testing.TB, path string, opts manifest.ParseOptions) (*pod.Pod, manifest.Parsed) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := manifest.ParseFile(data, opts)
	if err != nil {
		t.Fatal(err)
	}
	idx := map[pod.ObjectKey]*pod.Object{}
	for _, o := range pf.Objects {
		idx[o.Key()] = o
	}
	p, digest := pod.Bind(pf.Pods[0], func(k pod.ObjectKey) *pod.Object { return idx[k] })
	if digest == "" || p.Bound == nil || len(p.Bound.Missing) != 0 {
		t.Fatalf("Bind: digest %q, bound %+v", digest, p.Bound)
	}
	return p, pf
}
