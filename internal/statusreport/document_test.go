package statusreport

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"tug/internal/pod"
	"tug/internal/podview"
)

func TestBuild(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	running := func(ns, name, uid string, ready bool, cs ...pod.ContainerStatus) podview.View {
		st := "False"
		if ready {
			st = "True"
		}
		return podview.View{Metadata: pod.ObjectMeta{Namespace: ns, Name: name, UID: uid},
			Status: pod.Status{Phase: pod.PhaseRunning, Conditions: []pod.Condition{{Type: pod.ConditionReady, Status: st}}, ContainerStatuses: cs}}
	}
	tests := []struct {
		name string
		in   Snapshot
		want Document
	}{
		{
			name: "empty node",
			in:   Snapshot{Node: podview.NodeView{Metadata: podview.NodeMeta{Name: "kiosk-1"}}},
			want: Document{APIVersion: APIVersion, Kind: Kind, Node: Node{Name: "kiosk-1", Conditions: []NodeCondition{}}, Pods: []Pod{}, Sources: []Source{}},
		},
		{
			name: "node conditions sorted, capacity kept",
			in: Snapshot{Node: podview.NodeView{Metadata: podview.NodeMeta{Name: "n"}, Status: pod.NodeStatus{
				Capacity: map[string]string{"example.com/dongle": "2"}, Allocatable: map[string]string{"example.com/dongle": "2"},
				Conditions: []pod.NodeCondition{
					{Type: pod.NodePIDPressure, Status: "False", LastTransitionTime: t0},
					{Type: pod.NodeMemoryPressure, Status: "True", Reason: "EvictionThresholdMet", Message: "low", LastTransitionTime: t0},
				}}}},
			want: Document{APIVersion: APIVersion, Kind: Kind, Node: Node{Name: "n",
				Capacity: map[string]string{"example.com/dongle": "2"}, Allocatable: map[string]string{"example.com/dongle": "2"},
				Conditions: []NodeCondition{
					{Type: pod.NodeMemoryPressure, Status: "True", Reason: "EvictionThresholdMet", Message: "low", LastTransitionTime: t0},
					{Type: pod.NodePIDPressure, Status: "False", LastTransitionTime: t0},
				}}, Pods: []Pod{}, Sources: []Source{}},
		},
		{
			name: "pods sorted, ready, restarts, last termination, rollout",
			in: Snapshot{
				Pods: []podview.View{
					running("default", "web-n", "u2", false,
						pod.ContainerStatus{Name: "a", RestartCount: 2, LastTerminationState: pod.ContainerState{Terminated: &pod.StateTerminated{Reason: "Error", FinishedAt: t0}}},
						pod.ContainerStatus{Name: "b", RestartCount: 1, LastTerminationState: pod.ContainerState{Terminated: &pod.StateTerminated{Reason: "OOMKilled", FinishedAt: t0.Add(time.Second)}}}),
					running("default", "api-n", "u1", true),
					{Metadata: pod.ObjectMeta{Namespace: "default", Name: "old-n", UID: "u3"}, Status: pod.Status{Phase: pod.PhaseRunning, Reason: "RolledBack"}},
				},
				Rollouts: map[string]pod.RolloutHistory{
					"u3": {GoodHash: "g", Failed: "f", Reason: "not Ready within 5m", Entries: []pod.RolloutEntry{{Hash: "g", Outcome: "Succeeded"}, {Hash: "f", Outcome: "RolledBack"}}},
					"u1": {},
				},
			},
			want: Document{APIVersion: APIVersion, Kind: Kind, Node: Node{Conditions: []NodeCondition{}}, Sources: []Source{}, Pods: []Pod{
				{Namespace: "default", Name: "api-n", UID: "u1", Phase: "Running", Ready: true},
				{Namespace: "default", Name: "old-n", UID: "u3", Phase: "Running", Reason: "RolledBack",
					Rollout: &Rollout{Outcome: "RolledBack", GoodHash: "g", FailedHash: "f", Reason: "not Ready within 5m"}},
				{Namespace: "default", Name: "web-n", UID: "u2", Phase: "Running", Restarts: 3, LastTerminationReason: "OOMKilled"},
			}},
		},
		{
			name: "sources: files grouped and sorted, URL version and fetch error",
			in: Snapshot{Manifests: []podview.ManifestStatus{
				{Source: "/etc/tug/manifests", File: "/etc/tug/manifests/b.yaml", Error: "b.yaml:3:1: bad", Hash: "h2"},
				{Source: "https://fleet.example/pods?t=xxxxx", File: "https://fleet.example/pods?t=xxxxx", AppliedHash: "hu", Version: 42,
					Fetch: &podview.FetchStatus{Error: "GET https://fleet.example/pods?t=xxxxx: 503"}, Rollout: &podview.ManifestRollout{GoodHash: "hu", FailedHash: "hf", HeldBack: true}},
				{Source: "/etc/tug/manifests", File: "/etc/tug/manifests/a.yaml", AppliedHash: "h1"},
			}},
			want: Document{APIVersion: APIVersion, Kind: Kind, Node: Node{Conditions: []NodeCondition{}}, Pods: []Pod{}, Sources: []Source{
				{Name: "/etc/tug/manifests", Files: []File{
					{File: "/etc/tug/manifests/a.yaml", AppliedHash: "h1"},
					{File: "/etc/tug/manifests/b.yaml", Error: "b.yaml:3:1: bad"},
				}},
				{Name: "https://fleet.example/pods?t=xxxxx", Error: "GET https://fleet.example/pods?t=xxxxx: 503", Files: []File{
					{File: "https://fleet.example/pods?t=xxxxx", AppliedHash: "hu", Version: 42, GoodHash: "hu", FailedHash: "hf", HeldBack: true},
				}},
			}},
		},
		{
			name: "a URL that applied nothing yet has its error and no file",
			in: Snapshot{Manifests: []podview.ManifestStatus{
				{Source: "https://fleet.example/pods", File: "https://fleet.example/pods", Error: "GET https://fleet.example/pods: dial tcp: refused",
					Fetch: &podview.FetchStatus{Error: "GET https://fleet.example/pods: dial tcp: refused"}},
			}},
			want: Document{APIVersion: APIVersion, Kind: Kind, Node: Node{Conditions: []NodeCondition{}}, Pods: []Pod{}, Sources: []Source{
				{Name: "https://fleet.example/pods", Error: "GET https://fleet.example/pods: dial tcp: refused", Files: []File{}},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Build(tt.in)
			if !reflect.DeepEqual(got, tt.want) {
				g, _ := json.MarshalIndent(got, "", " ")
				w, _ := json.MarshalIndent(tt.want, "", " ")
				t.Errorf("Build:\n%s\nwant:\n%s", g, w)
			}
		})
	}
}

func TestKeyIgnoresTimeOnly(t *testing.T) {
	d := Build(Snapshot{Node: podview.NodeView{Metadata: podview.NodeMeta{Name: "n"}}})
	d.GeneratedAt = time.Unix(1, 0)
	later := d
	later.GeneratedAt = time.Unix(100, 0)
	changed := d
	changed.TugVersion = "v2"
	k1, _ := d.key()
	k2, _ := later.key()
	k3, _ := changed.key()
	if !bytes.Equal(k1, k2) {
		t.Errorf("the time changes the key: %s, %s", k1, k2)
	}
	if bytes.Equal(k1, k3) {
		t.Errorf("a change does not change the key: %s", k1)
	}
}

func TestBuildUpdateWaiting(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	opens := time.Date(2026, 11, 30, 2, 0, 0, 0, berlin)
	d := Build(Snapshot{Manifests: []podview.ManifestStatus{{Source: "https://fleet.example/pods", File: "https://fleet.example/pods",
		AppliedHash: "h1", Version: 1, Fetch: &podview.FetchStatus{},
		UpdateWaiting: &podview.UpdateWaiting{Opens: opens, Window: "daily 02:00-04:00 tz=Europe/Berlin", Hash: "h2", Version: 2}}}})
	b, err := json.Marshal(d.Sources)
	if err != nil {
		t.Fatal(err)
	}
	want := `"updateWaiting":{"message":"update waiting for the window at 2026-11-30T01:00:00Z","opens":"2026-11-30T01:00:00Z","window":"daily 02:00-04:00 tz=Europe/Berlin","hash":"h2","version":2}`
	if !strings.Contains(string(b), want) {
		t.Errorf("sources %s\nwant them to hold %s", b, want)
	}
}
