package qos

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"tug/internal/pod"
)

// Config configures a Manager. The zero value works: every field documents
// its default.
type Config struct {
	// Root is the tree's root cgroup, relative to the hierarchy root
	// (--cgroup-root); default "tugpods". It may be nested ("tug/pods").
	Root string
	// Mount is where the cgroup filesystem is mounted; default
	// "/sys/fs/cgroup". runc resolves cgroupsPath below /sys/fs/cgroup, so
	// only tests point it elsewhere.
	Mount string
	// Reserved is subtracted from the node's capacity (online CPUs,
	// MemTotal) to give node allocatable, to which Root is capped
	// (--reserved cpu=500m,memory=256Mi); only cpu and memory count.
	// Default: nothing reserved, Root capped to the capacity, as the
	// kubelet does.
	Reserved pod.ResourceList
	// PodPidsLimit is each pod cgroup's pids.max (--pod-max-pids);
	// 0 or -1 (the zero value) means unlimited. The agent's default is
	// finite (config.DefaultPodMaxPids).
	PodPidsLimit int64
	// MemoryQoS sets memory.min and memory.high as the kubelet's MemoryQoS
	// feature does (--memory-qos). cgroup v2 only: on v1 it is ignored with
	// a warning. Default off.
	MemoryQoS bool
	// MinOOMScoreAdj is the lowest oom_score_adj the host lets tug give a
	// container: without CAP_SYS_RESOURCE nothing may go below the agent's
	// own, and runc fails to create a container that asks for less. Lower
	// kubelet values are raised to it (and this is logged once). The
	// default 0 keeps every container at 0 or above; -1000 disables the
	// clamp.
	MinOOMScoreAdj int
	// Log receives the manager's log; default: discarded.
	Log *slog.Logger
}

// Manager owns tug's QoS cgroup tree on the host (see the package doc).
// Its methods are safe for concurrent use. It remembers the pods passed to
// EnsurePod, and only those, to size the burstable cgroup: after a restart
// the sizes are right again once every pod has been ensured once.
type Manager struct {
	log       *slog.Logger
	lay       layout
	root      string // "/tugpods": relative to every hierarchy root
	pidsLimit int64  // -1: unlimited
	memoryQoS bool
	minOOM    int
	host      host
	allocCPU  int64 // millicores
	allocMem  int64 // bytes
	// ctrl maps "cpu", "memory" and "pids" to the directory of the
	// hierarchy that holds their files; a missing key is a controller
	// the host lacks (only pids may be missing).
	ctrl map[string]string
	// managed are the hierarchies tug creates its tree in: on v1 those of
	// cpu, cpuacct, memory and pids; on v2 the one hierarchy.
	managed []string
	// enable is what tug writes to cgroup.subtree_control on v2
	// ("+cpu +memory +pids").
	enable string

	clampOnce sync.Once

	mu      sync.Mutex // guards pods and classes, and serialises tree changes
	pods    map[string]*podState
	classes classValues // last written; zero: not written yet
}

// podState is what the Manager knows about one pod.
type podState struct {
	class   PodClass
	res     podResources
	want    settings // the pod cgroup's values
	applied bool     // want is in place (false: a write was deferred)
	stale   []string // the pod's cgroups in another class, to remove when empty
}

// classValues are the values of the root and class cgroups that depend on
// the pods.
type classValues struct {
	written          bool
	burstableShares  uint64
	burstableMemMin  int64 // MemoryQoS: sum of burstable memory requests
	guaranteedMemMin int64 // MemoryQoS: sum of guaranteed and burstable requests (on Root)
}

// New returns a Manager for the cgroup filesystem at cfg.Mount. It reads
// /proc/self/mountinfo to tell cgroup v2 (a cgroup2 mount at cfg.Mount)
// from v1 and hybrid hosts (v1 hierarchies in directories below it), and
// the node's capacity from /proc/meminfo and the online CPUs. It changes
// nothing on the host: Init does.
func New(cfg Config) (*Manager, error) {
	mounts, err := mountinfo.GetMounts(nil)
	if err != nil {
		return nil, fmt.Errorf("read mounts: %w", err)
	}
	h, err := readHost()
	if err != nil {
		return nil, err
	}
	return newManager(cfg, mounts, h)
}

