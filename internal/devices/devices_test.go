package devices

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"tug/internal/pod"
	"tug/internal/testutil"
)

func TestParseResource(t *testing.T) {
	tests := []struct {
		in      string
		want    Resource
		wantErr string
	}{
		{in: "tug.io/serial=/dev/ttyUSB*", want: Resource{Name: "tug.io/serial", Glob: "/dev/ttyUSB*", Access: "rw"}},
		{in: "tug.io/serial=/dev/ttyUSB*:rwm", want: Resource{Name: "tug.io/serial", Glob: "/dev/ttyUSB*", Access: "rwm"}},
		{in: "example.com/cam=/dev/video[0-3]:r", want: Resource{Name: "example.com/cam", Glob: "/dev/video[0-3]", Access: "r"}},
		{in: "example.com/dongle=cdi:example.com/dongle", want: Resource{Name: "example.com/dongle", CDIKind: "example.com/dongle"}},
		{in: "example.com/dongle", wantErr: "want NAME=GLOB"},
		{in: "dongle=/dev/x", wantErr: "want DOMAIN/NAME"},
		{in: "kubernetes.io/dongle=/dev/x", wantErr: "kubernetes.io domain"},
		{in: "x.kubernetes.io/dongle=/dev/x", wantErr: "kubernetes.io domain"},
		{in: "example.com/d=dev/x", wantErr: "not a clean absolute path"},
		{in: "example.com/d=/dev/../etc/x", wantErr: "not a clean absolute path"},
		{in: "example.com/d=/dev/x:rwx", wantErr: "access \"rwx\""},
		{in: "example.com/d=/dev/x:rr", wantErr: "access \"rr\""},
		{in: "example.com/d=/dev/[", wantErr: "syntax error"},
		{in: "example.com/d=cdi:nokind", wantErr: "want VENDOR/CLASS"},
		{in: "example.com/d=cdi:exa mple.com/x", wantErr: "CDI kind"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseResource(tt.in)
			if tt.wantErr != "" {
				if err == nil || !errors.Is(err, ErrBadResource) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseResource(%q) = %v, want ErrBadResource saying %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseResource(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
			if back, err := ParseResource(got.String()); err != nil || back != got {
				t.Errorf("String() %q does not parse back: %+v, %v", got.String(), back, err)
			}
		})
	}
	if _, err := ParseResources([]string{"a.io/x=/dev/a", "a.io/x=/dev/b"}); err == nil {
		t.Error("a name declared twice was accepted")
	}
}

// fakeTargets are the distinct char devices fakeNodes links to, in order,
// and their minor numbers (major 1).
var (
	fakeTargets = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}
	fakeMinors  = []int64{3, 5, 7, 8, 9}
)

