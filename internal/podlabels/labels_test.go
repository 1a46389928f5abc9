package podlabels

import (
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/pkg/identifiers"

	"tug/internal/pod"
	"tug/internal/testutil"
)

func testPod(name string) *pod.Pod {
	return testutil.Pod(name, testutil.WithUID(pod.UID("file:/etc/tug/manifests", "default", name)))
}

func TestContainerID(t *testing.T) {
	long := strings.Repeat("a", 200)
	tests := []struct {
		name      string
		pod       string
		container string
		attempt   int
		want      string // "" = only check validity
	}{
		{name: "readable", pod: "web-node1", container: "nginx", attempt: 0, want: "web-node1_nginx_%s_0"},
		{name: "attempt", pod: "web-node1", container: "nginx", attempt: 12, want: "web-node1_nginx_%s_12"},
		{name: "dots kept", pod: "web.example-node1", container: "c", want: "web.example-node1_c_%s_0"},
		{name: "long pod name is cut", pod: long + "-node1", container: "nginx"},
		{name: "long container name", pod: "p", container: strings.Repeat("c", 63)},
		{name: "both long", pod: long, container: strings.Repeat("c", 63), attempt: 1 << 30},
		{name: "double dash", pod: "a--b", container: "x--y"},
		{name: "trailing separator after cut", pod: strings.Repeat("ab-", 40), container: "c"},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPod(tt.pod)
			id := ContainerID(p, tt.container, tt.attempt)
			if err := identifiers.Validate(id); err != nil {
				t.Fatalf("ContainerID = %q: %v", id, err)
			}
			if tt.want != "" {
				want := strings.Replace(tt.want, "%s", podHash(p), 1)
				if id != want {
					t.Errorf("ContainerID = %q, want %q", id, want)
				}
			}
			if id != ContainerID(p, tt.container, tt.attempt) {
				t.Error("ContainerID is not deterministic")
			}
			if prev, dup := seen[id]; dup {
				t.Errorf("ContainerID %q also made for %s", id, prev)
			}
			seen[id] = tt.name
		})
	}

	// Pods that differ only in namespace (or UID, or in their names past
	// the cut) never share an ID; the old scheme gave these the same one.
	a, b := testPod("web"), testPod("web")
	b.Metadata.Namespace = "other"
	c := testPod("web")
	c.Metadata.UID = a.Metadata.UID[:8] + "-ffff-ffff-ffff-ffffffffffff"
	d, e := testPod(long+"-one"), testPod(long+"-two")
	e.Metadata.UID = d.Metadata.UID
	for _, pr := range [][2]*pod.Pod{{a, b}, {a, c}, {d, e}} {
		if x, y := ContainerID(pr[0], "app", 0), ContainerID(pr[1], "app", 0); x == y {
			t.Errorf("pods %s/%s and %s/%s share ID %q", pr[0].Metadata.Namespace, pr[0].Metadata.Name, pr[1].Metadata.Namespace, pr[1].Metadata.Name, x)
		}
	}

	// Two containers of one pod whose names differ only past the cut, or
	// only in what sanitising changes, get different IDs.
	p := testPod("p")
	pairs := [][2]string{
		{strings.Repeat("c", 50) + "-one", strings.Repeat("c", 50) + "-two"},
		{"a--b", "a-b"},
	}
	for _, pr := range pairs {
		if a, b := ContainerID(p, pr[0], 0), ContainerID(p, pr[1], 0); a == b {
			t.Errorf("containers %q and %q share ID %q", pr[0], pr[1], a)
		}
	}
}

func podHash(p *pod.Pod) string {
	h := sha256.Sum256([]byte(p.Metadata.Namespace + "\x00" + p.Metadata.Name + "\x00" + p.Metadata.UID))
	return hex.EncodeToString(h[:])[:podIDHashLen]
}