// newManager is New with the mounts and the host given.
func newManager(cfg Config, mounts []*mountinfo.Info, h host) (*Manager, error) {
	m := &Manager{
		log:       cfg.Log,
		pidsLimit: cfg.PodPidsLimit,
		memoryQoS: cfg.MemoryQoS,
		minOOM:    cfg.MinOOMScoreAdj,
		host:      h,
		pods:      map[string]*podState{},
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	if cfg.Mount == "" {
		cfg.Mount = "/sys/fs/cgroup"
	}
	root, err := cleanRoot(cfg.Root)
	if err != nil {
		return nil, err
	}
	m.root = root
	if m.pidsLimit <= 0 {
		m.pidsLimit = -1
	}
	if m.minOOM < -1000 || m.minOOM > 1000 {
		return nil, fmt.Errorf("%w: oom_score_adj floor %d outside [-1000, 1000]", ErrInvalidConfig, m.minOOM)
	}
	m.allocCPU = h.milliCPU - reserved(cfg.Reserved, pod.ResourceCPU)
	m.allocMem = h.memory - toBytes(reserved(cfg.Reserved, pod.ResourceMemory))
	if h.pageSize > 0 {
		m.allocMem -= m.allocMem % h.pageSize // the kernel would round it down anyway
	}
	if m.allocCPU <= 0 || m.allocMem <= 0 {
		return nil, fmt.Errorf("%w: reserved %v leaves nothing of the node's %dm cpu and %d bytes of memory",
			ErrInvalidConfig, cfg.Reserved, h.milliCPU, h.memory)
	}

	m.lay, err = detect(cfg.Mount, mounts)
	if err != nil {
		return nil, err
	}
	if err := m.findControllers(); err != nil {
		return nil, err
	}
	if m.memoryQoS && m.lay.version == 1 {
		m.log.Warn("qos: --memory-qos needs cgroup v2; ignored on this cgroup v1 host")
		m.memoryQoS = false
	}
	m.log.Info("qos: cgroup tree", "version", m.lay.version, "root", m.root,
		"hierarchies", m.managed, "allocatableMilliCPU", m.allocCPU, "allocatableMemory", m.allocMem)
	return m, nil
}

// findControllers fills ctrl, managed and enable from the layout.
func (m *Manager) findControllers() error {
	m.ctrl = map[string]string{}
	if m.lay.version == 2 {
		data, err := os.ReadFile(filepath.Join(m.lay.unified, "cgroup.controllers"))
		if err != nil {
			return fmt.Errorf("read cgroup v2 controllers: %w", err)
		}
		available := strings.Fields(string(data))
		var enable []string
		for _, c := range []string{"cpu", "memory", "pids"} {
			if slices.Contains(available, c) {
				m.ctrl[c] = m.lay.unified
				enable = append(enable, "+"+c)
			}
		}
		m.enable = strings.Join(enable, " ")
		m.managed = []string{m.lay.unified}
	} else {
		for _, c := range []string{"cpu", "cpuacct", "memory", "pids"} {
			dir, ok := m.lay.v1[c]
			if !ok {
				continue
			}
			if c != "cpuacct" {
				m.ctrl[c] = dir
			}
			if !slices.Contains(m.managed, dir) {
				m.managed = append(m.managed, dir)
			}
		}
	}
	for _, c := range []string{"cpu", "memory"} {
		if m.ctrl[c] == "" {
			return fmt.Errorf("%w: %s (cgroup v%d)", ErrMissingController, c, m.lay.version)
		}
	}
	if m.pidsLimit > 0 && m.ctrl["pids"] == "" {
		return fmt.Errorf("%w: pids, needed for the pod process limit %d (--pod-max-pids -1 runs pods without one)", ErrMissingController, m.pidsLimit)
	}
	return nil
}

// cleanRoot turns --cgroup-root into "/a/b", refusing paths that leave the
// hierarchy.
func cleanRoot(root string) (string, error) {
	root = strings.Trim(root, "/")
	if root == "" {
		root = "tugpods"
	}
	for el := range strings.SplitSeq(root, "/") {
		if el == "" || el == "." || el == ".." {
			return "", fmt.Errorf("%w: cgroup root %q", ErrInvalidConfig, root)
		}
	}
	return "/" + root, nil
}

// reserved returns the reservation of a resource in thousandths.
func reserved(l pod.ResourceList, name pod.ResourceName) int64 {
	if q, ok := l[name]; ok && q.MilliValue() > 0 {
		return q.MilliValue()
	}
	return 0
}

// checkUID refuses UIDs that cannot be a directory name.
func checkUID(uid string) error {
	if uid == "" || uid == "." || uid == ".." || strings.ContainsAny(uid, "/\x00") {
		return fmt.Errorf("%w: %q", ErrInvalidUID, uid)
	}
	return nil
}

// Version returns the cgroup version: 2 on a unified host, 1 on a v1 or
// hybrid host.
func (m *Manager) Version() int { return m.lay.version }

// QOSClass returns the pod's QoS class as the status reports it
// ("Guaranteed", "Burstable" or "BestEffort").
func (m *Manager) QOSClass(p *pod.Pod) string { return string(Class(p)) }

// classDir returns the cgroup of a QoS class, relative to the hierarchy
// root: Root itself for Guaranteed pods.
func (m *Manager) classDir(c PodClass) string {
	switch c {
	case Burstable:
		return m.root + "/burstable"
	case BestEffort:
		return m.root + "/besteffort"
	}
	return m.root
}

// podDir returns a pod's cgroup in class c, relative to the hierarchy root.
func (m *Manager) podDir(c PodClass, uid string) string {
	return m.classDir(c) + "/pod" + uid
}

// Init creates the tree's fixed part in every hierarchy tug uses: Root,
// Root/burstable and Root/besteffort. Root is capped to node allocatable as
// the kubelet caps its kubepods cgroup (cpu shares of the allocatable
// millicores, memory limit = allocatable memory); besteffort gets
// MinShares; burstable gets the shares of the burstable pods known so far.
// On cgroup v2 it enables the cpu, memory and pids controllers in
// cgroup.subtree_control from the hierarchy root down to the class
// cgroups. Init is idempotent; call it once at start, before EnsurePod.
func (m *Manager) Init(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, dir := range []string{m.classDir(Burstable), m.classDir(BestEffort)} {
		if err := m.mkdir(dir); err != nil {
			return err
		}
	}
	if m.lay.version == 2 {
		// Top-down: a controller can be enabled only where the parent
		// has it enabled too.
		dirs := []string{"/"}
		for i := 1; i < len(m.root); i++ {
			if m.root[i] == '/' {
				dirs = append(dirs, m.root[:i])
			}
		}
		dirs = append(dirs, m.root, m.classDir(Burstable), m.classDir(BestEffort))
		for _, dir := range dirs {
			if err := m.enableControllers(dir); err != nil {
				return err
			}
		}
	}
	root := settings{shares: MilliCPUToShares(m.allocCPU), memory: m.allocMem}
	if err := m.write(m.root, root.files(m)); err != nil {
		return err
	}
	if err := m.write(m.classDir(BestEffort), settings{shares: MinShares}.files(m)); err != nil {
		return err
	}
	m.classes = classValues{}
	return m.writeClasses()
}

// EnsurePod creates or updates p's pod cgroup, Root/[burstable/|besteffort/]pod<uid>,
// with the pod-level values of the kubelet's ResourceConfigForPod (cpu
// shares of the pod's cpu requests; a cpu quota and a memory limit when
// every container, init containers included, has a limit for them, always
// for a Guaranteed pod; MinShares for a BestEffort pod; pids.max from
// Config.PodPidsLimit; memory.min under MemoryQoS), and updates the
// burstable cgroup's shares from the burstable pods it knows. It returns
// the pod cgroup's path relative to the hierarchy root, e.g.
// "/tugpods/burstable/pod<uid>": the parent of the pod's containers' OCI
// cgroupsPath. Init must have run.
//
// It is meant to be called on every sync: when nothing changed it only
// checks that the cgroup still exists. Values that go back to unlimited are
// written as such ("max", -1).
//
// On cgroup v1 the kernel refuses to lower a pod's cpu quota below that of
// a running container, or its memory limit below its usage. Such a write
// is deferred, not an error: EnsurePod logs a warning, returns the path,
// and retries on the next call, which succeeds once the caller has
// recreated the container whose limits changed.
//
// A class change (an edited manifest, same UID, that moves the pod to
// another class) creates the pod cgroup in its new class; the old one is
// removed as soon as it is empty, on this or a later EnsurePod, or by
// RemovePod. Containers whose spec hash did not change keep running in the
// old cgroup, under the old pod-level values, until they are recreated: a
// caller that wants the whole pod moved at once recreates every container
// of a pod whose Class changed. (Kubernetes never meets this case: there a
// pod's QoS class is immutable.)
func (m *Manager) EnsurePod(ctx context.Context, p *pod.Pod) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	uid := p.Metadata.UID
	if err := checkUID(uid); err != nil {
		return "", err
	}
	class := Class(p)
	res := resourcesOf(p)
	want := m.podSettings(class, res)
	dir := m.podDir(class, uid)

	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.pods[uid]
	if old != nil && old.class == class && old.applied && old.want == want && len(old.stale) == 0 && m.exists(dir) {
		old.res = res
		return dir, nil
	}
	if err := m.mkdir(dir); err != nil {
		return "", err
	}
	if m.lay.version == 2 {
		if err := m.enableControllers(dir); err != nil {
			return "", err
		}
	}
	deferred, err := m.writeDeferrable(dir, want.files(m))
	if err != nil {
		return "", err
	}
	st := &podState{class: class, res: res, want: want, applied: deferred == nil}
	log := m.log.With("pod", p.FullName(), "uid", uid)
	if deferred != nil && (old == nil || old.applied || old.want != want) {
		log.Warn("qos: pod cgroup update deferred until its containers are recreated", "cgroup", dir, "err", deferred)
	} else if deferred != nil {
		log.Debug("qos: pod cgroup update still deferred", "cgroup", dir, "err", deferred)
	} else if old != nil && !old.applied {
		log.Info("qos: deferred pod cgroup update applied", "cgroup", dir)
	}
	for _, c := range []PodClass{Guaranteed, Burstable, BestEffort} {
		if c == class {
			continue
		}
		other := m.podDir(c, uid)
		if !m.existsAnywhere(other) {
			continue
		}
		if err := m.removeTree(other); err != nil {
			st.stale = append(st.stale, other)
			if old == nil || !slices.Contains(old.stale, other) {
				log.Info("qos: pod changed QoS class; its old cgroup stays until its containers are gone",
					"cgroup", dir, "old", other, "err", err)
			}
			continue
		}
		log.Info("qos: pod changed QoS class; old cgroup removed", "cgroup", dir, "old", other)
	}
	m.pods[uid] = st
	if err := m.writeClasses(); err != nil {
		return "", err
	}
	return dir, nil
}