// fakeNodes makes n links (at most 5) to distinct device nodes in a temp
// dir (ttyFake0 to /dev/null, ttyFake1 to /dev/zero, ...: device nodes need
// root to create; a link to one is a device node to Stat, and exclusivity
// keys on the device) and returns the glob that matches them.
func fakeNodes(t *testing.T, dir string, n int) string {
	t.Helper()
	for i := range n {
		if err := os.Symlink(fakeTargets[i], filepath.Join(dir, "ttyFake"+string(rune('0'+i)))); err != nil {
			t.Fatal(err)
		}
	}
	// A regular file the glob matches is not a unit.
	if err := os.WriteFile(filepath.Join(dir, "ttyFakeFile"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "ttyFake*")
}

// podAsking returns a pod whose app containers ask for asks[i] dongles and
// whose one init container asks for initAsk.
func podAsking(uid string, initAsk int, asks ...int) *pod.Pod {
	p := &pod.Pod{Metadata: pod.ObjectMeta{Name: uid, UID: uid}}
	ask := func(n int) pod.Resources {
		if n == 0 {
			return pod.Resources{}
		}
		q := pod.MustParseQuantity(itoa(n))
		return pod.Resources{Limits: pod.ResourceList{"example.com/dongle": q}, Requests: pod.ResourceList{"example.com/dongle": q}}
	}
	if initAsk > 0 {
		p.Spec.InitContainers = []pod.Container{{Name: "init", Resources: ask(initAsk)}}
	}
	for i, n := range asks {
		p.Spec.Containers = append(p.Spec.Containers, pod.Container{Name: "c" + itoa(i), Resources: ask(n)})
	}
	return p
}

func newTestManager(t *testing.T, state string, units int) *Manager {
	t.Helper()
	glob := fakeNodes(t, t.TempDir(), units)
	m, err := New(Config{Resources: []Resource{{Name: "example.com/dongle", Glob: glob, Access: "rw"}}, StateFile: state})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestAllocation(t *testing.T) {
	state := filepath.Join(t.TempDir(), "devices", "allocations.json")
	m := newTestManager(t, state, 3)
	if got := m.Capacity()["example.com/dongle"]; got != 3 {
		t.Fatalf("capacity %d, want 3", got)
	}
	steps := []struct {
		name    string
		do      func() error
		wantErr string
	}{
		{"two for a", func() error { return m.Admit(podAsking("a", 0, 2)) }, ""},
		{"a again keeps its two", func() error { return m.Admit(podAsking("a", 0, 2)) }, ""},
		{"two for b: one is free", func() error { return m.Admit(podAsking("b", 0, 1, 1)) },
			"Node didn't have enough resource: example.com/dongle, requested: 2, used: 2, capacity: 3"},
		{"one for b", func() error { return m.Admit(podAsking("b", 0, 1)) }, ""},
		{"one for c: none free", func() error { return m.Admit(podAsking("c", 0, 1)) },
			"Node didn't have enough resource: example.com/dongle, requested: 1, used: 3, capacity: 3"},
		{"a goes", func() error { return m.Release("a") }, ""},
		{"c gets one, its init container two: two", func() error { return m.Admit(podAsking("c", 2, 1)) }, ""},
	}
	for _, s := range steps {
		err := s.do()
		switch {
		case s.wantErr == "" && err != nil:
			t.Fatalf("%s: %v", s.name, err)
		case s.wantErr != "" && (err == nil || err.Error() != s.wantErr):
			t.Fatalf("%s: err %v, want %q", s.name, err, s.wantErr)
		case s.wantErr != "":
			var oor *OutOfResource
			if !errors.As(err, &oor) || oor.PodReason() != "OutOfexample.com/dongle" || !errors.Is(err, ErrOutOfResource) {
				t.Fatalf("%s: %#v is not an OutOfResource with reason OutOfexample.com/dongle", s.name, err)
			}
		}
	}
	b, c := m.Held("b")["example.com/dongle"], m.Held("c")["example.com/dongle"]
	if len(b) != 1 || len(c) != 2 || slices.Contains(c, b[0]) {
		t.Fatalf("b holds %v, c holds %v: want 1 and 2, disjoint", b, c)
	}

	// A restarted manager reads the same allocations.
	again, err := New(Config{Resources: m.cfg.Resources, StateFile: state})
	if err != nil {
		t.Fatal(err)
	}
	if got := again.Held("c")["example.com/dongle"]; !slices.Equal(got, c) {
		t.Fatalf("after restart c holds %v, want %v", got, c)
	}
	if err := again.Admit(podAsking("d", 0, 1)); !errors.Is(err, ErrOutOfResource) {
		t.Fatalf("after restart a fourth unit was given: %v", err)
	}
	if err := again.Admit(podAsking("c", 2, 1)); err != nil {
		t.Fatalf("after restart c is refused what it holds: %v", err)
	}
}

// TestDamagedStateFile: an allocation file a power cut damaged never
// stops tug and never gives a running pod's device to another pod: New
// warns (naming the file) and Restore gives the running pods their units
// back from their containers' devices before another pod is admitted.
func TestDamagedStateFile(t *testing.T) {
	for _, d := range testutil.Damages {
		t.Run(string(d), func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "devices", "allocations.json")
			m := newTestManager(t, state, 2)
			if err := m.Admit(podAsking("a", 0, 1)); err != nil {
				t.Fatal(err)
			}
			if err := m.Admit(podAsking("b", 0, 1)); err != nil {
				t.Fatal(err)
			}
			b := m.Held("b")["example.com/dongle"]
			testutil.DamageFile(t, state, d)
			log := testutil.NewWarnLog(t)
			again, err := New(Config{Resources: m.cfg.Resources, StateFile: state, Log: log.Logger})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if got := log.Files(); (d != testutil.DamageMissing) != slices.Contains(got, state) {
				t.Errorf("warnings name %q (damage %s)", got, d)
			}
			// b runs (with its device and /dev/null); a was removed while
			// tug was down.
			if err := again.Restore(map[string][]string{"b": {"/dev/null", b[0]}}); err != nil {
				t.Fatal(err)
			}
			if got := again.Held("b")["example.com/dongle"]; !slices.Equal(got, b) {
				t.Errorf("b holds %v after Restore, want %v", got, b)
			}
			if err := again.Admit(podAsking("c", 0, 1)); err != nil {
				t.Fatal(err)
			}
			if got := again.Held("c")["example.com/dongle"]; slices.Equal(got, b) {
				t.Errorf("c was given running b's %v", got)
			}
			log2 := testutil.NewWarnLog(t)
			third, err := New(Config{Resources: m.cfg.Resources, StateFile: state, Log: log2.Logger})
			if err != nil || len(log2.Files()) != 0 {
				t.Fatalf("the rewritten file: %v, warnings %q", err, log2.Files())
			}
			if got := third.Held("b")["example.com/dongle"]; !slices.Equal(got, b) {
				t.Errorf("rewritten file: b holds %v", got)
			}
		})
	}
}