func TestOwnedBy(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{name: "ours", labels: map[string]string{LabelPodUID: "u1", LabelContainer: "app"}, want: true},
		{name: "another pod", labels: map[string]string{LabelPodUID: "u2", LabelContainer: "app"}},
		{name: "another container", labels: map[string]string{LabelPodUID: "u1", LabelContainer: "side"}},
		{name: "not tug's", labels: map[string]string{"owner": "someone"}},
		{name: "no labels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := OwnedBy(tt.labels, "u1", "app"); got != tt.want {
				t.Errorf("OwnedBy = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLabelsRoundTrip(t *testing.T) {
	p := testPod("web-node1")
	p.Metadata.Source = "file:/etc/tug/manifests"
	grace := int64(7)
	p.Spec.TerminationGracePeriodSeconds = &grace
	c := &p.Spec.Containers[0]
	c.Resources = pod.Resources{
		Limits:   pod.ResourceList{pod.ResourceMemory: pod.MustParseQuantity("64Mi")},
		Requests: pod.ResourceList{pod.ResourceMemory: pod.MustParseQuantity("64Mi"), pod.ResourceCPU: pod.MustParseQuantity("250m")},
	}
	labels := ForContainer(p, c, true, 3, "sha256:abc", "/tugpods/podu")
	for k := range labels {
		if !strings.HasPrefix(k, "io.tug.") {
			t.Errorf("label %q lacks the io.tug. prefix", k)
		}
	}
	if labels[LabelRestartCount] != "3" {
		t.Errorf("restart count = %q, want 3", labels[LabelRestartCount])
	}
	started := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	labels[LabelStartedAt] = started.Format(time.RFC3339Nano)
	for k, v := range ImageVolumes(map[string]string{"assets": "tug.test/assets:v1@sha256:def"}) {
		labels[k] = v
	}
	var rc pod.RuntimeContainer
	if !Record(labels, &rc) {
		t.Fatal("Record rejected tug's labels")
	}
	want := pod.RuntimeContainer{
		PodUID: p.Metadata.UID, PodName: "web-node1", Namespace: "default", Name: "app",
		PodSource: "file:/etc/tug/manifests", PodGrace: 7 * time.Second,
		Init: true, SpecHash: pod.ContainerHash(p, c), Attempt: 3, ImageID: "sha256:abc", StartedAt: started,
		CgroupParent: "/tugpods/podu", ImageVolumes: "assets=tug.test/assets:v1@sha256:def",
	}
	if !reflect.DeepEqual(rc.Allocated, &c.Resources) {
		t.Errorf("allocated resources = %+v, want %+v", rc.Allocated, c.Resources)
	}
	rc.Allocated = nil
	if rc != want {
		t.Errorf("Record =\n%+v, want\n%+v", rc, want)
	}
	if Record(map[string]string{"other": "x"}, &rc) {
		t.Error("Record accepted a container that is not tug's")
	}

	at := time.Date(2026, 1, 2, 3, 5, 0, 0, time.UTC)
	code, gotAt, ok := ReadExit(Exit(3, at))
	if !ok || code != 3 || !gotAt.Equal(at) {
		t.Errorf("exit labels round trip = %d %v %v", code, gotAt, ok)
	}
}

// TestCronJobRun: a run's containers carry its CronJob's template UID and
// its slot, read back by CronJobRun; any other pod's carry neither.
func TestCronJobRun(t *testing.T) {
	slot := time.Date(2026, 3, 1, 10, 2, 0, 0, time.UTC)
	run := testPod("tick-29540282-pod-h")
	run.CronJobUID, run.ScheduledTime = "tpl-uid", slot.In(time.FixedZone("X", 3600))
	tests := []struct {
		name     string
		labels   map[string]string
		wantUID  string
		wantSlot time.Time
		wantOK   bool
	}{
		{"a run's container", ForContainer(run, &run.Spec.Containers[0], false, 0, "sha256:abc", ""), "tpl-uid", slot, true},
		{"another pod's container", ForContainer(testPod("web-h"), &testPod("web-h").Spec.Containers[0], false, 0, "sha256:abc", ""), "", time.Time{}, false},
		{"slot unreadable", map[string]string{LabelCronJobUID: "tpl-uid", LabelCronJobSlot: "yesterday"}, "", time.Time{}, false},
		{"no UID", map[string]string{LabelCronJobSlot: slot.Format(time.RFC3339)}, "", time.Time{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			uid, got, ok := CronJobRun(tt.labels)
			if uid != tt.wantUID || !got.Equal(tt.wantSlot) || ok != tt.wantOK {
				t.Fatalf("CronJobRun = %q %v %v, want %q %v %v", uid, got, ok, tt.wantUID, tt.wantSlot, tt.wantOK)
			}
		})
	}
}
