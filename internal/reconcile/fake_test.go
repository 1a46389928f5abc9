package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"time"

	"tug/internal/pod"
	"tug/internal/podplan"
	"tug/internal/testutil"
)

// fakeRuntime holds containers in memory, like containerd would by labels.
// Init containers exit with initExit[name] as soon as they are waited for.
type fakeRuntime struct {
	mu         sync.Mutex
	containers []pod.RuntimeContainer
	initExit   map[string]int
	log        []string // "start NAME/ATTEMPT", "stop NAME/ATTEMPT", "remove NAME/ATTEMPT", "cleanup"
	nextPID    uint32
}

func (f *fakeRuntime) record(s string) { f.log = append(f.log, s) }

func (f *fakeRuntime) PodContainers(_ context.Context, uid string) ([]pod.RuntimeContainer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []pod.RuntimeContainer
	for _, c := range f.containers {
		if c.PodUID == uid {
			out = append(out, c)
		}
	}
	return out, nil
}

func (f *fakeRuntime) PreparePod(_ context.Context, _ *pod.Pod, sb pod.Sandbox) (pod.Sandbox, error) {
	return sb, nil
}

func (f *fakeRuntime) StartContainer(_ context.Context, p *pod.Pod, c *pod.Container, init bool, attempt int, sb pod.Sandbox, _ pod.LinuxResources) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextPID++
	id := fmt.Sprintf("%s_%s_%d", p.Metadata.Name, c.Name, attempt)
	f.containers = append(f.containers, pod.RuntimeContainer{
		ID: id, PodUID: p.Metadata.UID, Name: c.Name, Init: init, Attempt: attempt,
		SpecHash: pod.ContainerHash(p, c), State: pod.RunRunning, PID: f.nextPID, CgroupParent: sb.CgroupParent,
	})
	f.record(fmt.Sprintf("start %s/%d", c.Name, attempt))
	return id, nil
}

func (f *fakeRuntime) find(id string) *pod.RuntimeContainer {
	for i := range f.containers {
		if f.containers[i].ID == id {
			return &f.containers[i]
		}
	}
	return nil
}

func (f *fakeRuntime) WaitContainer(_ context.Context, id string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.find(id)
	if c == nil {
		return 0, fmt.Errorf("no container %s", id)
	}
	c.State, c.ExitCode = pod.RunExited, f.initExit[c.Name]
	return c.ExitCode, nil
}

// exit makes a running container exit with code, as a crash would.
func (f *fakeRuntime) exit(name string, code int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.containers {
		if c := &f.containers[i]; c.Name == name && c.State == pod.RunRunning {
			c.State, c.ExitCode = pod.RunExited, code
		}
	}
}

func (f *fakeRuntime) StopContainer(_ context.Context, id string, _ time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.find(id); c != nil && c.State == pod.RunRunning {
		c.State = pod.RunExited
		f.record(fmt.Sprintf("stop %s/%d", c.Name, c.Attempt))
	}
	return nil
}

func (f *fakeRuntime) RemoveContainer(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, c := range f.containers {
		if c.ID == id {
			f.containers = append(f.containers[:i], f.containers[i+1:]...)
			f.record(fmt.Sprintf("remove %s/%d", c.Name, c.Attempt))
			return nil
		}
	}
	return nil
}

func (f *fakeRuntime) CleanupPod(context.Context, *pod.Pod) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("cleanup")
	return nil
}

// running returns name -> PID of the running containers.
func (f *fakeRuntime) running() map[string]uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := map[string]uint32{}
	for _, c := range f.containers {
		if c.State == pod.RunRunning {
			m[c.Name] = c.PID
		}
	}
	return m
}

func (f *fakeRuntime) takeLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.log
	f.log = nil
	return l
}

// fakeSandbox remembers which pods have namespaces.
type fakeSandbox struct {
	mu   sync.Mutex
	pods map[string]bool
}