// TestRestoreKeepsAnotherPodsUnit: a unit the file gives one pod stays
// that pod's when a container of another pod names it too; a unit no
// record names is added to the running pod's.
func TestRestoreKeepsAnotherPodsUnit(t *testing.T) {
	state := filepath.Join(t.TempDir(), "allocations.json")
	m := newTestManager(t, state, 2)
	if err := m.Admit(podAsking("recorded", 0, 1)); err != nil {
		t.Fatal(err)
	}
	u := m.Held("recorded")["example.com/dongle"]
	units := m.Units(m.cfg.Resources[0])
	free := slices.DeleteFunc(slices.Clone(units), func(x string) bool { return x == u[0] })
	if err := m.Restore(map[string][]string{"other": {u[0], free[0]}}); err != nil {
		t.Fatal(err)
	}
	if got := m.Held("recorded")["example.com/dongle"]; !slices.Equal(got, u) {
		t.Errorf("recorded holds %v, want %v", got, u)
	}
	if got := m.Held("other")["example.com/dongle"]; !slices.Equal(got, free[:1]) {
		t.Errorf("other holds %v, want %v", got, free[:1])
	}
}

func TestAdmitUndeclared(t *testing.T) {
	m := newTestManager(t, filepath.Join(t.TempDir(), "a.json"), 1)
	p := podAsking("a", 0, 1)
	p.Spec.Containers[0].Resources.Limits["vendor.io/gpu"] = pod.MustParseQuantity("1")
	err := m.Admit(p)
	var oor *OutOfResource
	if !errors.As(err, &oor) || err.Error() != "Node didn't have enough resource: vendor.io/gpu, requested: 1, used: 0, capacity: 0" {
		t.Fatalf("undeclared resource: %v", err)
	}
	if len(m.Held("a")) != 0 {
		t.Fatalf("a refused pod holds %v", m.Held("a"))
	}
	if err := m.Admit(&pod.Pod{Metadata: pod.ObjectMeta{UID: "plain"}}); err != nil {
		t.Fatalf("a pod that asks for no device: %v", err)
	}
}

