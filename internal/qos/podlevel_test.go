package qos

import (
	"testing"

	"tug/internal/pod"
)

// TestPodLevelResources checks the class and the pod cgroup's totals of
// pods with spec.resources (KEP-2837): the pod-level values take
// precedence, per resource, over the containers'.
func TestPodLevelResources(t *testing.T) {
	const mi = 1 << 20
	limitedCtr := ctr("a", res(rl{"cpu": "100m", "memory": "10Mi"}, rl{"cpu": "200m", "memory": "20Mi"}))
	tests := []struct {
		name      string
		podLevel  pod.Resources
		app       []pod.Container
		wantClass PodClass
		want      podResources
	}{
		{
			"requests equal limits: Guaranteed whatever the containers",
			res(rl{"cpu": "500m", "memory": "64Mi"}, rl{"cpu": "500m", "memory": "64Mi"}),
			[]pod.Container{ctr("a", res(nil, nil)), limitedCtr},
			Guaranteed,
			podResources{cpuRequest: 500, cpuLimit: 500, memRequest: 64 * mi, memLimit: 64 * mi, cpuLimited: true, memLimited: true},
		},
		{
			"requests below limits: Burstable, limits from the pod",
			res(rl{"cpu": "250m", "memory": "64Mi"}, rl{"cpu": "1", "memory": "128Mi"}),
			[]pod.Container{ctr("a", res(nil, nil))},
			Burstable,
			podResources{cpuRequest: 250, cpuLimit: 1000, memRequest: 64 * mi, memLimit: 128 * mi, cpuLimited: true, memLimited: true},
		},
		{
			"cpu only at pod level: memory from the containers",
			res(rl{"cpu": "300m"}, rl{"cpu": "300m"}),
			[]pod.Container{limitedCtr},
			Burstable,
			podResources{cpuRequest: 300, cpuLimit: 300, memRequest: 10 * mi, memLimit: 20 * mi, cpuLimited: true, memLimited: true},
		},
		{
			"containers with limits do not make it Guaranteed",
			res(rl{"memory": "20Mi"}, nil),
			[]pod.Container{ctr("a", res(rl{"cpu": "100m", "memory": "20Mi"}, rl{"cpu": "100m", "memory": "20Mi"}))},
			Burstable,
			podResources{cpuRequest: 100, cpuLimit: 100, memRequest: 20 * mi, memLimit: 20 * mi, cpuLimited: true, memLimited: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mkpod("u", tt.app)
			p.Spec.Resources = &tt.podLevel
			if got := Class(p); got != tt.wantClass {
				t.Errorf("Class = %s, want %s", got, tt.wantClass)
			}
			if got := resourcesOf(p); got != tt.want {
				t.Errorf("resourcesOf =\n %+v, want\n %+v", got, tt.want)
			}
		})
	}
}