// podSettings returns a pod cgroup's values (ResourceConfigForPod).
func (m *Manager) podSettings(class PodClass, r podResources) settings {
	s := settings{shares: MilliCPUToShares(r.cpuRequest), quota: -1, memory: -1, pids: m.pidsLimit}
	switch class {
	case Guaranteed:
		r.cpuLimited, r.memLimited = true, true
	case BestEffort:
		s.shares = MinShares
		r.cpuLimited, r.memLimited = false, false
	}
	if r.cpuLimited && r.cpuLimit > 0 {
		s.quota = MilliCPUToQuota(r.cpuLimit, QuotaPeriod)
	}
	if r.memLimited && r.memLimit > 0 {
		s.memory = r.memLimit
	}
	if m.memoryQoS {
		s.memoryMin = r.memRequest
		s.setMemoryMin = true
	}
	return s
}

// writeClasses brings the burstable cgroup's shares (the kubelet's
// setCPUCgroupConfig: the shares of the summed cpu requests of the
// burstable pods) and, under MemoryQoS, the memory.min of burstable (its
// pods' memory requests) and Root (those of guaranteed and burstable pods,
// the kubelet's setMemoryQoS) up to date with the known pods. It writes
// only what changed.
func (m *Manager) writeClasses() error {
	var cpu, bmem, gmem int64
	for _, st := range m.pods {
		switch st.class {
		case Burstable:
			cpu = addSat(cpu, st.res.cpuRequest)
			bmem = addSat(bmem, st.res.memRequest)
		case Guaranteed:
			gmem = addSat(gmem, st.res.memRequest)
		}
	}
	want := classValues{written: true, burstableShares: MilliCPUToShares(cpu)}
	if m.memoryQoS {
		want.burstableMemMin = bmem
		want.guaranteedMemMin = addSat(gmem, bmem)
	}
	have := m.classes
	if want.burstableShares != have.burstableShares || !have.written {
		if err := m.write(m.classDir(Burstable), settings{shares: want.burstableShares}.files(m)); err != nil {
			return err
		}
	}
	if m.memoryQoS && (want.burstableMemMin != have.burstableMemMin || !have.written) {
		s := settings{memoryMin: want.burstableMemMin, setMemoryMin: true}
		if err := m.write(m.classDir(Burstable), s.files(m)); err != nil {
			return err
		}
	}
	if m.memoryQoS && (want.guaranteedMemMin != have.guaranteedMemMin || !have.written) {
		s := settings{memoryMin: want.guaranteedMemMin, setMemoryMin: true}
		if err := m.write(m.root, s.files(m)); err != nil {
			return err
		}
	}
	m.classes = want
	return nil
}

