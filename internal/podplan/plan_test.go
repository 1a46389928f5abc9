package podplan

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"tug/internal/pod"
	"tug/internal/testutil"
)

// TestPlanPod pins Compute's decisions: for a pod and what the sync read
// (its containers' records, the restarts asked for, the devices gone, the
// back-offs, the startup probes), what each container needs.
func TestPlanPod(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	web := func() *pod.Pod { return testutil.Pod("web", testutil.WithApps("app", "side")) }
	withInit := func() *pod.Pod { return testutil.Pod("web", testutil.WithInit("setup", "migrate")) }
	job := func() *pod.Pod {
		p := testutil.Pod("job", testutil.WithRestartPolicy(pod.RestartOnFailure))
		limit := int32(2)
		p.BackoffLimit = &limit
		return p
	}
	withSidecar := func() *pod.Pod {
		p := testutil.Pod("web", testutil.WithRestartPolicy(pod.RestartNever), testutil.WithInit("proxy", "setup"))
		always := pod.RestartAlways
		p.Spec.InitContainers[0].RestartPolicy = &always
		p.Spec.InitContainers[0].StartupProbe = &pod.Probe{}
		return p
	}
	newImage := func(p *pod.Pod) *pod.Pod {
		q := *p
		q.Spec.Containers = slices.Clone(p.Spec.Containers)
		q.Spec.Containers[0].Image = "busybox:1.36"
		return &q
	}
	moreMemory := func(p *pod.Pod) *pod.Pod {
		q := *p
		q.Spec.Containers = slices.Clone(p.Spec.Containers)
		q.Spec.Containers[0].Resources.Limits = pod.ResourceList{"memory": pod.MustParseQuantity("64Mi")}
		return &q
	}

	tests := []struct {
		name string
		pod  *pod.Pod
		// recs are made for the pod before change, if set, is applied:
		// the records then hold the old spec's hash.
		recs   func(p *pod.Pod) []pod.RuntimeContainer
		change func(p *pod.Pod) *pod.Pod
		facts  func(f *Facts)
		want   string
	}{
		{
			name: "a new pod: every container starts",
			pod:  web(),
			want: "apps: app start(new), side start(new)",
		},
		{
			name: "running with the current spec: kept",
			pod:  web(),
			recs: func(p *pod.Pod) []pod.RuntimeContainer {
				return []pod.RuntimeContainer{running(p, "app", 0), running(p, "side", 0)}
			},
			want: "apps: app keep, side keep",
		},
		{
			name: "a changed image: that container is replaced, the other kept",
			pod:  web(),
			recs: func(p *pod.Pod) []pod.RuntimeContainer {
				return []pod.RuntimeContainer{running(p, "app", 0), running(p, "side", 0)}
			},
			change: newImage,
			want:   "apps: app start(changed), side keep",
		},
		{
			name: "a resize without in-place resize: the container is recreated",
			pod:  web(),
			recs: func(p *pod.Pod) []pod.RuntimeContainer {
				return []pod.RuntimeContainer{running(p, "app", 0), running(p, "side", 0)}
			},
			change: moreMemory,
			want:   "apps: app start(changed), side keep",
		},
		{
			name: "a crash loop: back-off until it is due",
			pod:  web(),
			recs: func(p *pod.Pod) []pod.RuntimeContainer {
				return []pod.RuntimeContainer{exited(p, "app", 3, 1, now.Add(-2*time.Second)), running(p, "side", 0)}
			},
			facts: func(f *Facts) { f.Due = func(*pod.RuntimeContainer) time.Time { return now.Add(8 * time.Second) } },
			want:  "apps: app back-off(10s after exit), side keep",
		},
		{
			name: "a crash loop whose back-off is over: restarted",
			pod:  web(),
			recs: func(p *pod.Pod) []pod.RuntimeContainer {
				return []pod.RuntimeContainer{exited(p, "app", 3, 1, now.Add(-20*time.Second)), running(p, "side", 0)}
			},
			facts: func(f *Facts) { f.Due = func(*pod.RuntimeContainer) time.Time { return now.Add(-10 * time.Second) } },
			want:  "apps: app start(restart), side keep",
		},
		{
			name: "a restart asked for: at once, whatever the back-off",
			pod:  web(),
			recs: func(p *pod.Pod) []pod.RuntimeContainer {
				return []pod.RuntimeContainer{exited(p, "app", 0, 137, now), running(p, "side", 0)}
			},
			facts: func(f *Facts) { f.RestartAsked["app-0"] = true },
			want:  "apps: app start(asked), side keep",
		},
		{
			name: "its QoS class changed: a running container moves",
			pod:  web(),
			recs: func(p *pod.Pod) []pod.RuntimeContainer {
				r := running(p, "app", 0)
				r.CgroupParent = "/tug/besteffort/poduid-web"
				return []pod.RuntimeContainer{r, running(p, "side", 0)}
			},
			want: "apps: app start(moved), side keep",
		},
		{
			name:  "waiting for a device: new containers wait, not start",
			pod:   web(),
			facts: func(f *Facts) { f.GoneDevices["app"] = []string{"/dev/ttyUSB0"} },
			want:  "apps: app wait-device(/dev/ttyUSB0), side start(new)",
		},
		{
			name: "waiting for a device: a running container is kept",
			pod:  web(),
			recs: func(p *pod.Pod) []pod.RuntimeContainer {
				return []pod.RuntimeContainer{running(p, "app", 0), running(p, "side", 0)}
			},
			facts: func(f *Facts) { f.GoneDevices["app"] = []string{"/dev/ttyUSB0"} },
			want:  "apps: app keep, side keep",
		},
		{
			name: "waiting for a device rather than a back-off",
			pod:  web(),
			recs: func(p *pod.Pod) []pod.RuntimeContainer {
				return []pod.RuntimeContainer{exited(p, "app", 1, 1, now), running(p, "side", 0)}
			},
			facts: func(f *Facts) {
				f.GoneDevices["app"] = []string{"/dev/ttyUSB0"}
				f.Due = func(*pod.RuntimeContainer) time.Time { return now.Add(time.Minute) }
			},
			want: "apps: app wait-device(/dev/ttyUSB0), side keep",
		},
		{
			name: "a container removed from the manifest goes first",
			pod:  web(),
			recs: func(p *pod.Pod) []pod.RuntimeContainer {
				old := running(p, "app", 0)
				old.Name, old.ID = "old", "old-0"
				return []pod.RuntimeContainer{running(p, "app", 0), running(p, "side", 0), old}
			},
			want: "remove: old; apps: app keep, side keep",
		},
		{
			name: "a Job's container that succeeded is done",
			pod:  job(),
			recs: func(p *pod.Pod) []pod.RuntimeContainer {
				return []pod.RuntimeContainer{exited(p, "app", 1, 0, now)}
			},
			want: "apps: app done",
		},
		{
			name: "a Job's container that failed its last try is done",
			pod:  job(),
			recs: func(p *pod.Pod) []pod.RuntimeContainer {
				return []pod.RuntimeContainer{exited(p, "app", 2, 1, now)}
			},
			want: "apps: app done",
		},
		{
			name: "init containers: the first starts, the app waits",
			pod:  withInit(),
			want: "init: setup start(new)",
		},
		{
			name: "init containers: the next after one that succeeded",
			pod:  withInit(),
			recs: func(p *pod.Pod) []pod.RuntimeContainer {
				return []pod.RuntimeContainer{exitedInit(p, "setup", 0, 0, now)}
			},
			want: "init: setup done, migrate start(new)",
		},
		{
			name: "init containers: one still running is waited for",
			pod:  withInit(),
			recs: func(p *pod.Pod) []pod.RuntimeContainer {
				r := running(p, "setup", 0)
				r.Init = true
				return []pod.RuntimeContainer{r}
			},
			want: "init: setup wait-exit",
		},
		{
			name: "init containers all done: the app starts",
			pod:  withInit(),
			recs: func(p *pod.Pod) []pod.RuntimeContainer {
				return []pod.RuntimeContainer{exitedInit(p, "setup", 0, 0, now), exitedInit(p, "migrate", 0, 0, now)}
			},
			want: "init: setup done, migrate done; apps: app start(new)",
		},
		{
			name: "a changed init container: the app goes and the init phase runs again",
			pod:  withInit(),
			recs: func(p *pod.Pod) []pod.RuntimeContainer {
				return []pod.RuntimeContainer{exitedInit(p, "setup", 0, 0, now), exitedInit(p, "migrate", 0, 0, now), running(p, "app", 0)}
			},
			change: func(p *pod.Pod) *pod.Pod {
				q := *p
				q.Spec.InitContainers = slices.Clone(p.Spec.InitContainers)
				q.Spec.InitContainers[1].Image = "busybox:1.36"
				return &q
			},
			want: "reset apps; init: setup done, migrate start(changed)",
		},
		{
			name: "an init container failed under restartPolicy Never: the pod failed",
			pod: func() *pod.Pod {
				p := withInit()
				p.Spec.RestartPolicy = pod.RestartNever
				return p
			}(),
			recs: func(p *pod.Pod) []pod.RuntimeContainer {
				return []pod.RuntimeContainer{exitedInit(p, "setup", 0, 2, now)}
			},
			want: "init: setup fail",
		},
		{
			name: "a sidecar starts and its startup probe gates the next init container",
			pod:  withSidecar(),
			facts: func(f *Facts) {
				f.Started = func(string, *pod.Container) bool { return false }
			},
			want: "init: proxy start(new) gated",
		},
		{
			name: "a running sidecar whose startup probe passed lets the next start",
			pod:  withSidecar(),
			recs: func(p *pod.Pod) []pod.RuntimeContainer {
				r := running(p, "proxy", 0)
				r.Init = true
				return []pod.RuntimeContainer{r}
			},
			facts: func(f *Facts) {
				f.Started = func(string, *pod.Container) bool { return true }
			},
			want: "init: proxy keep, setup start(new)",
		},
		{
			name: "a sidecar beside a running app is kept; init is over",
			pod:  withSidecar(),
			recs: func(p *pod.Pod) []pod.RuntimeContainer {
				r := running(p, "proxy", 0)
				r.Init = true
				return []pod.RuntimeContainer{r, exitedInit(p, "setup", 0, 0, now), running(p, "app", 0)}
			},
			want: "sidecars: proxy keep; apps: app keep",
		},
		{
			name: "a sidecar stops once the app containers are done for good",
			pod:  withSidecar(),
			recs: func(p *pod.Pod) []pod.RuntimeContainer {
				r := running(p, "proxy", 0)
				r.Init = true
				return []pod.RuntimeContainer{r, exitedInit(p, "setup", 0, 0, now), exited(p, "app", 0, 0, now)}
			},
			want: "sidecars: proxy stop; apps: app done",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.pod
			var recs []pod.RuntimeContainer
			if tt.recs != nil {
				recs = tt.recs(p)
			}
			if tt.change != nil {
				p = tt.change(p)
			}
			f := Facts{
				ByName:       GroupByName(recs),
				CgroupParent: "/tug/burstable/poduid-web",
				RestartAsked: map[string]bool{},
				GoneDevices:  map[string][]string{},
				Due:          func(*pod.RuntimeContainer) time.Time { return now.Add(-time.Second) },
				Now:          now,
			}
			if tt.facts != nil {
				tt.facts(&f)
			}
			if got := describePlan(Compute(p, f)); got != tt.want {
				t.Errorf("plan:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// describePlan writes a plan as one line, e.g. "remove: old; init: setup
// done; apps: app start(new)".
func describePlan(pl Plan) string {
	var parts []string
	if len(pl.Remove) > 0 {
		parts = append(parts, "remove: "+strings.Join(pl.Remove, ", "))
	}
	if pl.ResetApps {
		parts = append(parts, "reset apps")
	}
	steps := func(label string, sts []Step) {
		if len(sts) == 0 {
			return
		}
		var s []string
		for _, st := range sts {
			d := st.Container.Name + " " + st.Action.String()
			switch st.Action {
			case Start:
				d += "(" + st.Why + ")"
			case BackOff:
				d += fmt.Sprintf("(%v after exit)", st.Until.Sub(st.Last.FinishedAt))
			case WaitDevice:
				d += "(" + strings.Join(st.Devices, ", ") + ")"
			}
			if st.Gate {
				d += " gated"
			}
			s = append(s, d)
		}
		parts = append(parts, label+": "+strings.Join(s, ", "))
	}
	if len(pl.Init) > 0 && !pl.Init[0].InInit {
		steps("sidecars", pl.Init)
	} else {
		steps("init", pl.Init)
	}
	if pl.InitDone != (len(pl.Apps) > 0) {
		parts = append(parts, fmt.Sprintf("initDone=%v", pl.InitDone))
	}
	steps("apps", pl.Apps)
	return strings.Join(parts, "; ")
}

// running is a record of container name of p running attempt with its
// current spec, under the pod cgroup of the tests' sandbox.
func running(p *pod.Pod, name string, attempt int) pod.RuntimeContainer {
	return pod.RuntimeContainer{
		ID: fmt.Sprintf("%s-%d", name, attempt), Name: name, PodUID: p.Metadata.UID, Attempt: attempt,
		SpecHash: pod.ContainerHash(p, specOf(p, name)), State: pod.RunRunning,
		CgroupParent: "/tug/burstable/poduid-web",
	}
}

// exited is a record of app container name that exited with code at
// finished.
func exited(p *pod.Pod, name string, attempt, code int, finished time.Time) pod.RuntimeContainer {
	r := running(p, name, attempt)
	r.State, r.ExitCode = pod.RunExited, code
	r.StartedAt, r.FinishedAt = finished.Add(-time.Second), finished
	return r
}

// exitedInit is exited for an init container.
func exitedInit(p *pod.Pod, name string, attempt, code int, finished time.Time) pod.RuntimeContainer {
	r := exited(p, name, attempt, code, finished)
	r.Init = true
	return r
}

// specOf returns the container of p named name.
func specOf(p *pod.Pod, name string) *pod.Container {
	for _, list := range [][]pod.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// TestAddDevices: the devices that are gone are noted by container name,
// init containers included, and HasDevices says whether any container was
// given one.
func TestAddDevices(t *testing.T) {
	p := &pod.Pod{}
	p.Spec.InitContainers = []pod.Container{{Name: "setup"}}
	p.Spec.Containers = []pod.Container{{Name: "app"}, {Name: "side"}}
	tests := []struct {
		name     string
		given    map[string][]string // container -> its devices that are gone (nil: given none)
		wantGone map[string][]string
		wantHas  bool
	}{
		{name: "no devices", wantGone: nil},
		{name: "given, all present", given: map[string][]string{"app": {}}, wantHas: true},
		{name: "one gone", given: map[string][]string{"app": {"/dev/ttyUSB0 of tug.io/serial"}, "side": {}},
			wantGone: map[string][]string{"app": {"/dev/ttyUSB0 of tug.io/serial"}}, wantHas: true},
		{name: "an init container's", given: map[string][]string{"setup": {"/dev/i2c-1 of tug.io/i2c"}},
			wantGone: map[string][]string{"setup": {"/dev/i2c-1 of tug.io/i2c"}}, wantHas: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f Facts
			f.AddDevices(p, func(_ *pod.Pod, c *pod.Container) ([]string, bool) {
				g, has := tt.given[c.Name]
				return g, has
			})
			if f.HasDevices != tt.wantHas || !reflect.DeepEqual(f.GoneDevices, tt.wantGone) {
				t.Errorf("GoneDevices %v, HasDevices %v; want %v, %v", f.GoneDevices, f.HasDevices, tt.wantGone, tt.wantHas)
			}
		})
	}
}
