package qos

import (
	"testing"

	"tug/internal/manifest"
	"tug/internal/pod"
)

// res builds Resources from "name=quantity" pairs: requests, then limits.
func res(requests, limits map[string]string) pod.Resources {
	conv := func(m map[string]string) pod.ResourceList {
		if m == nil {
			return nil
		}
		l := pod.ResourceList{}
		for k, v := range m {
			l[pod.ResourceName(k)] = pod.MustParseQuantity(v)
		}
		return l
	}
	return pod.Resources{Requests: conv(requests), Limits: conv(limits)}
}

// ctr is a container with resources.
func ctr(name string, r pod.Resources) pod.Container {
	return pod.Container{Name: name, Image: "busybox", Resources: r}
}

// mkpod is a pod with app and init containers.
func mkpod(uid string, app []pod.Container, init ...pod.Container) *pod.Pod {
	p := &pod.Pod{APIVersion: "v1", Kind: "Pod"}
	p.Metadata.Name = "p-" + uid
	p.Metadata.Namespace = "default"
	p.Metadata.UID = uid
	p.Spec.Containers = app
	p.Spec.InitContainers = init
	return p
}

type rl = map[string]string

// TestClass mirrors the cases of Kubernetes' TestComputePodQOS
// (pkg/apis/core/v1/helper/qos/qos_test.go).
func TestClass(t *testing.T) {
	guaranteed := res(rl{"cpu": "100m", "memory": "100Mi"}, rl{"cpu": "100m", "memory": "100Mi"})
	tests := []struct {
		name string
		app  []pod.Container
		init []pod.Container
		want PodClass
	}{
		{"no resources", []pod.Container{ctr("a", res(nil, nil))}, nil, BestEffort},
		{"two containers without resources", []pod.Container{ctr("a", res(nil, nil)), ctr("b", res(nil, nil))}, nil, BestEffort},
		{"only other resources", []pod.Container{ctr("a", res(rl{"ephemeral-storage": "1Gi"}, rl{"ephemeral-storage": "2Gi"}))}, nil, BestEffort},
		{"zero requests do not count", []pod.Container{ctr("a", res(rl{"cpu": "0", "memory": "0"}, nil))}, nil, BestEffort},
		{"requests equal limits", []pod.Container{ctr("a", guaranteed)}, nil, Guaranteed},
		{"two guaranteed containers", []pod.Container{ctr("a", guaranteed), ctr("b", res(rl{"cpu": "1", "memory": "1Gi"}, rl{"cpu": "1", "memory": "1Gi"}))}, nil, Guaranteed},
		{"equal in another notation", []pod.Container{ctr("a", res(rl{"cpu": "1", "memory": "1Gi"}, rl{"cpu": "1000m", "memory": "1024Mi"}))}, nil, Guaranteed},
		{"limit without request (defaulting)", []pod.Container{ctr("a", res(nil, rl{"cpu": "500m", "memory": "64Mi"}))}, nil, Guaranteed},
		{"limit without request for one resource", []pod.Container{ctr("a", res(rl{"cpu": "500m"}, rl{"cpu": "500m", "memory": "64Mi"}))}, nil, Guaranteed},
		{"only a cpu limit", []pod.Container{ctr("a", res(nil, rl{"cpu": "500m"}))}, nil, Burstable},
		{"only requests", []pod.Container{ctr("a", res(rl{"cpu": "100m", "memory": "100Mi"}, nil))}, nil, Burstable},
		{"request below limit", []pod.Container{ctr("a", res(rl{"cpu": "100m", "memory": "100Mi"}, rl{"cpu": "200m", "memory": "100Mi"}))}, nil, Burstable},
		{"guaranteed and best effort containers", []pod.Container{ctr("a", guaranteed), ctr("b", res(nil, nil))}, nil, Burstable},
		{"guaranteed plus an unrelated limit", []pod.Container{ctr("a", res(rl{"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi"}, rl{"cpu": "1", "memory": "1Gi"}))}, nil, Guaranteed},
		{"best effort app, init with requests", []pod.Container{ctr("a", res(nil, nil))}, []pod.Container{ctr("i", res(rl{"cpu": "100m"}, nil))}, Burstable},
		{"guaranteed app, best effort init", []pod.Container{ctr("a", guaranteed)}, []pod.Container{ctr("i", res(nil, nil))}, Burstable},
		{"guaranteed app and init", []pod.Container{ctr("a", guaranteed)}, []pod.Container{ctr("i", guaranteed)}, Guaranteed},
		{"guaranteed app, burstable init", []pod.Container{ctr("a", guaranteed)}, []pod.Container{ctr("i", res(rl{"cpu": "10m", "memory": "100Mi"}, rl{"cpu": "100m", "memory": "100Mi"}))}, Burstable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Class(mkpod("u", tt.app, tt.init...)); got != tt.want {
				t.Errorf("Class = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestClassAfterParse checks Class on a pod from manifest.Parse, which applies
// the defaulting itself: a limit without a request is Guaranteed.
func TestClassAfterParse(t *testing.T) {
	src := `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: web
    image: busybox
    resources:
      limits:
        cpu: 500m
        memory: 64Mi
`
	pods, err := manifest.Parse([]byte(src), manifest.ParseOptions{Origin: pod.Origin{Source: "file", File: "web.yaml"}, Hostname: "node"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 1 {
		t.Fatalf("got %d pods", len(pods))
	}
	if got := Class(pods[0]); got != Guaranteed {
		t.Errorf("Class = %s, want Guaranteed", got)
	}
}

// TestResourcesOf mirrors ResourceConfigForPod's totals
// (pkg/kubelet/cm/helper_linux.go with PodRequests/PodLimits of
// pkg/api/v1/resource): the larger of the app containers' sum and the
// largest init container; limits "declared" only when every container,
// init containers included, has one.
func TestResourcesOf(t *testing.T) {
	const mi = 1 << 20
	tests := []struct {
		name string
		app  []pod.Container
		init []pod.Container
		want podResources
	}{
		{"none", []pod.Container{ctr("a", res(nil, nil))}, nil, podResources{}},
		{
			"sum of app containers",
			[]pod.Container{
				ctr("a", res(rl{"cpu": "100m", "memory": "10Mi"}, rl{"cpu": "200m", "memory": "20Mi"})),
				ctr("b", res(rl{"cpu": "300m", "memory": "30Mi"}, rl{"cpu": "400m", "memory": "40Mi"})),
			}, nil,
			podResources{cpuRequest: 400, cpuLimit: 600, memRequest: 40 * mi, memLimit: 60 * mi, cpuLimited: true, memLimited: true},
		},
		{
			"one container without limits",
			[]pod.Container{
				ctr("a", res(rl{"cpu": "100m", "memory": "10Mi"}, rl{"cpu": "200m", "memory": "20Mi"})),
				ctr("b", res(rl{"cpu": "300m"}, nil)),
			}, nil,
			podResources{cpuRequest: 400, cpuLimit: 200, memRequest: 10 * mi, memLimit: 20 * mi},
		},
		{
			"limit without request counts as request",
			[]pod.Container{ctr("a", res(nil, rl{"cpu": "500m", "memory": "64Mi"}))}, nil,
			podResources{cpuRequest: 500, cpuLimit: 500, memRequest: 64 * mi, memLimit: 64 * mi, cpuLimited: true, memLimited: true},
		},
		{
			"largest init container wins",
			[]pod.Container{ctr("a", res(rl{"cpu": "100m", "memory": "10Mi"}, rl{"cpu": "100m", "memory": "10Mi"}))},
			[]pod.Container{
				ctr("i1", res(rl{"cpu": "1", "memory": "5Mi"}, rl{"cpu": "2", "memory": "5Mi"})),
				ctr("i2", res(rl{"cpu": "500m", "memory": "1Mi"}, rl{"cpu": "500m", "memory": "1Mi"})),
			},
			podResources{cpuRequest: 1000, cpuLimit: 2000, memRequest: 10 * mi, memLimit: 10 * mi, cpuLimited: true, memLimited: true},
		},
		{
			"init container without a limit",
			[]pod.Container{ctr("a", res(nil, rl{"cpu": "1", "memory": "10Mi"}))},
			[]pod.Container{ctr("i", res(rl{"cpu": "100m"}, rl{"memory": "1Mi"}))},
			podResources{cpuRequest: 1000, cpuLimit: 1000, memRequest: 10 * mi, memLimit: 10 * mi, memLimited: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := resourcesOf(mkpod("u", tt.app, tt.init...)); got != tt.want {
				t.Errorf("resourcesOf =\n %+v, want\n %+v", got, tt.want)
			}
		})
	}
}