func TestContainerDevices(t *testing.T) {
	m := newTestManager(t, filepath.Join(t.TempDir(), "a.json"), 3)
	p := podAsking("a", 1, 1, 2)
	if err := m.Admit(p); err != nil {
		t.Fatal(err)
	}
	held := m.Held("a")["example.com/dongle"]
	tests := []struct {
		c    *pod.Container
		want []string
	}{
		{&p.Spec.InitContainers[0], held[:1]},
		{&p.Spec.Containers[0], held[:1]},
		{&p.Spec.Containers[1], held[1:3]},
	}
	for _, tt := range tests {
		t.Run(tt.c.Name, func(t *testing.T) {
			nodes, cdiNames, err := m.ContainerDevices(p, tt.c)
			if err != nil || len(cdiNames) != 0 {
				t.Fatalf("ContainerDevices = %v, %v, %v", nodes, cdiNames, err)
			}
			var paths []string
			for _, n := range nodes {
				paths = append(paths, n.Path)
				want := fakeMinors[n.Path[len(n.Path)-1]-'0']
				if n.Type != "c" || n.Major != 1 || n.Minor != want || n.Access != "rw" {
					t.Errorf("node %+v: want char 1:%d (its target's) with access rw", n, want)
				}
			}
			if !slices.Equal(paths, tt.want) {
				t.Errorf("paths %v, want %v", paths, tt.want)
			}
		})
	}
}

const cdiSpec = `cdiVersion: "0.6.0"
kind: example.com/device
devices:
- name: fake0
  containerEdits:
    deviceNodes:
    - path: /dev/fake0
      hostPath: /dev/null
- name: fake1
  containerEdits:
    deviceNodes:
    - path: /dev/fake1
      hostPath: /dev/zero
- name: all
  containerEdits:
    deviceNodes:
    - path: /dev/fake0
      hostPath: /dev/null
    - path: /dev/fake1
      hostPath: /dev/zero
containerEdits:
  env:
  - FAKE_DEVICE=yes
`

func TestCDI(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "example.yaml"), []byte(cdiSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := New(Config{
		Resources:   []Resource{{Name: "example.com/dongle", CDIKind: "example.com/device"}},
		CDISpecDirs: []string{dir, filepath.Join(dir, "missing")},
		StateFile:   filepath.Join(t.TempDir(), "a.json"),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got := m.Units(m.cfg.Resources[0]); !slices.Equal(got, []string{"example.com/device=fake0", "example.com/device=fake1"}) {
		t.Fatalf("units %v", got)
	}
	p := podAsking("a", 0, 1)
	p.Metadata.Annotations = map[string]string{"cdi.k8s.io/extra": "example.com/device=fake1"}
	if err := m.Admit(p); err != nil {
		t.Fatal(err)
	}
	_, names, err := m.ContainerDevices(p, &p.Spec.Containers[0])
	if err != nil || !slices.Equal(names, []string{"example.com/device=fake1", "example.com/device=fake0"}) {
		t.Fatalf("CDI names %v, %v", names, err)
	}
	tests := []struct {
		names     []string
		wantPaths []string
		wantErr   bool
	}{
		{[]string{"example.com/device=fake0"}, []string{"/dev/fake0"}, false},
		{[]string{"example.com/device=all"}, []string{"/dev/fake0", "/dev/fake1"}, false},
		{[]string{"example.com/device=nope"}, nil, true},
		{[]string{"not a name"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.names, ","), func(t *testing.T) {
			s := &specs.Spec{Process: &specs.Process{}, Linux: &specs.Linux{}}
			err := m.InjectCDI(s, tt.names)
			if tt.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var paths []string
			for _, d := range s.Linux.Devices {
				paths = append(paths, d.Path)
			}
			if !slices.Equal(paths, tt.wantPaths) || !slices.Contains(s.Process.Env, "FAKE_DEVICE=yes") {
				t.Errorf("devices %v env %v; want %v and FAKE_DEVICE=yes", paths, s.Process.Env, tt.wantPaths)
			}
		})
	}
}

func TestGone(t *testing.T) {
	dir := t.TempDir()
	glob := fakeNodes(t, dir, 2)
	m, err := New(Config{Resources: []Resource{{Name: "example.com/dongle", Glob: glob, Access: "rw"}}, StateFile: filepath.Join(t.TempDir(), "a.json")})
	if err != nil {
		t.Fatal(err)
	}
	p := podAsking("a", 0, 1, 1, 0)
	if err := m.Admit(p); err != nil {
		t.Fatal(err)
	}
	held := m.Held("a")["example.com/dongle"]
	if err := os.Remove(held[1]); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		c        *pod.Container
		wantGone []string
		wantHas  bool
	}{
		{&p.Spec.Containers[0], nil, true},
		{&p.Spec.Containers[1], []string{held[1] + " of example.com/dongle"}, true},
		{&p.Spec.Containers[2], nil, false},
	}
	for _, tt := range tests {
		gone, has := m.Gone(p, tt.c)
		if !slices.Equal(gone, tt.wantGone) || has != tt.wantHas {
			t.Errorf("%s: Gone = %v, %v; want %v, %v", tt.c.Name, gone, has, tt.wantGone, tt.wantHas)
		}
	}
	if got := m.Capacity()["example.com/dongle"]; got != 1 {
		t.Errorf("capacity %d with one node gone, want 1", got)
	}
}

func TestRunWatches(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "by-id") // missing at first: its parent is watched
	m, err := New(Config{
		Resources: []Resource{{Name: "example.com/dongle", Glob: filepath.Join(sub, "ttyFake*"), Access: "rw"}},
		StateFile: filepath.Join(t.TempDir(), "a.json"),
	})
	if err != nil {
		t.Fatal(err)
	}
	m.watching = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	<-m.watching
	steps := []struct {
		name string
		do   func() error
		want int
	}{
		{"directory appears", func() error { return os.Mkdir(sub, 0o755) }, 0},
		{"a node appears", func() error { return os.Symlink("/dev/null", filepath.Join(sub, "ttyFake0")) }, 1},
		{"another", func() error { return os.Symlink("/dev/null", filepath.Join(sub, "ttyFake1")) }, 2},
		{"one goes", func() error { return os.Remove(filepath.Join(sub, "ttyFake0")) }, 1},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-m.Changes():
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no change told", s.name)
		}
		if got := m.Capacity()["example.com/dongle"]; got != s.want {
			t.Fatalf("%s: capacity %d, want %d", s.name, got, s.want)
		}
	}
}

