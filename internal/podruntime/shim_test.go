package podruntime

import (
	"context"
	"errors"
	"testing"
	"tug/internal/images"
	"tug/internal/volume"

	containerd "github.com/containerd/containerd/v2/client"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestWithShimGroup(t *testing.T) {
	for _, tc := range []struct {
		group string
		want  map[string]string
	}{
		{"", nil},
		{"tug-pod-x", map[string]string{shimGroupAnnotation: "tug-pod-x"}},
	} {
		var s specs.Spec
		if err := withShimGroup(tc.group)(context.Background(), nil, nil, &s); err != nil {
			t.Fatal(err)
		}
		if len(s.Annotations) != len(tc.want) || s.Annotations[shimGroupAnnotation] != tc.want[shimGroupAnnotation] {
			t.Errorf("group %q: annotations %v, want %v", tc.group, s.Annotations, tc.want)
		}
	}
}

func TestShimGroupingConfig(t *testing.T) {
	for _, tc := range []struct{ in, want string }{{"", ShimGroupingPod}, {"pod", "pod"}, {"node", "node"}, {"host", ""}} {
		c := Config{Client: &containerd.Client{}, Images: &images.Manager{}, Volumes: &volume.Manager{}, Namespace: "n", RootDir: "/r", LogsDir: "/l", LoggerPath: "/bin/tug", ShimGrouping: tc.in}
		err := c.setDefaults()
		if tc.want == "" {
			if !errors.Is(err, ErrShimGrouping) {
				t.Errorf("%q: %v, want ErrShimGrouping", tc.in, err)
			}
			continue
		}
		if err != nil || c.ShimGrouping != tc.want {
			t.Errorf("%q: %q, %v; want %q", tc.in, c.ShimGrouping, err, tc.want)
		}
	}
}
