package podruntime

import (
	"context"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/protobuf/types"
	"github.com/containerd/typeurl/v2"
)

func TestRecordCache(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		then    func(c *recordCache)
		at      time.Duration
		tasks   []string
		relists bool
	}{
		{"nothing changed", nil, time.Second, []string{"a", "other"}, false},
		{"tug changed a record", func(c *recordCache) { c.changed() }, time.Second, []string{"a"}, true},
		{"a new task", nil, time.Second, []string{"a", "b"}, true},
		{"a task gone", nil, time.Second, nil, false},
		{"too old", nil, recordsMaxAge, []string{"a"}, true},
		{"clock went back", nil, -time.Second, []string{"a"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c recordCache
			lists := 0
			list := func(context.Context) ([]containers.Container, error) {
				lists++
				return []containers.Container{{ID: "a", Labels: map[string]string{"k": "v"},
					Spec: &types.Any{TypeUrl: "spec", Value: make([]byte, 10<<10)}, Extensions: map[string]typeurl.Any{"x": &types.Any{}}}}, nil
			}
			if _, err := c.get(context.Background(), t0, []string{"a", "other"}, list); err != nil {
				t.Fatal(err)
			}
			if tt.then != nil {
				tt.then(&c)
			}
			recs, err := c.get(context.Background(), t0.Add(tt.at), tt.tasks, list)
			if err != nil || len(recs) != 1 || recs[0].ID != "a" || recs[0].Labels["k"] != "v" {
				t.Fatalf("get = %v, %v", recs, err)
			}
			if recs[0].Spec != nil || recs[0].Extensions != nil {
				t.Errorf("kept the spec (%v) or extensions (%v)", recs[0].Spec, recs[0].Extensions)
			}
			if got := lists == 2; got != tt.relists {
				t.Errorf("listed again: %v, want %v", got, tt.relists)
			}
		})
	}
}

// A change made while the records are being listed is not lost: the next
// call lists them again.
func TestRecordCacheChangeDuringList(t *testing.T) {
	var c recordCache
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	lists := 0
	list := func(context.Context) ([]containers.Container, error) {
		lists++
		if lists == 1 {
			c.changed()
		}
		return nil, nil
	}
	c.get(context.Background(), t0, nil, list)
	c.get(context.Background(), t0, nil, list)
	if lists != 2 {
		t.Errorf("lists = %d, want 2", lists)
	}
}
