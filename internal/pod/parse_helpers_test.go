package pod_test

import (
	"os"
	"testing"

	"tug/internal/manifest"
	"tug/internal/pod"
)

// The tests of package pod that need a pod as a manifest file makes it
// (defaults applied, named for its node) read it with package manifest,
// with the options of its golden tests.

// testOptions are the ParseOptions of manifest's golden tests.
func testOptions(file string) manifest.ParseOptions {
	return manifest.ParseOptions{
		Origin:   pod.Origin{Source: "file:testdata", File: file},
		Hostname: "node1",
	}
}

// parseOne parses src, which must hold exactly one pod.
func parseOne(t *testing.T, src string, opts manifest.ParseOptions) *pod.Pod {
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

const minimalPod = `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers: [{name: app, image: busybox}]
`

func ptr[T any](v T) *T { return &v }

// parseObjectsFile parses manifest's testdata/good/objects.yaml and binds
// its pod to its objects.
func parseObjectsFile(t *testing.T) (*pod.Pod, manifest.Parsed) {
	t.Helper()
	data, err := os.ReadFile("../manifest/testdata/good/objects.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pf, err := manifest.ParseFile(data, testOptions("objects.yaml"))
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
