package pod_test

import (
	"testing"

	"tug/internal/manifest"
	"tug/internal/pod"
	"tug/internal/testutil"
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
	return testutil.ParseOnePod(t, src, opts)
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
	return testutil.BoundPod(t, "../manifest/testdata/good/objects.yaml", testOptions("objects.yaml"))
}
