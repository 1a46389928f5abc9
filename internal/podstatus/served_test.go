package podstatus

import (
	"errors"
	"strings"
	"testing"

	"tug/internal/pod"
	"tug/internal/podconfig"
	"tug/internal/podview"
)

type fakeSnapshot struct {
	pods  []*pod.Pod
	files []podconfig.FileState
}

func (s fakeSnapshot) Pods() []*pod.Pod             { return s.pods }
func (s fakeSnapshot) Files() []podconfig.FileState { return s.files }

type fakeStatuser struct{ orphans, terminating []podview.View }

func (f fakeStatuser) Status(p *pod.Pod) pod.Status {
	return pod.Status{Message: "status of " + p.Metadata.Name}
}
func (f fakeStatuser) Orphans() []podview.View     { return f.orphans }
func (f fakeStatuser) Terminating() []podview.View { return f.terminating }

// TestViewTerminating: pods being removed follow the desired pods, but for
// one the store wants again (the same UID: an update).
func TestViewTerminating(t *testing.T) {
	web := &pod.Pod{}
	web.Metadata.Name, web.Metadata.UID = "web", "u-web"
	gone := podview.View{Kind: "Pod"}
	gone.Metadata.Name, gone.Metadata.UID = "gone", "u-gone"
	replaced := podview.View{Kind: "Pod"}
	replaced.Metadata.Name, replaced.Metadata.UID = "web", "u-web"
	v := Served{Store: fakeSnapshot{pods: []*pod.Pod{web}},
		Loop: fakeStatuser{terminating: []podview.View{gone, replaced}, orphans: []podview.View{{Kind: "Pod"}}}}
	pods := v.Pods()
	if len(pods) != 3 || pods[0].Metadata.Name != "web" || pods[0].Status.Message != "status of web" || pods[1].Metadata.Name != "gone" {
		t.Fatalf("Pods = %+v; want web as desired, the pod being removed, then the orphan", pods)
	}
}

func TestView(t *testing.T) {
	web := &pod.Pod{}
	web.Metadata.Name = "web"
	v := Served{
		Store: fakeSnapshot{
			pods: []*pod.Pod{web},
			files: []podconfig.FileState{
				{Origin: pod.Origin{Source: "file:/m", File: "/m/web.yaml"}, UIDs: []string{"u1"}, Hash: "h"},
				{Origin: pod.Origin{Source: "file:/m", File: "/m/bad.yaml"}, Err: errors.New("bad.yaml:1:1: broken")},
				{Origin: pod.Origin{Source: "url:a", File: "url:a"}},
			},
		},
		Loop: fakeStatuser{orphans: []podview.View{{Kind: "Pod"}}},
		Fetch: map[string]func() podview.FetchStatus{
			"url:a": func() podview.FetchStatus { return podview.FetchStatus{HTTPStatus: 200} },
			"url:b": func() podview.FetchStatus { return podview.FetchStatus{Error: "connection refused"} },
		},
	}
	pods := v.Pods()
	if len(pods) != 2 || pods[0].Status.Message != "status of web" || pods[0].Kind != "Pod" || pods[0].APIVersion != "v1" {
		t.Fatalf("Pods = %+v; want web with the loop's status, then the orphan", pods)
	}
	ms := v.Manifests()
	if len(ms) != 4 {
		t.Fatalf("Manifests = %+v; want the 3 files and the URL that never answered", ms)
	}
	if ms[0].Fetch != nil || ms[0].Hash != "h" || ms[1].Error != "bad.yaml:1:1: broken" {
		t.Errorf("file states = %+v %+v", ms[0], ms[1])
	}
	if ms[2].Fetch == nil || ms[2].Fetch.HTTPStatus != 200 {
		t.Errorf("url:a = %+v; want its fetch state", ms[2])
	}
	if ms[3].Source != "url:b" || ms[3].Error != "connection refused" || ms[3].Fetch == nil {
		t.Errorf("url:b = %+v; want a row with its fetch error", ms[3])
	}
}

type fakePodConditions map[string]*pod.Condition

