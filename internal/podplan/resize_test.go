package podplan

import (
	"fmt"
	"maps"
	"testing"

	"tug/internal/pod"
	"tug/internal/testutil"
)

// TestResize pins the in-place resize plan: which containers resize,
// and when a resize is refused (a QoS class change, a node without room).
func TestResize(t *testing.T) {
	limits := func(cpu, mem string) pod.Resources {
		l := pod.ResourceList{pod.ResourceCPU: pod.MustParseQuantity(cpu), pod.ResourceMemory: pod.MustParseQuantity(mem)}
		return pod.Resources{Limits: l, Requests: maps.Clone(l)}
	}
	// running is the record of container i of p running with resources
	// allocated: what p would have been created with at them.
	running := func(p *pod.Pod, i int, allocated pod.Resources, state pod.RunState) pod.RuntimeContainer {
		c := pod.WithResources(&p.Spec.Containers[i], allocated)
		q := CopyPod(p)
		q.Spec.Containers[i] = c
		return pod.RuntimeContainer{ID: c.Name, Name: c.Name, State: state, SpecHash: pod.ContainerHash(q, &c), Allocated: &allocated}
	}
	// classOf stands for the QoS tree: Guaranteed when every container's
	// limits equal its requests, else Burstable.
	classOf := func(p *pod.Pod) string {
		for _, c := range p.Spec.Containers {
			if len(c.Resources.Limits) == 0 || !maps.Equal(c.Resources.Limits, c.Resources.Requests) {
				return "Burstable"
			}
		}
		return "Guaranteed"
	}
	tests := []struct {
		name string
		// edit changes the pod after its containers started at 200m/64Mi.
		edit func(p *pod.Pod)
		fits func(*pod.Pod) (string, string)
		// stopped: the container is not running.
		stopped bool
		want    string
	}{
		{"nothing changed", func(p *pod.Pod) {}, nil, false, "none"},
		{"more cpu and memory: resized in place", func(p *pod.Pod) { p.Spec.Containers[0].Resources = limits("400m", "128Mi") }, nil, false,
			"resize app"},
		{"an image change too: recreated, not resized", func(p *pod.Pod) {
			p.Spec.Containers[0].Resources = limits("400m", "128Mi")
			p.Spec.Containers[0].Image = "busybox:1.36"
		}, nil, false, "none"},
		{"memory under RestartContainer: recreated", func(p *pod.Pod) {
			p.Spec.Containers[0].Resources = limits("200m", "128Mi")
			p.Spec.Containers[0].ResizePolicy = []pod.ContainerResizePolicy{{ResourceName: pod.ResourceMemory, RestartPolicy: pod.ResizeRestartContainer}}
		}, nil, false, "none"},
		{"a stopped container: restarted with the new spec", func(p *pod.Pod) { p.Spec.Containers[0].Resources = limits("400m", "128Mi") }, nil, true,
			"none"},
		{"a QoS class change: infeasible", func(p *pod.Pod) {
			r := limits("400m", "128Mi")
			r.Requests[pod.ResourceCPU] = pod.MustParseQuantity("100m")
			p.Spec.Containers[0].Resources = r
		}, nil, false, "refused Infeasible: Pod QOS Class may not change as a result of resizing (from Guaranteed to Burstable)"},
		{"no room now: deferred, tried again", func(p *pod.Pod) { p.Spec.Containers[0].Resources = limits("4", "128Mi") },
			func(*pod.Pod) (string, string) { return "Deferred", "not enough cpu" }, false, "refused Deferred: not enough cpu, retried"},
		{"more than the node has: infeasible", func(p *pod.Pod) { p.Spec.Containers[0].Resources = limits("64", "128Mi") },
			func(*pod.Pod) (string, string) { return ResizeInfeasible, "more cpu than the node" }, false, "refused Infeasible: more cpu than the node"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testutil.Pod("web")
			p.Spec.Containers[0].Resources = limits("200m", "64Mi")
			state := pod.RunRunning
			if tt.stopped {
				state = pod.RunExited
			}
			recs := []pod.RuntimeContainer{running(p, 0, limits("200m", "64Mi"), state)}
			q := CopyPod(p)
			tt.edit(q)
			got := describeResize(Resize(q, GroupByName(recs), classOf, tt.fits))
			if got != tt.want {
				t.Errorf("Resize: %s, want %s", got, tt.want)
			}
		})
	}
}

func describeResize(pl *ResizePlan) string {
	switch {
	case pl == nil:
		return "none"
	case pl.Reason != "":
		s := fmt.Sprintf("refused %s: %s", pl.Reason, pl.Message)
		if pl.Retry {
			s += ", retried"
		}
		return s
	}
	s := "resize"
	for _, it := range pl.Items {
		s += " " + it.Rec.Name
	}
	return s
}

// TestAllocated pins the pod whose QoS class the status reports: each
// container at the resources it was created with while its spec differs
// from them by resources only, whatever its state.
func TestAllocated(t *testing.T) {
	burstable := pod.Resources{
		Requests: pod.ResourceList{pod.ResourceCPU: pod.MustParseQuantity("100m")},
		Limits:   pod.ResourceList{pod.ResourceCPU: pod.MustParseQuantity("200m")},
	}
	guaranteed := pod.Resources{
		Requests: pod.ResourceList{pod.ResourceCPU: pod.MustParseQuantity("200m")},
		Limits:   pod.ResourceList{pod.ResourceCPU: pod.MustParseQuantity("200m")},
	}
	tests := []struct {
		name  string
		state pod.RunState
		edit  func(c *pod.Container)
		want  string // the CPU request of the pod returned
	}{
		{"running, requests raised", pod.RunRunning, func(c *pod.Container) { c.Resources = guaranteed }, "100m"},
		{"just created, requests raised", pod.RunCreated, func(c *pod.Container) { c.Resources = guaranteed }, "100m"},
		{"exited, requests raised", pod.RunExited, func(c *pod.Container) { c.Resources = guaranteed }, "100m"},
		{"nothing changed", pod.RunRunning, func(c *pod.Container) {}, "100m"},
		{"an image change too: the spec", pod.RunRunning, func(c *pod.Container) {
			c.Resources = guaranteed
			c.Image = "busybox:1.36"
		}, "200m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testutil.Pod("web")
			p.Spec.Containers[0].Resources = burstable
			allocated := burstable
			rec := pod.RuntimeContainer{ID: "web", Name: p.Spec.Containers[0].Name, State: tt.state,
				SpecHash: pod.ContainerHash(p, &p.Spec.Containers[0]), Allocated: &allocated}
			q := CopyPod(p)
			tt.edit(&q.Spec.Containers[0])
			got := Allocated(q, []pod.RuntimeContainer{rec}).Spec.Containers[0].Resources.Requests[pod.ResourceCPU]
			if got.String() != tt.want {
				t.Errorf("cpu request %s, want %s", got.String(), tt.want)
			}
		})
	}
}
