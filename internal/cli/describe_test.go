package cli

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tug/internal/events"
	"tug/internal/pod"
	"tug/internal/podview"
)

// update rewrites describe's golden files under testdata/ from what it
// prints.
var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with the file at path, or rewrites it with -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (go test -update rewrites it):\n%s", path, got)
	}
}

// describeFixture is a pod that uses every part of the description: an
// init container, two app containers (one restarted), every kind of env
// source, probes, resources, mounts and volumes, plus events and a rollout
// record.
func describeFixture(now time.Time) described {
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	start := ago(2 * time.Hour)
	optional := true
	prio := int32(1000)
	grpcService := "health"
	q := pod.MustParseQuantity
	probe := func(h pod.Probe) *pod.Probe {
		h.TimeoutSeconds, h.PeriodSeconds, h.SuccessThreshold, h.FailureThreshold = 1, 10, 1, 3
		return &h
	}
	web := pod.Container{
		Name: "web", Image: "busybox:1.35",
		Command: []string{"sh", "-c", "echo start\nexec httpd -f -p 8080"},
		Ports:   []pod.ContainerPort{{Name: "http", ContainerPort: 8080, HostPort: 8080, Protocol: pod.ProtocolTCP}},
		Env: []pod.EnvVar{
			{Name: "MODE", Value: "production"},
			{Name: "DB_PASSWORD", ValueFrom: &pod.EnvVarSource{SecretKeyRef: &pod.KeySelector{Name: "db", Key: "password"}}},
			{Name: "LEVEL", ValueFrom: &pod.EnvVarSource{ConfigMapKeyRef: &pod.KeySelector{Name: "settings", Key: "level", Optional: &optional}}},
			{Name: "POD_NAME", ValueFrom: &pod.EnvVarSource{FieldRef: &pod.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "CPU_LIMIT", ValueFrom: &pod.EnvVarSource{ResourceFieldRef: &pod.ResourceFieldSelector{Resource: "limits.cpu"}}},
		},
		EnvFrom: []pod.EnvFromSource{
			{ConfigMapRef: &pod.ObjectSource{Name: "settings"}},
			{Prefix: "DB_", SecretRef: &pod.ObjectSource{Name: "db"}},
		},
		Resources: pod.Resources{
			Limits:   pod.ResourceList{pod.ResourceCPU: q("500m"), pod.ResourceMemory: q("64Mi")},
			Requests: pod.ResourceList{pod.ResourceCPU: q("100m"), pod.ResourceMemory: q("64Mi")},
		},
		LivenessProbe:  probe(pod.Probe{HTTPGet: &pod.HTTPGetAction{Path: "/healthz", Port: pod.FromString("http"), Scheme: pod.URISchemeHTTP}}),
		ReadinessProbe: probe(pod.Probe{TCPSocket: &pod.TCPSocketAction{Port: pod.FromInt(8080)}, InitialDelaySeconds: 5}),
		StartupProbe:   probe(pod.Probe{Exec: &pod.ExecAction{Command: []string{"cat", "/tmp/ready"}}}),
		VolumeMounts: []pod.VolumeMount{
			{Name: "data", MountPath: "/data"},
			{Name: "config", MountPath: "/etc/app/app.conf", SubPath: "app.conf", ReadOnly: true},
		},
	}
	side := pod.Container{Name: "side", Image: "busybox:1.35", Args: []string{"sleep", "3600"},
		ReadinessProbe: probe(pod.Probe{GRPC: &pod.GRPCAction{Port: 9090, Service: &grpcService}})}
	initC := pod.Container{Name: "setup", Image: "busybox:1.35", Command: []string{"true"}}
	v := podview.View{APIVersion: "v1", Kind: "Pod",
		Metadata: pod.ObjectMeta{Name: "web-edge1", Namespace: "default", UID: "uid-web",
			Labels: map[string]string{"app": "web", "tier": "front"},
			Annotations: map[string]string{"tug.io/rollout-timeout": "90s", "example.com/api-token": "s3cr3t",
				"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
		Spec: pod.PodSpec{InitContainers: []pod.Container{initC}, Containers: []pod.Container{web, side},
			Priority: &prio, PriorityClassName: "system-node-critical", RuntimeClassName: new("nvidia"),
			NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
			Tolerations:  []pod.Toleration{{Operator: "Exists", Effect: "NoSchedule"}, {Key: "edge", Value: "yes", Effect: "NoExecute"}},
			Volumes: []pod.Volume{
				{Name: "data", EmptyDir: &pod.EmptyDirVolumeSource{}},
				{Name: "config", ConfigMap: &pod.ConfigMapVolumeSource{Name: "settings"}},
				{Name: "certs", Secret: &pod.SecretVolumeSource{SecretName: "tls", Optional: &optional}},
				{Name: "host", HostPath: &pod.HostPathVolumeSource{Path: "/var/lib/app", Type: pod.HostPathDirectoryOrCreate}},
				{Name: "all", Projected: &pod.ProjectedVolumeSource{Sources: []pod.VolumeProjection{
					{ConfigMap: &pod.ConfigMapProjection{Name: "settings"}}, {Secret: &pod.SecretProjection{Name: "db"}},
					{DownwardAPI: &pod.DownwardAPIProjection{}}}}},
				{Name: "info", DownwardAPI: &pod.DownwardAPIVolumeSource{Items: []pod.DownwardAPIVolumeFile{
					{Path: "labels", FieldRef: &pod.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}},
				{Name: "claim", PersistentVolumeClaim: &pod.PersistentVolumeClaimVolumeSource{ClaimName: "store"}},
			}},
		Status: pod.Status{Phase: pod.PhaseRunning, HostIP: "192.168.1.10", PodIP: "10.88.0.2",
			PodIPs: []pod.PodIP{{IP: "10.88.0.2"}}, StartTime: &start, QOSClass: "Burstable",
			Conditions: []pod.Condition{{Type: "Initialized", Status: "True"}, {Type: "Ready", Status: "False"},
				{Type: "ContainersReady", Status: "False"}, {Type: "PodScheduled", Status: "True"}},
			InitContainerStatuses: []pod.ContainerStatus{{Name: "setup", Image: "busybox:1.35", ImageID: "sha256:abc",
				ContainerID: "containerd://i1",
				State:       pod.ContainerState{Terminated: &pod.StateTerminated{Reason: "Completed", StartedAt: start, FinishedAt: start.Add(time.Second)}}}},
			ContainerStatuses: []pod.ContainerStatus{
				{Name: "web", Image: "busybox:1.35", ImageID: "sha256:abc", ContainerID: "containerd://c2", RestartCount: 2,
					State: pod.ContainerState{Running: &pod.StateRunning{StartedAt: ago(time.Minute)}},
					LastTerminationState: pod.ContainerState{Terminated: &pod.StateTerminated{Reason: "Error", ExitCode: 1,
						Message: "bad config\x1b[31m", StartedAt: ago(3 * time.Minute), FinishedAt: ago(2 * time.Minute)}}},
				{Name: "side", Image: "busybox:1.35", ImageID: "sha256:abc",
					State: pod.ContainerState{Waiting: &pod.StateWaiting{Reason: "ContainerCreating"}}},
			}}}
	evs := []events.Event{
		{Type: events.Normal, Reason: "Pulled", Message: `Container image "busybox:1.35" already present on machine`, Count: 1,
			FirstTimestamp: ago(2 * time.Hour), LastTimestamp: ago(2 * time.Hour), Source: events.Source{Component: "tug", Host: "edge1"}},
		{Type: events.Warning, Reason: "Unhealthy", Message: "Liveness probe failed: HTTP probe failed with statuscode: 500", Count: 3,
			FirstTimestamp: ago(3 * time.Minute), LastTimestamp: ago(2 * time.Minute), Source: events.Source{Component: "tug", Host: "edge1"}},
	}
	h := &pod.RolloutHistory{UID: "uid-web", Pod: "default/web-edge1", GoodHash: "0123456789abcdef0123", Failed: "fedcba9876543210fedc",
		Reason: "not Ready within 1m30s", Entries: []pod.RolloutEntry{
			{Hash: "0123456789abcdef0123", Applied: ago(2 * time.Hour), Outcome: "Succeeded"},
			{Hash: "fedcba9876543210fedc", Applied: ago(5 * time.Minute), Outcome: "RolledBack", Reason: "not Ready within 1m30s"},
		}}
	return described{Pod: v, Node: "edge1", Source: "https://fleet.example.com/pods.yaml?token=abc", Events: evs, History: h}
}

func TestDescribeGolden(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		d    described
	}{
		{"describe", describeFixture(now)},
		{"describe-minimal", described{Pod: podview.View{APIVersion: "v1", Kind: "Pod",
			Metadata: pod.ObjectMeta{Name: "bare-edge1", Namespace: "default"},
			Spec:     pod.PodSpec{Containers: []pod.Container{{Name: "main", Image: "busybox:1.35"}}},
			Status:   pod.Status{Phase: pod.PhasePending}}}},
		{"describe-update-waiting", described{Pod: podview.View{APIVersion: "v1", Kind: "Pod",
			Metadata: pod.ObjectMeta{Name: "web-edge1", Namespace: "default"},
			Spec:     pod.PodSpec{Containers: []pod.Container{{Name: "main", Image: "busybox:1.35"}}},
			Status:   pod.Status{Phase: pod.PhaseRunning}},
			Source:        "https://fleet.example/pods.yaml",
			UpdateWaiting: &podview.UpdateWaiting{Opens: now.Add(90 * time.Minute), Window: "daily 13:30-14:00 tz=UTC", Hash: "ab", Version: 4}}},
		{"describe-terminating", described{Pod: podview.View{APIVersion: "v1", Kind: "Pod",
			Metadata: pod.ObjectMeta{Name: "going-edge1", Namespace: "default",
				DeletionTimestamp: new(now.Add(-5 * time.Second)), DeletionGracePeriodSeconds: new(int64(30))},
			Spec:   pod.PodSpec{Containers: []pod.Container{{Name: "main", Image: "busybox:1.35"}}},
			Status: pod.Status{Phase: pod.PhaseRunning}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := writeDescription(&out, tt.d, now); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", tt.name+".golden"), out.Bytes())
			if s := out.String(); strings.Contains(s, "s3cr3t") || strings.Contains(s, "token=abc") || strings.Contains(s, "\x1b") {
				t.Errorf("the description shows a secret or a raw escape:\n%s", s)
			}
		})
	}
}

func TestProbeLine(t *testing.T) {
	attrs := pod.Probe{InitialDelaySeconds: 0, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
	with := func(f func(p *pod.Probe)) *pod.Probe { p := attrs; f(&p); return &p }
	tests := []struct {
		name  string
		probe *pod.Probe
		want  string
	}{
		{"http", with(func(p *pod.Probe) {
			p.HTTPGet = &pod.HTTPGetAction{Path: "/healthz", Port: pod.FromInt(8080), Scheme: pod.URISchemeHTTP}
		}), "http-get http://:8080/healthz delay=0s timeout=1s period=10s #success=1 #failure=3"},
		{"https with host", with(func(p *pod.Probe) {
			p.HTTPGet = &pod.HTTPGetAction{Path: "/", Host: "127.0.0.1", Port: pod.FromString("web"), Scheme: pod.URISchemeHTTPS}
		}), "http-get https://127.0.0.1:web/ delay=0s timeout=1s period=10s #success=1 #failure=3"},
		{"tcp", with(func(p *pod.Probe) { p.TCPSocket = &pod.TCPSocketAction{Port: pod.FromInt(53)} }),
			"tcp-socket :53 delay=0s timeout=1s period=10s #success=1 #failure=3"},
		{"exec", with(func(p *pod.Probe) {
			p.Exec = &pod.ExecAction{Command: []string{"cat", "/tmp/ok"}}
			p.InitialDelaySeconds = 5
		}),
			"exec [cat /tmp/ok] delay=5s timeout=1s period=10s #success=1 #failure=3"},
		{"grpc", with(func(p *pod.Probe) { p.GRPC = &pod.GRPCAction{Port: 9090} }),
			"grpc <pod>:9090  delay=0s timeout=1s period=10s #success=1 #failure=3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := probeLine(tt.probe); got != tt.want {
				t.Errorf("probeLine = %q, want %q", got, tt.want)
			}
		})
	}
}