func (f fakePodConditions) Condition(p *pod.Pod) *pod.Condition { return f[p.Metadata.Name] }

func TestViewPIDLimitCondition(t *testing.T) {
	bomb, web := &pod.Pod{}, &pod.Pod{}
	bomb.Metadata.Name, web.Metadata.Name = "bomb", "web"
	cond := &pod.Condition{Type: pod.ConditionPIDLimitReached, Status: "True", Reason: pod.ReasonPIDLimitReached, Message: "limit of 300"}
	v := Served{Store: fakeSnapshot{pods: []*pod.Pod{bomb, web}}, Loop: fakeStatuser{},
		PIDLimits: fakePodConditions{"bomb": cond}}
	pods := v.Pods()
	got := pods[0].Status
	if len(got.Conditions) != 1 || got.Conditions[0] != *cond || got.Reason != pod.ReasonPIDLimitReached || got.Message != "limit of 300" {
		t.Errorf("bomb status = %+v; want the PIDLimitReached condition and reason", got)
	}
	if got := pods[1].Status; len(got.Conditions) != 0 || got.Reason != "" {
		t.Errorf("web status = %+v; want no condition", got)
	}
}

// fakePulls pulls the images it names, with their messages.
type fakePulls map[string]string

func (f fakePulls) PullMessage(image string) (string, bool) {
	msg, ok := f[image]
	return msg, ok
}

func TestWithPullMessages(t *testing.T) {
	waiting := func(reason, msg string) pod.ContainerState {
		return pod.ContainerState{Waiting: &pod.StateWaiting{Reason: reason, Message: msg}}
	}
	pulls := fakePulls{"app:1": `Pulling image "app:1": 1.0 MB of 2.0 MB`, "init:1": `Pulling image "init:1"`}
	tests := []struct {
		name  string
		image string
		state pod.ContainerState
		want  string // the waiting message after; "-": not waiting
	}{
		{"creating while its image is pulled", "app:1", waiting(pod.ReasonContainerCreating, ""), `Pulling image "app:1": 1.0 MB of 2.0 MB`},
		{"creating, no pull under way", "other:1", waiting(pod.ReasonContainerCreating, ""), ""},
		{"a message of its own is kept", "app:1", waiting(pod.ReasonContainerCreating, "own"), "own"},
		{"another reason", "app:1", waiting(pod.ReasonImagePullBackOff, "back-off"), "back-off"},
		{"running", "app:1", pod.ContainerState{Running: &pod.StateRunning{}}, "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := pod.Status{
				InitContainerStatuses: []pod.ContainerStatus{{Image: "init:1", State: waiting(pod.ReasonContainerCreating, "")}},
				ContainerStatuses:     []pod.ContainerStatus{{Image: tt.image, State: tt.state}},
			}
			st = withPullMessages(st, pulls)
			got := "-"
			if w := st.ContainerStatuses[0].State.Waiting; w != nil {
				got = w.Message
			}
			if got != tt.want {
				t.Errorf("message = %q, want %q", got, tt.want)
			}
			if m := st.InitContainerStatuses[0].State.Waiting.Message; m != `Pulling image "init:1"` {
				t.Errorf("init container's message = %q", m)
			}
		})
	}
}

