package podruntime

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
	"tug/internal/images"
	"tug/internal/volume"

	containerd "github.com/containerd/containerd/v2/client"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestKeyedMutex(t *testing.T) {
	var k keyedMutex
	unlockA := k.lock("a")
	// Another key is not held up by a.
	done := make(chan struct{})
	go func() { k.lock("b")(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("lock(b) waited for a")
	}
	// The same key waits until it is unlocked.
	var mu sync.Mutex
	order := []string{}
	got := make(chan struct{})
	go func() {
		unlock := k.lock("a")
		mu.Lock()
		order = append(order, "second")
		mu.Unlock()
		unlock()
		close(got)
	}()
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	order = append(order, "first")
	mu.Unlock()
	unlockA()
	<-got
	if len(order) != 2 || order[0] != "first" {
		t.Errorf("order = %v, want the second lock of a after the first's unlock", order)
	}
	if len(k.keys) != 0 {
		t.Errorf("%d keys left after every unlock, want 0", len(k.keys))
	}
}

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
