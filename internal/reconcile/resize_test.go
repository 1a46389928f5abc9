package reconcile

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"tug/internal/pod"
	"tug/internal/resize"
)

// resizeFake resizes the fake runtime's containers and stands for the
// QoS tree: its class is the function's, and it records the pod cgroup's
// cpu limit at each EnsurePod.
type resizeFake struct {
	*fakeCgroups
	rt      *fakeRuntime
	class   func(p *pod.Pod) string
	usage   int64
	resized []string
	ensured []string // the pod's cpu limit sum at each EnsurePod
}

func (f *resizeFake) ResizeContainer(_ context.Context, id string, _ pod.LinuxResources, allocated pod.Resources, hash string) error {
	f.rt.mu.Lock()
	defer f.rt.mu.Unlock()
	c := f.rt.find(id)
	if c == nil {
		return fmt.Errorf("no container %s", id)
	}
	c.SpecHash, c.Allocated = hash, &allocated
	f.resized = append(f.resized, c.Name)
	return nil
}

func (f *resizeFake) EnsurePod(ctx context.Context, p *pod.Pod) (string, error) {
	var milli int64
	for _, c := range p.Spec.Containers {
		milli += c.Resources.Limits[pod.ResourceCPU].MilliValue()
	}
	f.ensured = append(f.ensured, fmt.Sprintf("%dm", milli))
	return f.fakeCgroups.EnsurePod(ctx, p)
}

func (f *resizeFake) QOSClass(p *pod.Pod) string { return f.class(p) }

func (f *resizeFake) ResizeFits(*pod.Pod) (string, string) { return "", "" }

func (f *resizeFake) ContainerMemoryUsage(string, string) (int64, error) { return f.usage, nil }

// withRes sets a container's cpu and memory limits (and requests equal
// to them).
func withRes(c *pod.Container, cpu, mem string) {
	l := pod.ResourceList{pod.ResourceCPU: pod.MustParseQuantity(cpu), pod.ResourceMemory: pod.MustParseQuantity(mem)}
	c.Resources = pod.Resources{Limits: l, Requests: maps.Clone(l)}
}

func TestSyncResize(t *testing.T) {
	guaranteedUnder := func(cpu int64) func(p *pod.Pod) string {
		return func(p *pod.Pod) string {
			if p.Spec.Containers[0].Resources.Limits[pod.ResourceCPU].MilliValue() < cpu {
				return "Guaranteed"
			}
			return "Burstable"
		}
	}
	tests := []struct {
		name        string
		policy      []pod.ContainerResizePolicy
		cpu, mem    string // a's new limits
		class       func(p *pod.Pod) string
		usage       int64
		wantLog     []string // the runtime's starts and stops
		wantResized []string
		wantEnsured []string
		wantCond    string // "Type/Reason" of the resize condition, "" for none
	}{
		{
			name: "cpu grown in place: pod cgroup first",
			cpu:  "500m", mem: "64Mi", class: func(*pod.Pod) string { return "Guaranteed" },
			wantResized: []string{"a"}, wantEnsured: []string{"600m", "600m"},
		},
		{
			name: "cpu shrunk in place: pod cgroup last",
			cpu:  "100m", mem: "64Mi", class: func(*pod.Pod) string { return "Guaranteed" },
			wantResized: []string{"a"}, wantEnsured: []string{"300m", "200m"},
		},
		{
			name:   "RestartContainer recreates the container",
			policy: []pod.ContainerResizePolicy{{ResourceName: pod.ResourceMemory, RestartPolicy: pod.ResizeRestartContainer}},
			cpu:    "200m", mem: "128Mi", class: func(*pod.Pod) string { return "Guaranteed" },
			wantLog: []string{"stop a/0", "remove a/0", "start a/1"}, wantEnsured: []string{"300m"},
		},
		{
			name: "a QoS class change is refused",
			cpu:  "500m", mem: "64Mi", class: guaranteedUnder(300),
			wantEnsured: []string{"300m"}, wantCond: pod.ConditionPodResizePending + "/Infeasible",
		},
		{
			name: "memory limit below the usage is retried",
			cpu:  "200m", mem: "32Mi", class: func(*pod.Pod) string { return "Guaranteed" }, usage: 48 << 20,
			wantEnsured: []string{"300m", "300m"}, wantCond: pod.ConditionPodResizeInProgress + "/Error",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			rt := &fakeRuntime{}
			s := newTestSyncer(rt, &fakeSandbox{})
			fake := &resizeFake{fakeCgroups: &fakeCgroups{}, rt: rt, class: tt.class, usage: tt.usage}
			s.cg, s.hooks = fake, sortHooks([]Hook{resize.Hook{Runtime: fake, Cgroups: fake}})
			p := testPod(pod.RestartAlways, nil, []string{"a", "b"})
			withRes(&p.Spec.Containers[0], "200m", "64Mi")
			withRes(&p.Spec.Containers[1], "100m", "64Mi")
			p.Spec.Containers[0].ResizePolicy = tt.policy
			if _, err := s.syncPod(ctx, ctx, p); err != nil {
				t.Fatal(err)
			}
			for i := range rt.containers {
				c := &rt.containers[i]
				r := p.Spec.Containers[slices.IndexFunc(p.Spec.Containers, func(x pod.Container) bool { return x.Name == c.Name })].Resources
				c.Allocated = &r
			}
			rt.takeLog()
			fake.ensured = nil

			next := *p
			next.Spec.Containers = slices.Clone(p.Spec.Containers)
			withRes(&next.Spec.Containers[0], tt.cpu, tt.mem)
			if _, err := s.syncPod(ctx, ctx, &next); err != nil {
				t.Fatal(err)
			}
			if got := rt.takeLog(); !slices.Equal(got, tt.wantLog) {
				t.Errorf("runtime log = %v, want %v", got, tt.wantLog)
			}
			if !slices.Equal(fake.resized, tt.wantResized) {
				t.Errorf("resized = %v, want %v", fake.resized, tt.wantResized)
			}
			if !slices.Equal(fake.ensured, tt.wantEnsured) {
				t.Errorf("pod cgroup cpu limits = %v, want %v", fake.ensured, tt.wantEnsured)
			}
			var cond string
			s.notes.peek(p.Metadata.UID, func(n *podNotes) {
				for _, c := range n.resizeConds {
					cond = c.Type + "/" + c.Reason
				}
			})
			if cond != tt.wantCond {
				t.Errorf("resize condition = %q, want %q", cond, tt.wantCond)
			}
			// A second sync changes nothing more.
			fake.resized = nil
			if _, err := s.syncPod(ctx, ctx, &next); err != nil {
				t.Fatal(err)
			}
			if got := rt.takeLog(); len(got) > 0 || len(fake.resized) > 0 && tt.usage == 0 {
				t.Errorf("second sync: runtime log %v, resized %v", got, fake.resized)
			}
		})
	}
}