// Container returns the cgroup values and OOM score of container c of pod
// p, for its OCI spec: the kubelet's container resources
// (calculateLinuxResources in kuberuntime_container_linux.go): cpu shares
// of the cpu request (MinShares without one), a CFS quota with a 100 ms
// period for a cpu limit, the memory limit in bytes; on cgroup v2
// memory.oom.group=1 (the kubelet's default there: an OOM kill takes the
// whole container) and, under MemoryQoS, memory.min (the request) and
// memory.high (MemoryHigh). The OOM score is OOMScoreAdj, raised to
// Config.MinOOMScoreAdj if lower (logged once per Manager). c may be an app
// or an init container. It reads no files.
func (m *Manager) Container(p *pod.Pod, c *pod.Container) pod.LinuxResources {
	class := Class(p)
	r := pod.LinuxResources{CPUShares: MilliCPUToShares(request(c, pod.ResourceCPU))}
	if q := MilliCPUToQuota(limit(c, pod.ResourceCPU), QuotaPeriod); q > 0 {
		r.CPUQuota = q
		r.CPUPeriod = QuotaPeriod
	}
	memReq := toBytes(max(request(c, pod.ResourceMemory), 0))
	memLim := toBytes(max(limit(c, pod.ResourceMemory), 0))
	r.MemoryLimit = memLim
	adj := OOMScoreAdj(class, memReq, m.host.memory)
	if adj < m.minOOM {
		m.clampOnce.Do(func() {
			m.log.Warn("qos: oom_score_adj raised to the lowest value this host allows (no CAP_SYS_RESOURCE); Guaranteed and Burstable containers are less protected from the OOM killer than on a kubelet",
				"pod", p.FullName(), "uid", p.Metadata.UID, "container", c.Name, "kubelet", adj, "floor", m.minOOM)
		})
		adj = m.minOOM
	}
	r.OOMScoreAdj = &adj
	if m.lay.version == 2 {
		r.Unified = map[string]string{"memory.oom.group": "1"}
		if m.memoryQoS {
			if memReq > 0 {
				r.Unified["memory.min"] = strconv.FormatInt(memReq, 10)
			}
			if high := MemoryHigh(memReq, memLim, m.allocMem, m.host.pageSize); high > 0 {
				r.Unified["memory.high"] = strconv.FormatInt(high, 10)
			}
		}
	}
	return r
}