// TestWithUpdatePull: a running container whose spec asks for an image
// being pulled gives the pod a False UpdateReady condition, reason
// Pulling, with the pull's progress; nothing else does.
func TestWithUpdatePull(t *testing.T) {
	pulls := fakePulls{"app:2": `Pulling image "app:2": 1.0 MB of 2.0 MB`}
	running := pod.ContainerState{Running: &pod.StateRunning{}}
	blocked := pod.Condition{Type: pod.ConditionUpdateReady, Status: "False", Reason: pod.ReasonImagePullBackOff}
	tests := []struct {
		name       string
		specImage  string
		statusImg  string
		state      pod.ContainerState
		conditions []pod.Condition
		want       string // the UpdateReady condition's reason; "" for none
	}{
		{"update pulling", "app:2", "app:1", running, nil, ReasonPulling},
		{"no update", "app:2", "app:2", running, nil, ""},
		{"update, no pull under way", "app:3", "app:1", running, nil, ""},
		{"not running: the waiting message says it", "app:2", "app:1", pod.ContainerState{Waiting: &pod.StateWaiting{Reason: pod.ReasonContainerCreating}}, nil, ""},
		{"a blocked update's condition is kept", "app:2", "app:1", running, []pod.Condition{blocked}, pod.ReasonImagePullBackOff},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &pod.Pod{Spec: pod.PodSpec{Containers: []pod.Container{{Name: "app", Image: tt.specImage}}}}
			st := pod.Status{Conditions: tt.conditions,
				ContainerStatuses: []pod.ContainerStatus{{Name: "app", Image: tt.statusImg, State: tt.state}}}
			st = withUpdatePull(st, p, pulls)
			got := ""
			for _, c := range st.Conditions {
				if c.Type == pod.ConditionUpdateReady {
					got = c.Reason
					if c.Reason == ReasonPulling && !strings.Contains(c.Message, "1.0 MB of 2.0 MB") {
						t.Errorf("message %q has no progress", c.Message)
					}
				}
			}
			if got != tt.want {
				t.Errorf("UpdateReady reason %q, want %q", got, tt.want)
			}
		})
	}
}

type fakeFileRollouts map[pod.Origin]*podview.ManifestRollout

func (f fakeFileRollouts) Condition(string) *pod.Condition            { return nil }
func (f fakeFileRollouts) File(o pod.Origin) *podview.ManifestRollout { return f[o] }

// TestManifestsWave: each URL bundle gets its place in its rollout from
// the gate; one whose applied content failed and went back to its good
// content is rolled_back, with the rollout's reason, unless a newer version
// waits.
func TestManifestsWave(t *testing.T) {
	url := pod.Origin{Source: "oci:r/fleet:prod", File: "oci:r/fleet:prod"}
	tests := []struct {
		name      string
		gate      *podview.WaveState
		failed    string // the file's failed content
		wantState string
		wantWave  int
	}{
		{"applied", &podview.WaveState{State: "applied", Version: 3, WaveIndex: 1}, "", "applied", 1},
		{"applied, then rolled back", &podview.WaveState{State: "applied", Version: 3, WaveIndex: 1}, "h3", "rolled_back", 1},
		{"halted, then rolled back", &podview.WaveState{State: "halted", Version: 3}, "h3", "rolled_back", 0},
		{"rolled back without a plan", nil, "h3", "rolled_back", 0},
		{"rolled back, a newer version waits", &podview.WaveState{State: "waiting", Version: 4, WaveIndex: 2}, "h3", "waiting", 2},
		{"an older content failed", &podview.WaveState{State: "applied", Version: 3, WaveIndex: 1}, "h2", "applied", 1},
		{"nothing", nil, "", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Served{
				Store: fakeSnapshot{files: []podconfig.FileState{{Origin: url, AppliedHash: "h3", Version: 3}}},
				Loop:  fakeStatuser{},
				Waves: func() map[pod.Origin]podview.WaveState {
					if tt.gate == nil {
						return nil
					}
					return map[pod.Origin]podview.WaveState{url: *tt.gate}
				},
				Rollouts: fakeFileRollouts{url: {GoodHash: "h2", GoodVersion: 2, FailedHash: tt.failed, FailedVersion: 3, Reason: "restarted 2 times", HeldBack: true}},
			}
			ms := v.Manifests()
			if len(ms) != 1 {
				t.Fatalf("Manifests = %+v", ms)
			}
			w := ms[0].Wave
			switch {
			case tt.wantState == "" && w != nil:
				t.Fatalf("wave %+v, want none", w)
			case tt.wantState == "":
			case w == nil || w.State != tt.wantState || w.WaveIndex != tt.wantWave:
				t.Fatalf("wave %+v, want %s in wave %d", w, tt.wantState, tt.wantWave)
			case w.State == "rolled_back" && w.Reason != "version 3 rolled back to version 2: restarted 2 times":
				t.Errorf("reason %q", w.Reason)
			}
		})
	}
}