// podAskingFor returns a pod of namespace default whose one container asks
// for one unit of resource.
func podAskingFor(uid, resource string) *pod.Pod {
	q := pod.MustParseQuantity("1")
	return &pod.Pod{
		Metadata: pod.ObjectMeta{Name: uid + "-node1", Namespace: "default", UID: uid},
		Spec: pod.PodSpec{Containers: []pod.Container{{Name: "main",
			Resources: pod.Resources{Limits: pod.ResourceList{pod.ResourceName(resource): q}}}}},
	}
}

// TestExclusiveByDevice: exclusivity keys on the device a path leads to,
// across resources and paths: a device reached by a symlink of one
// resource (by-id/usb-stick) and by its node in another (ttyUSB0), or
// by two paths of one resource, is given to one pod; the other pod is
// refused with the pod, the unit and the resource that hold it, also by a
// restarted manager (the holder's name is in the state file); once the
// holder goes, the other pod gets it.
func TestExclusiveByDevice(t *testing.T) {
	dev := t.TempDir()
	byID := filepath.Join(dev, "by-id")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(byID, 0o755))
	tty := filepath.Join(dev, "ttyUSB0")
	must(os.Symlink("/dev/zero", tty)) // the device node (a link to one: no root here)
	stick := filepath.Join(byID, "usb-stick")
	must(os.Symlink("../ttyUSB0", stick))
	other := filepath.Join(dev, "ttyUSB1")
	must(os.Symlink("/dev/full", other))
	same := filepath.Join(dev, "ttyUSB2") // a second path to ttyUSB0's device, in the same resource
	must(os.Symlink("/dev/zero", same))

	state := filepath.Join(t.TempDir(), "allocations.json")
	cfg := Config{Resources: []Resource{
		{Name: "example.com/serial", Glob: filepath.Join(byID, "*"), Access: "rw"},
		{Name: "example.com/tty", Glob: filepath.Join(dev, "ttyUSB*"), Access: "rw"},
	}, StateFile: state}
	m, err := New(cfg)
	must(err)

	must(m.Admit(podAskingFor("a", "example.com/serial")))
	if got := m.Held("a")["example.com/serial"]; !slices.Equal(got, []string{stick}) {
		t.Fatalf("a holds %v, want [%s]", got, stick)
	}
	// b asks for a tty: ttyUSB0 and ttyUSB2 are a's device, ttyUSB1 is free.
	must(m.Admit(podAskingFor("b", "example.com/tty")))
	if got := m.Held("b")["example.com/tty"]; !slices.Equal(got, []string{other}) {
		t.Fatalf("b holds %v, want [%s]: the only tty that is not a's device", got, other)
	}
	want := "Node didn't have enough resource: example.com/tty, requested: 1, used: 3, capacity: 3; " +
		tty + " is char device 1:5, held by pod default/a-node1 as " + stick + " of example.com/serial; " +
		same + " is char device 1:5, held by pod default/a-node1 as " + stick + " of example.com/serial"
	refused := func(m *Manager, when string) {
		t.Helper()
		err := m.Admit(podAskingFor("c", "example.com/tty"))
		var oor *OutOfResource
		if !errors.As(err, &oor) || err.Error() != want || oor.PodReason() != "OutOfexample.com/tty" {
			t.Fatalf("%s: c asking for a tty: %v\nwant %s", when, err, want)
		}
		if got := m.Held("c"); len(got) != 0 {
			t.Errorf("%s: refused c holds %v", when, got)
		}
	}
	refused(m, "every tty taken")

	again, err := New(cfg)
	must(err)
	refused(again, "after a restart")

	must(again.Release("a"))
	must(again.Admit(podAskingFor("c", "example.com/tty")))
	if got := again.Held("c")["example.com/tty"]; len(got) != 1 || (got[0] != tty && got[0] != same) {
		t.Fatalf("c holds %v once a is gone, want %s or %s", got, tty, same)
	}
	// a comes back: its device is c's now.
	err = again.Admit(podAskingFor("a", "example.com/serial"))
	if !errors.Is(err, ErrOutOfResource) || !strings.Contains(err.Error(), "held by pod default/c-node1 as ") {
		t.Fatalf("a asking for the stick c holds as a tty: %v", err)
	}
}