// RemovePod removes the pod cgroup of uid, in whichever class it is, from
// every hierarchy below Config.Mount, with every cgroup below it (container
// cgroups runc left behind), deepest first. On a hybrid host that includes
// the name=systemd and the unified hierarchies, where runc creates each
// container's cgroup too. A cgroup that does not exist is not an error; one
// that still has processes is (ErrBusy): stop the pod's containers first.
// The pod no longer counts for the burstable cgroup's shares.
func (m *Manager) RemovePod(ctx context.Context, uid string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkUID(uid); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for _, c := range []PodClass{Guaranteed, Burstable, BestEffort} {
		if err := m.removeTree(m.podDir(c, uid)); err != nil {
			errs = append(errs, err)
		}
	}
	delete(m.pods, uid)
	if m.classes.written {
		if err := m.writeClasses(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// List returns the UIDs of every pod cgroup (pod<uid>) below Root, in any
// class and any hierarchy, sorted, each once: the input of orphan removal
// at start. The slice belongs to the caller.
func (m *Manager) List() ([]string, error) {
	seen := map[string]bool{}
	for _, h := range m.lay.all {
		for _, c := range []PodClass{Guaranteed, Burstable, BestEffort} {
			entries, err := os.ReadDir(filepath.Join(h, m.classDir(c)))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("list pod cgroups: %w", err)
			}
			for _, e := range entries {
				if uid, ok := strings.CutPrefix(e.Name(), "pod"); ok && e.IsDir() && uid != "" {
					seen[uid] = true
				}
			}
		}
	}
	uids := make([]string, 0, len(seen))
	for uid := range seen {
		uids = append(uids, uid)
	}
	slices.Sort(uids)
	return uids, nil
}

// mkdir creates dir (relative to the hierarchy root) in every managed
// hierarchy.
func (m *Manager) mkdir(dir string) error {
	for _, h := range m.managed {
		if err := os.MkdirAll(filepath.Join(h, dir), 0o755); err != nil {
			return fmt.Errorf("create cgroup: %w", err)
		}
	}
	return nil
}

// exists reports whether dir exists in every managed hierarchy.
func (m *Manager) exists(dir string) bool {
	for _, h := range m.managed {
		if _, err := os.Stat(filepath.Join(h, dir)); err != nil {
			return false
		}
	}
	return true
}

// existsAnywhere reports whether dir exists in any hierarchy.
func (m *Manager) existsAnywhere(dir string) bool {
	for _, h := range m.lay.all {
		if _, err := os.Stat(filepath.Join(h, dir)); err == nil {
			return true
		}
	}
	return false
}

// enableControllers enables tug's controllers for dir's children (v2).
func (m *Manager) enableControllers(dir string) error {
	if m.enable == "" {
		return nil
	}
	p := filepath.Join(m.lay.unified, dir, "cgroup.subtree_control")
	if err := os.WriteFile(p, []byte(m.enable), 0o644); err != nil {
		return fmt.Errorf("enable controllers %q: %w", m.enable, err)
	}
	return nil
}

// removeTree removes dir and every cgroup below it, deepest first, in every
// hierarchy.
func (m *Manager) removeTree(dir string) error {
	var errs []error
	for _, h := range m.lay.all {
		var dirs []string
		var walk func(string) error
		walk = func(d string) error {
			entries, err := os.ReadDir(d)
			if err != nil {
				return err
			}
			dirs = append(dirs, d)
			for _, e := range entries {
				if e.IsDir() {
					if err := walk(filepath.Join(d, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
						return err
					}
				}
			}
			return nil
		}
		if err := walk(filepath.Join(h, dir)); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("remove cgroup: %w", err))
			}
			continue
		}
		for _, d := range slices.Backward(dirs) { // a parent precedes its children
			if err := rmdir(d); err != nil {
				errs = append(errs, err)
				break
			}
		}
	}
	return errors.Join(errs...)
}

