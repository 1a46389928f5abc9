package pod

import "testing"

// TestWithResources checks that a change of resources under NotRequired
// is told apart from any other change by the container hash, and that
// the resize policy is no part of the hash.
func TestWithResources(t *testing.T) {
	res := func(cpu, mem string) Resources {
		l := ResourceList{ResourceCPU: MustParseQuantity(cpu), ResourceMemory: MustParseQuantity(mem)}
		r := ResourceList{ResourceCPU: MustParseQuantity(cpu), ResourceMemory: MustParseQuantity(mem)}
		return Resources{Limits: l, Requests: r}
	}
	restartMemory := []ContainerResizePolicy{{ResourceName: ResourceMemory, RestartPolicy: ResizeRestartContainer}}
	tests := []struct {
		name       string
		policy     []ContainerResizePolicy
		next       func(c *Container)
		resizeOnly bool
	}{
		{"cpu and memory", nil, func(c *Container) { c.Resources = res("2", "2Gi") }, true},
		{"limits removed", nil, func(c *Container) { c.Resources = Resources{} }, true},
		{"cpu with memory RestartContainer", restartMemory, func(c *Container) { c.Resources = res("2", "1Gi") }, true},
		{"memory under RestartContainer", restartMemory, func(c *Container) { c.Resources = res("1", "2Gi") }, false},
		{"resources and image", nil, func(c *Container) { c.Resources = res("2", "2Gi"); c.Image = "busybox:1.37" }, false},
		{"ephemeral-storage", nil, func(c *Container) {
			c.Resources = res("1", "1Gi")
			c.Resources.Limits[ResourceEphemeralStorage] = MustParseQuantity("1Gi")
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Pod{Metadata: ObjectMeta{Name: "web", Namespace: "default"}}
			old := Container{Name: "a", Image: "busybox:1.36", Resources: res("1", "1Gi"), ResizePolicy: tt.policy}
			p.Spec.Containers = []Container{old}
			was := ContainerHash(p, &old)
			next := old
			tt.next(&next)
			if ContainerHash(p, &next) == was {
				t.Fatal("the change left the hash as it was")
			}
			cc := WithResources(&next, old.Resources)
			if got := ContainerHash(p, &cc) == was; got != tt.resizeOnly {
				t.Errorf("resize only = %v, want %v", got, tt.resizeOnly)
			}
			noPolicy := old
			noPolicy.ResizePolicy = nil
			if ContainerHash(p, &noPolicy) != was {
				t.Error("the resize policy changes the hash")
			}
		})
	}
}