// TestExclusiveGoneDevice: a held node that is gone keeps the number it
// was seen with, so a node that appears under another path with that
// number is still the holder's.
func TestExclusiveGoneDevice(t *testing.T) {
	dev := t.TempDir()
	first := filepath.Join(dev, "a", "tty0")
	second := filepath.Join(dev, "b", "tty0")
	for _, d := range []string{filepath.Dir(first), filepath.Dir(second)} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/dev/zero", first); err != nil {
		t.Fatal(err)
	}
	m, err := New(Config{Resources: []Resource{
		{Name: "example.com/a", Glob: filepath.Join(dev, "a", "*"), Access: "rw"},
		{Name: "example.com/b", Glob: filepath.Join(dev, "b", "*"), Access: "rw"},
	}, StateFile: filepath.Join(t.TempDir(), "allocations.json")})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Admit(podAskingFor("a", "example.com/a")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(first); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", second); err != nil {
		t.Fatal(err)
	}
	if err := m.Admit(podAskingFor("b", "example.com/b")); !errors.Is(err, ErrOutOfResource) || !strings.Contains(err.Error(), "held by pod default/a-node1 as "+first) {
		t.Fatalf("b asking for a's device under another path while a's path is gone: %v", err)
	}
}

func TestDeviceKey(t *testing.T) {
	tests := []struct {
		path, want string
		ok         bool
	}{
		{"/dev/null", "c 1:3", true},
		{"/dev/zero", "c 1:5", true},
		{"/", "", false},
		{"/nonexistent", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, ok := deviceKey(tt.path)
			if got != tt.want || ok != tt.ok {
				t.Errorf("deviceKey(%s) = %q, %v; want %q, %v", tt.path, got, ok, tt.want, tt.ok)
			}
		})
	}
	if got := deviceName("c 188:0"); got != "char device 188:0" {
		t.Errorf("deviceName = %q", got)
	}
}