func (s *fakeSandbox) EnsureNamespaces(_ context.Context, p *pod.Pod) (pod.Namespaces, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pods == nil {
		s.pods = map[string]bool{}
	}
	s.pods[p.Metadata.UID] = true
	return pod.Namespaces{Net: "/run/tug/ns/" + p.Metadata.UID + "/net"}, nil
}

func (s *fakeSandbox) RemoveNamespaces(_ context.Context, uid string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pods, uid)
	return nil
}

func (s *fakeSandbox) List() ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var uids []string
	for uid := range s.pods {
		uids = append(uids, uid)
	}
	return uids, nil
}

func (s *fakeSandbox) has(uid string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pods[uid]
}

// fakeNetwork leases addresses from 10.0.0.2 up to limit pods (0: no
// limit) and remembers them by UID.
type fakeNetwork struct {
	mu     sync.Mutex
	leases map[string]netip.Addr
	limit  int
	refuse map[string]error // SetUp's error for a pod UID
}

func (n *fakeNetwork) SetUp(_ context.Context, p *pod.Pod, _ string) (netip.Addr, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.leases == nil {
		n.leases = map[string]netip.Addr{}
	}
	if err := n.refuse[p.Metadata.UID]; err != nil {
		return netip.Addr{}, fmt.Errorf("set up network of pod %s: %w", p.FullName(), err)
	}
	if ip, ok := n.leases[p.Metadata.UID]; ok {
		return ip, nil
	}
	if n.limit > 0 && len(n.leases) >= n.limit {
		return netip.Addr{}, fmt.Errorf("set up network of pod %s: %w", p.FullName(), errors.New("no free address"))
	}
	ip := netip.AddrFrom4([4]byte{10, 0, 0, byte(2 + len(n.leases))})
	n.leases[p.Metadata.UID] = ip
	return ip, nil
}

func (n *fakeNetwork) TearDown(_ context.Context, uid string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.leases, uid)
	return nil
}

func (n *fakeNetwork) List() ([]string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Collect(maps.Keys(n.leases)), nil
}

func (n *fakeNetwork) HostIP() netip.Addr { return netip.MustParseAddr("192.0.2.10") }

// fakeCgroups remembers which pods have a cgroup.
type fakeCgroups struct {
	mu    sync.Mutex
	pods  map[string]bool
	class string // the path element of the pods' QoS class ("" or "burstable/")
}

func (c *fakeCgroups) EnsurePod(_ context.Context, p *pod.Pod) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pods == nil {
		c.pods = map[string]bool{}
	}
	c.pods[p.Metadata.UID] = true
	return "/tugpods/" + c.class + "pod" + p.Metadata.UID, nil
}

func (c *fakeCgroups) Container(*pod.Pod, *pod.Container) pod.LinuxResources {
	return pod.LinuxResources{}
}

func (c *fakeCgroups) QOSClass(*pod.Pod) string { return "BestEffort" }

func (c *fakeCgroups) RemovePod(_ context.Context, uid string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pods, uid)
	return nil
}

func (c *fakeCgroups) List() ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Collect(maps.Keys(c.pods)), nil
}

// testPod builds a pod with the given init and app container names.
func testPod(policy pod.RestartPolicy, inits, apps []string) *pod.Pod {
	return testutil.Pod("web-node", testutil.WithUID("uid-web"), testutil.WithRestartPolicy(policy),
		testutil.WithInit(inits...), testutil.WithApps(apps...))
}

// newTestSyncer returns a syncer whose back-off never delays (Initial 0).
func newTestSyncer(rt Runtime, sb Sandbox) *podSyncer {
	return &podSyncer{rt: rt, sb: sb, net: &fakeNetwork{}, cg: &fakeCgroups{}, notes: &statusNotes{}, backoff: &podplan.CrashBackoff{Max: time.Minute, Reset: time.Hour}, now: time.Now,
		log: slog.New(slog.DiscardHandler)}
}
