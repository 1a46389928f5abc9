package resize

import (
	"context"
	"errors"
	"testing"

	"tug/internal/pod"
	"tug/internal/podplan"
)

// fakeNode resizes nothing but records what it was asked, and reports
// usage as the container's memory usage.
type fakeNode struct {
	usage   int64
	resized []string
}

func (f *fakeNode) ResizeContainer(_ context.Context, id string, _ pod.LinuxResources, _ pod.Resources, _ string) error {
	f.resized = append(f.resized, id)
	return nil
}

func (f *fakeNode) ResizeFits(*pod.Pod) (string, string) { return "", "" }

func (f *fakeNode) ContainerMemoryUsage(string, string) (int64, error) { return f.usage, nil }

// TestResizeMemoryBelowUsage: a memory limit lowered below what the
// container uses is refused, and nothing is resized; a limit raised, or
// lowered above the usage, or a change of cpu alone, is applied.
func TestResizeMemoryBelowUsage(t *testing.T) {
	mem := func(v string) pod.Resources {
		return pod.Resources{Limits: pod.ResourceList{pod.ResourceMemory: pod.MustParseQuantity(v)}}
	}
	tests := []struct {
		name     string
		old, new pod.Resources
		usage    int64
		refused  bool
	}{
		{name: "lowered below the usage", old: mem("64Mi"), new: mem("32Mi"), usage: 48 << 20, refused: true},
		{name: "lowered above the usage", old: mem("64Mi"), new: mem("32Mi"), usage: 16 << 20},
		{name: "raised", old: mem("32Mi"), new: mem("64Mi"), usage: 48 << 20},
		{name: "no memory limit", old: mem("64Mi"), new: pod.Resources{}, usage: 48 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := &fakeNode{usage: tt.usage}
			h := Hook{Runtime: node, Cgroups: node}
			old := tt.old
			it := podplan.ResizeItem{Rec: pod.RuntimeContainer{ID: "c1", Allocated: &old}}
			err := h.Resize(context.Background(), it, &pod.Container{Name: "app", Resources: tt.new}, pod.LinuxResources{}, "hash")
			if refused := errors.Is(err, pod.ErrResizeBelowUsage); refused != tt.refused {
				t.Fatalf("Resize = %v, want refused %v", err, tt.refused)
			}
			if resized := len(node.resized) > 0; resized == tt.refused {
				t.Errorf("resized %v, want %v", node.resized, !tt.refused)
			}
		})
	}
}