// rmdir removes one cgroup. A cgroup with processes gives ErrBusy. A
// directory on another filesystem than cgroupfs (a test's stand-in) holds
// plain files where cgroupfs has its control files; those are removed
// first.
func rmdir(d string) error {
	err := unix.Rmdir(d)
	if err == unix.ENOTEMPTY && !onCgroupfs(d) {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if e.Type().IsRegular() {
				_ = os.Remove(filepath.Join(d, e.Name()))
			}
		}
		err = unix.Rmdir(d)
	}
	switch {
	case err == nil || err == unix.ENOENT:
		return nil
	case err == unix.EBUSY:
		return fmt.Errorf("%w: remove %s: %w", ErrBusy, d, err)
	}
	return fmt.Errorf("remove cgroup %s: %w", d, err)
}

// onCgroupfs reports whether d is on a cgroup (v1 or v2) filesystem.
func onCgroupfs(d string) bool {
	var st unix.Statfs_t
	if unix.Statfs(d, &st) != nil {
		return true // unknown: never unlink anything
	}
	return st.Type == unix.CGROUP_SUPER_MAGIC || st.Type == unix.CGROUP2_SUPER_MAGIC
}

// settings are the values tug writes into one of its cgroups. A zero field
// is left alone; -1 means unlimited.
type settings struct {
	shares       uint64 // cpu.shares; cpu.weight on v2 (SharesToWeight)
	quota        int64  // CFS quota in µs per QuotaPeriod
	memory       int64  // bytes
	pids         int64
	memoryMin    int64 // bytes, v2 only, written when setMemoryMin
	setMemoryMin bool
}

