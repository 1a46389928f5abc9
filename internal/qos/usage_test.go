package qos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestPodPidsLimit(t *testing.T) {
	tests := []struct {
		name   string
		limit  int64             // Config.PodPidsLimit
		events map[string]string // pids.events below the pod cgroup ("": its own)
		want   PidsLimit
	}{
		{name: "not reached", limit: 300, events: map[string]string{"": "max 0\n", "c1": "max 0\n"}, want: PidsLimit{Max: 300}},
		{name: "counted in the pod cgroup", limit: 300, events: map[string]string{"": "max 7\n", "c1": "max 0\n"}, want: PidsLimit{Max: 300, Refused: 7}},
		{name: "counted in the forking containers' cgroups", limit: 300, events: map[string]string{"": "max 0\n", "c1": "max 2\n", "c2": "max 3\n"}, want: PidsLimit{Max: 300, Refused: 5}},
		{name: "hierarchical count and a local one", limit: 300, events: map[string]string{"": "max 5\nmax.imposed 5\n", "c1": "max 5\n"}, want: PidsLimit{Max: 300, Refused: 5}},
		{name: "no pids.events in a child", limit: 300, events: map[string]string{"": "max 1\n", "c1": ""}, want: PidsLimit{Max: 300, Refused: 1}},
		{name: "unlimited", limit: -1, events: map[string]string{"": "max 0\n"}, want: PidsLimit{Max: -1}},
	}
	for _, version := range []int{1, 2} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("v%d/%s", version, tt.name), func(t *testing.T) {
				ctx := context.Background()
				m := fakeManager(t, version, Config{PodPidsLimit: tt.limit})
				if err := m.Init(ctx); err != nil {
					t.Fatal(err)
				}
				p := bestEffortPod("b")
				dir, err := m.EnsurePod(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				for sub, content := range tt.events {
					d := filepath.Join(m.ctrl["pids"], dir, sub)
					if err := os.MkdirAll(d, 0o755); err != nil {
						t.Fatal(err)
					}
					if content == "" {
						continue
					}
					if err := os.WriteFile(filepath.Join(d, "pids.events"), []byte(content), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				got, err := m.PodPidsLimit(p)
				if err != nil || got != tt.want {
					t.Errorf("PodPidsLimit = %+v, %v; want %+v", got, err, tt.want)
				}
			})
		}
	}
}

func TestPodPidsLimitNoCgroup(t *testing.T) {
	m := fakeManager(t, 1, Config{PodPidsLimit: 300})
	if _, err := m.PodPidsLimit(bestEffortPod("gone")); err == nil {
		t.Error("PodPidsLimit of a pod with no cgroup: no error")
	}
	delete(m.ctrl, "pids")
	if _, err := m.PodPidsLimit(bestEffortPod("gone")); !errors.Is(err, ErrMissingController) {
		t.Errorf("PodPidsLimit with no pids controller: %v, want ErrMissingController", err)
	}
}
