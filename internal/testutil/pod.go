package testutil

import "tug/internal/pod"

// PodOption changes a pod Pod builds.
type PodOption func(*pod.Pod)

// Pod builds the pod of a unit test: apiVersion v1, kind Pod, namespace
// "default", the given name, UID "uid-"+name and one app container "app"
// of busybox:1.35 running "sleep 1000", restartPolicy Always; opts change
// it in order.
func Pod(name string, opts ...PodOption) *pod.Pod {
	p := &pod.Pod{APIVersion: "v1", Kind: "Pod"}
	p.Metadata = pod.ObjectMeta{Name: name, Namespace: "default", UID: "uid-" + name}
	p.Spec.RestartPolicy = pod.RestartAlways
	p.Spec.Containers = Containers("app")
	for _, o := range opts {
		o(p)
	}
	return p
}

// Containers returns containers of busybox:1.35 running "sleep 1000",
// named names.
func Containers(names ...string) []pod.Container {
	cs := make([]pod.Container, 0, len(names))
	for _, n := range names {
		cs = append(cs, pod.Container{Name: n, Image: "busybox:1.35", Args: []string{"sleep", "1000"}})
	}
	return cs
}

// WithUID sets the pod's UID.
func WithUID(uid string) PodOption { return func(p *pod.Pod) { p.Metadata.UID = uid } }

// WithApps replaces the app containers with containers named names.
func WithApps(names ...string) PodOption {
	return func(p *pod.Pod) { p.Spec.Containers = Containers(names...) }
}

// WithInit sets init containers named names.
func WithInit(names ...string) PodOption {
	return func(p *pod.Pod) { p.Spec.InitContainers = Containers(names...) }
}

// WithRestartPolicy sets the pod's restart policy.
func WithRestartPolicy(rp pod.RestartPolicy) PodOption {
	return func(p *pod.Pod) { p.Spec.RestartPolicy = rp }
}

// WithImage sets the image of every container.
func WithImage(image string) PodOption {
	return func(p *pod.Pod) {
		for _, list := range [][]pod.Container{p.Spec.InitContainers, p.Spec.Containers} {
			for i := range list {
				list[i].Image = image
			}
		}
	}
}

// WithAnnotations sets the pod's annotations.
func WithAnnotations(a map[string]string) PodOption {
	return func(p *pod.Pod) { p.Metadata.Annotations = a }
}
