package pod_test

import (
	"encoding/hex"
	"testing"

	"tug/internal/pod"
)

const hashPod = `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  volumes:
  - name: data
    hostPath: {path: /srv/data}
  - name: tmp
    emptyDir: {}
  containers:
  - name: app
    image: busybox:1.36
    volumeMounts:
    - {name: data, mountPath: /data}
  - name: other
    image: busybox:1.36
    volumeMounts:
    - {name: tmp, mountPath: /tmp}
`

func TestContainerHash(t *testing.T) {
	opts := testOptions("web.yaml")
	base := parseOne(t, hashPod, opts)
	baseHash := pod.ContainerHash(base, &base.Spec.Containers[0])
	if len(baseHash) != 16 {
		t.Fatalf("ContainerHash = %q, want 16 hex characters", baseHash)
	}
	if _, err := hex.DecodeString(baseHash); err != nil {
		t.Fatalf("ContainerHash = %q: %v", baseHash, err)
	}

	tests := []struct {
		name        string
		modify      func(p *pod.Pod)
		wantChanged bool
	}{
		{"nothing", func(p *pod.Pod) {}, false},
		{"image", func(p *pod.Pod) { p.Spec.Containers[0].Image = "busybox:1.37" }, true},
		{"command", func(p *pod.Pod) { p.Spec.Containers[0].Command = []string{"sh"} }, true},
		{"env", func(p *pod.Pod) { p.Spec.Containers[0].Env = []pod.EnvVar{{Name: "A", Value: "1"}} }, true},
		{"run as user", func(p *pod.Pod) {
			p.Spec.Containers[0].SecurityContext = &pod.SecurityContext{RunAsUser: ptr(int64(1))}
		}, true},
		{"hostNetwork", func(p *pod.Pod) { p.Spec.HostNetwork = true }, true},
		{"hostUsers false", func(p *pod.Pod) { p.Spec.HostUsers = new(false) }, true},
		{"hostUsers true", func(p *pod.Pod) { p.Spec.HostUsers = new(true) }, false},
		{"pod securityContext", func(p *pod.Pod) {
			p.Spec.SecurityContext = &pod.PodSecurityContext{SeccompProfile: &pod.SeccompProfile{Type: pod.SeccompUnconfined}}
		}, true},
		{"seccompProfile", func(p *pod.Pod) {
			p.Spec.Containers[0].SecurityContext = &pod.SecurityContext{SeccompProfile: &pod.SeccompProfile{Type: pod.SeccompRuntimeDefault}}
		}, true},
		{"mounted volume source", func(p *pod.Pod) { p.Spec.Volumes[0].HostPath.Path = "/srv/other" }, true},
		{"pod name (hostname)", func(p *pod.Pod) { p.Metadata.Name = "web-node2" }, true},
		{"namespace", func(p *pod.Pod) { p.Metadata.Namespace = "edge" }, true},
		{"volume not mounted", func(p *pod.Pod) { p.Spec.Volumes[1].EmptyDir.Medium = pod.StorageMediumMemory }, false},
		{"volume added", func(p *pod.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, pod.Volume{Name: "x", EmptyDir: &pod.EmptyDirVolumeSource{}})
		}, false},
		{"volumes reordered", func(p *pod.Pod) { p.Spec.Volumes[0], p.Spec.Volumes[1] = p.Spec.Volumes[1], p.Spec.Volumes[0] }, false},
		{"other container", func(p *pod.Pod) { p.Spec.Containers[1].Image = "nginx" }, false},
		{"labels", func(p *pod.Pod) { p.Metadata.Labels["app"] = "web2" }, false},
		{"restartPolicy", func(p *pod.Pod) { p.Spec.RestartPolicy = pod.RestartNever }, false},
		{"grace period", func(p *pod.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr(int64(5)) }, false},
		{"runtimeClassName", func(p *pod.Pod) { p.Spec.RuntimeClassName = ptr("nvidia") }, true},
		{"mountPropagation", func(p *pod.Pod) {
			p.Spec.Containers[0].VolumeMounts[0].MountPropagation = ptr(pod.MountPropagationHostToContainer)
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := parseOne(t, hashPod, opts)
			tt.modify(p)
			got := pod.ContainerHash(p, &p.Spec.Containers[0])
			if changed := got != baseHash; changed != tt.wantChanged {
				t.Errorf("ContainerHash changed = %v (%s -> %s), want %v", changed, baseHash, got, tt.wantChanged)
			}
		})
	}
}

// TestContainerHashDefaults: writing a default out explicitly is no change.
func TestContainerHashDefaults(t *testing.T) {
	opts := testOptions("web.yaml")
	implicit := parseOne(t, minimalPod, opts)
	explicit := parseOne(t, `apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  restartPolicy: Always
  terminationGracePeriodSeconds: 30
  containers: [{name: app, image: busybox, imagePullPolicy: Always}]
`, opts)
	if a, b := pod.ContainerHash(implicit, &implicit.Spec.Containers[0]), pod.ContainerHash(explicit, &explicit.Spec.Containers[0]); a != b {
		t.Errorf("ContainerHash differs with defaults written out: %s vs %s", a, b)
	}
	if implicit.Hash() != explicit.Hash() {
		t.Errorf("Hash differs with defaults written out")
	}
}

// TestContainerHashStable pins the hash of a known container, so that a
// change to the hash input (which would recreate every container after an
// upgrade) is deliberate.
func TestContainerHashStable(t *testing.T) {
	p := parseOne(t, minimalPod, testOptions("web.yaml"))
	const want = "023aab91bd205b44"
	if got := pod.ContainerHash(p, &p.Spec.Containers[0]); got != want {
		t.Errorf("ContainerHash = %s, want %s", got, want)
	}
}

func TestGracePeriod(t *testing.T) {
	tests := []struct {
		name  string
		grace *int64
		want  string
	}{
		{"unset", nil, "30s"},
		{"zero", ptr(int64(0)), "0s"},
		{"set", ptr(int64(5)), "5s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &pod.Pod{Spec: pod.PodSpec{TerminationGracePeriodSeconds: tt.grace}}
			if got := p.GracePeriod().String(); got != tt.want {
				t.Errorf("GracePeriod() = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestContainerHashIgnoresProbes checks that a probe change does not
// recreate the container (the prober re-arms it) while a hook change does.
func TestContainerHashIgnoresProbes(t *testing.T) {
	p := &pod.Pod{Metadata: pod.ObjectMeta{Name: "p", Namespace: "default"}, Spec: pod.PodSpec{Containers: []pod.Container{{Name: "c", Image: "busybox"}}}}
	before := pod.ContainerHash(p, &p.Spec.Containers[0])
	p.Spec.Containers[0].ReadinessProbe = &pod.Probe{TCPSocket: &pod.TCPSocketAction{Port: pod.FromInt(80)}}
	p.Spec.Containers[0].LivenessProbe = &pod.Probe{Exec: &pod.ExecAction{Command: []string{"true"}}}
	if got := pod.ContainerHash(p, &p.Spec.Containers[0]); got != before {
		t.Errorf("probes changed the container hash: %s, want %s", got, before)
	}
	if p.Spec.Containers[0].ReadinessProbe == nil {
		t.Fatal("ContainerHash modified the container")
	}
	p.Spec.Containers[0].Lifecycle = &pod.Lifecycle{PreStop: &pod.LifecycleHandler{Sleep: &pod.SleepAction{Seconds: 1}}}
	if got := pod.ContainerHash(p, &p.Spec.Containers[0]); got == before {
		t.Error("a preStop hook did not change the container hash")
	}
}