// file is one write: a controller's file and its new content.
type file struct {
	ctrl, name, value string
}

// files returns the writes for s in m's cgroup version, in a safe order.
func (s settings) files(m *Manager) []file {
	var f []file
	v2 := m.lay.version == 2
	if s.shares != 0 {
		if v2 {
			f = append(f, file{"cpu", "cpu.weight", strconv.FormatUint(SharesToWeight(s.shares), 10)})
		} else {
			f = append(f, file{"cpu", "cpu.shares", strconv.FormatUint(s.shares, 10)})
		}
	}
	if s.quota != 0 {
		switch {
		case v2 && s.quota < 0:
			f = append(f, file{"cpu", "cpu.max", "max " + strconv.Itoa(QuotaPeriod)})
		case v2:
			f = append(f, file{"cpu", "cpu.max", strconv.FormatInt(s.quota, 10) + " " + strconv.Itoa(QuotaPeriod)})
		default:
			f = append(f, file{"cpu", "cpu.cfs_period_us", strconv.Itoa(QuotaPeriod)},
				file{"cpu", "cpu.cfs_quota_us", strconv.FormatInt(max(s.quota, -1), 10)})
		}
	}
	if s.memory != 0 {
		switch {
		case v2 && s.memory < 0:
			f = append(f, file{"memory", "memory.max", "max"})
		case v2:
			f = append(f, file{"memory", "memory.max", strconv.FormatInt(s.memory, 10)})
		default:
			f = append(f, file{"memory", "memory.limit_in_bytes", strconv.FormatInt(max(s.memory, -1), 10)})
		}
	}
	if s.setMemoryMin && v2 {
		f = append(f, file{"memory", "memory.min", strconv.FormatInt(max(s.memoryMin, 0), 10)})
	}
	if s.pids != 0 && m.ctrl["pids"] != "" {
		v := "max"
		if s.pids > 0 {
			v = strconv.FormatInt(s.pids, 10)
		}
		f = append(f, file{"pids", "pids.max", v})
	}
	return f
}

// write writes files into dir; any failure is an error.
func (m *Manager) write(dir string, files []file) error {
	deferred, err := m.writeDeferrable(dir, files)
	if err == nil {
		err = deferred
	}
	return err
}

// writeDeferrable writes files into dir. A write the kernel refuses only
// because of what runs below dir on cgroup v1 (a cpu quota below a child's:
// EINVAL; a memory limit below the usage: EBUSY) does not stop the others
// and is returned as deferred; any other failure is err.
func (m *Manager) writeDeferrable(dir string, files []file) (deferred, err error) {
	var later []error
	for _, f := range files {
		h := m.ctrl[f.ctrl]
		if h == "" {
			continue
		}
		p := filepath.Join(h, dir, f.name)
		werr := os.WriteFile(p, []byte(f.value), 0o644)
		if werr == nil {
			continue
		}
		werr = fmt.Errorf("set %s to %s: %w", path.Join(dir, f.name), f.value, werr)
		if m.lay.version == 1 && ((f.name == "cpu.cfs_quota_us" && errors.Is(werr, unix.EINVAL)) ||
			(f.name == "memory.limit_in_bytes" && errors.Is(werr, unix.EBUSY))) {
			later = append(later, werr)
			continue
		}
		return nil, werr
	}
	return errors.Join(later...), nil
}
