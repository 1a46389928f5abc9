package devices

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"tags.cncf.io/container-device-interface/pkg/cdi"
	"tags.cncf.io/container-device-interface/pkg/parser"

	"tug/internal/atomicfile"
	"tug/internal/pod"
	"tug/internal/podplan"
	"tug/internal/specopts"
)

// DefaultCDISpecDirs are the CDI spec directories read by default, the
// CDI specification's.
var DefaultCDISpecDirs = []string{"/etc/cdi", "/var/run/cdi"}

// Config is what a Manager is built from.
type Config struct {
	// Resources are the node's declared device resources.
	Resources []Resource
	// CDISpecDirs are the CDI spec directories, watched for changes; none
	// means no CDI registry (a pod that asks for a CDI device fails to
	// start, a cdi: resource has no units).
	CDISpecDirs []string
	// StateFile is where the allocations are kept (required): a JSON file
	// under tug's root dir, rewritten atomically on every change.
	StateFile string
	// Log receives the CDI registry's errors; nil discards them.
	Log *slog.Logger
}

// Manager allocates the node's device units to pods, exclusively: each
// device is held by at most one pod, from its admission until Release (its
// removal), and the allocation is persisted so that a restarted tug
// gives a running pod the same units. Exclusivity is node-wide and keys on
// the device, not on the path naming it: a host device node is its type
// and number (st_rdev of the node the path leads to, symlinks followed),
// whichever resource, glob or path reaches it, so that
// /dev/serial/by-id/usb-X of one resource and /dev/ttyUSB0 of another are
// one device, given to one pod; a CDI device is its fully qualified name.
// A held node that is gone keeps the number it was last seen with (while
// tug runs; a restarted tug knows it by its path until it is back). A pod that asks for more units of a
// resource than are free is refused with *OutOfResource. Units are
// enumerated when asked for (globbed, or listed from the CDI registry), so
// a device that appears or vanishes changes the capacity at once. Safe for
// concurrent use.
//
// A pod holds the units of a resource as one set of max(sum of its app
// containers' asks, largest init container ask) units: init containers
// take theirs from the start of the set, app containers consecutive
// slices of it, as the kubelet's device manager lets init containers reuse
// what app containers get. A pod whose update asks for fewer keeps what it
// holds until it goes.
type Manager struct {
	cfg Config
	cdi *cdi.Cache // nil: no CDI registry

	mu   sync.Mutex
	held map[string]map[string][]string // pod UID → resource name → units
	// names are the names (namespace/name) of the pods that hold units,
	// by UID, for the refusal of a pod that asks for one of their devices.
	names map[string]string
	// seen is the device key each host device node path was last stat'ed
	// with: a held node that is gone keeps its number.
	seen map[string]string
	// damaged is set when StateFile could not be read: Restore rewrites it.
	damaged bool

	changes  chan struct{} // see Changes
	watching chan struct{} // closed by Run once it watches (tests set it)
}

// state is the StateFile's content.
type state struct {
	Pods  map[string]map[string][]string `json:"pods"`
	Names map[string]string              `json:"names,omitempty"`
}

// New loads the allocations of StateFile (none when it is missing) and
// opens the CDI registry of CDISpecDirs. A StateFile a power cut damaged
// (empty, NUL-filled, cut short, not the format) is logged (Warn, with
// its path) and read as no allocation: Restore then gives the running
// pods their devices back before any pod is admitted, and rewrites it.
func New(cfg Config) (*Manager, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	m := &Manager{cfg: cfg, held: map[string]map[string][]string{}, names: map[string]string{}, seen: map[string]string{}, changes: make(chan struct{}, 1)}
	data, err := os.ReadFile(cfg.StateFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("read device allocations: %w", err)
	default:
		var st state
		if err := json.Unmarshal(data, &st); err != nil {
			cfg.Log.Warn("device allocations damaged: rebuilt from the running pods", "file", cfg.StateFile, "err", err)
			m.damaged = true
		} else {
			if st.Pods != nil {
				m.held = st.Pods
			}
			if st.Names != nil {
				m.names = st.Names
			}
		}
	}
	if len(cfg.CDISpecDirs) > 0 {
		c, err := cdi.NewCache(cdi.WithSpecDirs(cfg.CDISpecDirs...), cdi.WithAutoRefresh(true))
		if err != nil && c == nil {
			return nil, fmt.Errorf("open CDI registry %v: %w", cfg.CDISpecDirs, err)
		}
		m.cdi = c
		m.logCDIErrors()
	}
	return m, nil
}

// Close stops watching the CDI spec directories.
func (m *Manager) Close() error {
	if m.cdi == nil {
		return nil
	}
	return m.cdi.Configure(cdi.WithAutoRefresh(false))
}

// logCDIErrors logs the spec files and directories the CDI registry could
// not read (a missing directory is not an error).
func (m *Manager) logCDIErrors() {
	if m.cfg.Log == nil {
		return
	}
	for file, errs := range m.cdi.GetErrors() {
		if errors.Is(errors.Join(errs...), fs.ErrNotExist) {
			continue
		}
		m.cfg.Log.Warn("CDI spec not usable", "file", file, "err", errors.Join(errs...))
	}
}

// Resources returns the declared resources (shared: do not modify).
func (m *Manager) Resources() []Resource { return m.cfg.Resources }

// Units returns the units of r present now, sorted: the host device nodes
// its glob matches (char and block devices only, symlinks followed), or
// the fully qualified names of the CDI devices of its kind but one named
// "all" (a vendor's spec, nvidia-ctk's, defines it as every device of the
// kind: it is not one more).
func (m *Manager) Units(r Resource) []string {
	if r.CDIKind != "" {
		if m.cdi == nil {
			return nil
		}
		var out []string
		for _, name := range m.cdi.ListDevices() {
			if strings.HasPrefix(name, r.CDIKind+"=") && name != r.CDIKind+"=all" {
				out = append(out, name)
			}
		}
		slices.Sort(out)
		return out
	}
	matches, _ := filepath.Glob(r.Glob) // the pattern is checked by ParseResource
	out := matches[:0]
	for _, p := range matches {
		if fi, err := os.Stat(p); err == nil && fi.Mode()&fs.ModeDevice != 0 {
			out = append(out, p)
		}
	}
	return out
}

// Capacity returns how many units of each declared resource are present.
func (m *Manager) Capacity() map[string]int {
	out := make(map[string]int, len(m.cfg.Resources))
	for _, r := range m.cfg.Resources {
		out[r.Name] = len(m.Units(r))
	}
	return out
}

// Held returns the units pod uid holds of each resource (a copy).
func (m *Manager) Held(uid string) map[string][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]string{}
	for name, units := range m.held[uid] {
		out[name] = slices.Clone(units)
	}
	return out
}

// resource returns the declared resource of that name.
func (m *Manager) resource(name string) (Resource, bool) {
	for _, r := range m.cfg.Resources {
		if r.Name == name {
			return r, true
		}
	}
	return Resource{}, false
}

// Admit allocates to p the units its containers ask for, or refuses it:
// an *OutOfResource for the first resource (by name) that has too few
// free units or is not declared. A unit is not free when another pod
// holds it, or holds the same device through another path or resource
// (the refusal then names that pod, its unit and its resource). A pod
// that holds enough already keeps what it holds; a refused pod gets
// nothing. The allocation is persisted before Admit returns nil.
func (m *Manager) Admit(p *pod.Pod) error {
	need := PodNeeds(p)
	if len(need) == 0 {
		return nil
	}
	uid := p.Metadata.UID
	podName := p.Metadata.Namespace + "/" + p.Metadata.Name
	m.mu.Lock()
	defer m.mu.Unlock()
	mine := m.held[uid]
	grant := map[string][]string{}
	var others map[string]holder // by device key; built once it is needed
	for _, name := range sortedKeys(need) {
		n := need[name]
		r, ok := m.resource(name)
		if !ok {
			return &OutOfResource{Name: name, Requested: n}
		}
		have := mine[name]
		if len(have) >= n {
			continue
		}
		if others == nil {
			others = m.heldByOthers(uid)
		}
		units := m.Units(r)
		used := m.takenByOthers(uid, name)
		var free []string
		var conflicts []Conflict
		for _, u := range units {
			if slices.Contains(have, u) {
				continue
			}
			h, taken := others[m.unitKey(r.CDIKind != "", u)]
			if !taken {
				free = append(free, u)
				continue
			}
			if !used[u] {
				used[u] = true
				conflicts = append(conflicts, Conflict{Unit: u, Device: deviceName(h.key),
					Pod: cmp.Or(m.names[h.uid], "with UID "+h.uid), HeldAs: h.unit, Resource: h.resource})
			}
		}
		if len(have)+len(free) < n {
			return &OutOfResource{Name: name, Requested: n, Used: len(used), Capacity: len(units), Conflicts: conflicts}
		}
		grant[name] = append(slices.Clone(have), free[:n-len(have)]...)
	}
	if len(grant) == 0 && (mine == nil || m.names[uid] == podName) {
		return nil
	}
	next := map[string][]string{}
	for name, units := range mine {
		next[name] = units
	}
	for name, units := range grant {
		next[name] = units
	}
	prevName, named := m.names[uid]
	m.held[uid] = next
	m.names[uid] = podName
	if err := m.save(); err != nil {
		if mine == nil {
			delete(m.held, uid)
		} else {
			m.held[uid] = mine
		}
		if named {
			m.names[uid] = prevName
		} else {
			delete(m.names, uid)
		}
		return err
	}
	return nil
}

// holder is a unit a pod holds, as heldByOthers finds it.
type holder struct {
	uid, resource, unit string
	key                 string // the device's key (unitKey)
}

// heldByOthers returns the units pods other than uid hold, by device key
// (m.mu held). Pods and resources are walked in order, so that a device
// two records give (a file edited by hand) names the same holder each
// time.
func (m *Manager) heldByOthers(uid string) map[string]holder {
	out := map[string]holder{}
	for _, other := range slices.Sorted(maps.Keys(m.held)) {
		if other == uid {
			continue
		}
		res := m.held[other]
		for _, name := range slices.Sorted(maps.Keys(res)) {
			r, declared := m.resource(name)
			for _, u := range res[name] {
				// A resource no longer declared: its units read as
				// what they look like, a path or a CDI name.
				isCDI := r.CDIKind != "" || (!declared && !strings.HasPrefix(u, "/"))
				k := m.unitKey(isCDI, u)
				if _, ok := out[k]; !ok {
					out[k] = holder{uid: other, resource: name, unit: u, key: k}
				}
			}
		}
	}
	return out
}

// unitKey is what exclusivity keys on for unit u (m.mu held): a CDI
// device's name; a host device node's type and number ("c 188:0"), or the
// number it was last seen with when it is gone, or its path when tug
// never saw it.
func (m *Manager) unitKey(isCDI bool, u string) string {
	if isCDI {
		return "cdi " + u
	}
	if k, ok := deviceKey(u); ok {
		m.seen[u] = k
		return k
	}
	if k, ok := m.seen[u]; ok {
		return k
	}
	return "path " + u
}

// deviceKey returns the type and number of the device node path leads to
// ("c 1:3", "b 8:0"), symlinks followed.
func deviceKey(path string) (string, bool) {
	fi, err := os.Stat(path)
	if err != nil || fi.Mode()&fs.ModeDevice == 0 {
		return "", false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", false
	}
	typ := "b"
	if fi.Mode()&fs.ModeCharDevice != 0 {
		typ = "c"
	}
	major, minor := majorMinor(uint64(st.Rdev)) // its type differs between architectures
	return typ + " " + strconv.FormatInt(major, 10) + ":" + strconv.FormatInt(minor, 10), true
}

// deviceName writes a device key for a person: "char device 1:3",
// "block device 8:0", the CDI device's name, the path.
func deviceName(key string) string {
	kind, rest, _ := strings.Cut(key, " ")
	switch kind {
	case "c":
		return "char device " + rest
	case "b":
		return "block device " + rest
	}
	return rest
}

// majorMinor splits a dev_t as glibc's major() and minor() do.
func majorMinor(rdev uint64) (major, minor int64) {
	return int64((rdev&0x00000000000fff00)>>8 | (rdev&0xfffff00000000000)>>32),
		int64((rdev&0x00000000000000ff)>>0 | (rdev&0x00000ffffff00000)>>12)
}

// takenByOthers returns the units of resource name that pods other than
// uid hold, by the name they hold them under.
func (m *Manager) takenByOthers(uid, name string) map[string]bool {
	out := map[string]bool{}
	for other, res := range m.held {
		if other == uid {
			continue
		}
		for _, u := range res[name] {
			out[u] = true
		}
	}
	return out
}

// Release frees what pod uid holds. Releasing a pod that holds nothing
// does nothing.
func (m *Manager) Release(uid string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	held, ok := m.held[uid]
	if !ok {
		return nil
	}
	name, named := m.names[uid]
	delete(m.held, uid)
	delete(m.names, uid)
	if err := m.save(); err != nil {
		m.held[uid] = held
		if named {
			m.names[uid] = name
		}
		return err
	}
	return nil
}

// save writes the allocations to StateFile durably (m.mu held):
// atomicfile.Write (temporary file, fsync, rename, fsync of the
// directory).
func (m *Manager) save() error {
	data, err := json.Marshal(state{Pods: m.held, Names: m.names})
	if err == nil {
		err = atomicfile.Write(m.cfg.StateFile, data, 0o600)
	}
	if err != nil {
		return fmt.Errorf("save device allocations %s: %w", m.cfg.StateFile, err)
	}
	return nil
}

// Restore records the devices the pods of tug's containers are given
// (pod UID → the device node paths and CDI device names its containers
// were created with, in the order of their creation), before any pod is
// admitted: a unit a container uses is its pod's unless StateFile gives
// it to another pod, so that a lost or damaged file never gives a running
// pod's device to another pod (a privileged container's spec lists every
// host device: the agent leaves those out). A path or name counts for the first declared resource
// whose glob matches it or whose CDI kind names it; others (a
// cdi.k8s.io/ annotation's devices, /dev/fuse of a privileged pod) hold
// nothing. Each holding StateFile did not record is logged (Warn, with
// its path); the file is rewritten when anything changed or it was
// damaged.
func (m *Manager) Restore(running map[string][]string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	changed := m.damaged
	uids := make([]string, 0, len(running))
	for uid := range running {
		uids = append(uids, uid)
	}
	slices.Sort(uids)
	for _, uid := range uids {
		found := map[string][]string{}
		for _, dev := range running[uid] {
			for _, r := range m.cfg.Resources {
				if !r.holds(dev) {
					continue
				}
				if !slices.Contains(found[r.Name], dev) {
					found[r.Name] = append(found[r.Name], dev)
				}
				break
			}
		}
		for _, name := range slices.Sorted(maps.Keys(found)) {
			have := m.held[uid][name]
			taken := m.takenByOthers(uid, name)
			next := slices.Clone(have)
			for _, u := range found[name] {
				switch {
				case slices.Contains(next, u):
				case taken[u]:
					// Two pods' containers name one unit, or the file
					// gives it to another pod: the file's word stands.
					m.cfg.Log.Warn("a running pod's device is recorded as another pod's: the record stands", "file", m.cfg.StateFile, "pod", uid, "resource", name, "unit", u)
				default:
					next = append(next, u)
				}
			}
			if len(next) == len(have) {
				continue
			}
			if m.held[uid] == nil {
				m.held[uid] = map[string][]string{}
			}
			m.held[uid][name] = next
			changed = true
			if !m.damaged {
				m.cfg.Log.Warn("devices of a running pod were not recorded: recorded", "file", m.cfg.StateFile, "pod", uid, "resource", name, "units", next)
			}
		}
	}
	if !changed {
		return nil
	}
	if err := m.save(); err != nil {
		return err
	}
	m.damaged = false
	return nil
}

// ContainerDevices returns what container c of p gets: the host device
// nodes of its glob resources and the CDI devices of its cdi: resources
// (its slice of what the pod holds), and the CDI devices the pod's
// cdi.k8s.io/ annotations name, which every container of the pod gets.
func (m *Manager) ContainerDevices(p *pod.Pod, c *pod.Container) ([]specopts.DeviceNode, []string, error) {
	_, annotated, err := cdi.ParseAnnotations(p.Metadata.Annotations)
	if err != nil {
		return nil, nil, fmt.Errorf("annotation %s*: %w", cdi.AnnotationPrefix, err)
	}
	slices.Sort(annotated)
	cdiNames := annotated
	var nodes []specopts.DeviceNode
	held := m.Held(p.Metadata.UID)
	for _, r := range m.cfg.Resources {
		from, n := containerSlice(p, c, r.Name)
		if n == 0 {
			continue
		}
		units := held[r.Name]
		if len(units) < from+n {
			return nil, nil, fmt.Errorf("container %s asks for %d %s, the pod holds %d", c.Name, n, r.Name, len(units))
		}
		for _, u := range units[from : from+n] {
			if r.CDIKind != "" {
				cdiNames = append(cdiNames, u)
				continue
			}
			node, err := deviceNode(u, r.Access)
			if err != nil {
				return nil, nil, err
			}
			nodes = append(nodes, node)
		}
	}
	return nodes, cdiNames, nil
}

// Name names the manager as one of the sync loop's hooks.
func (m *Manager) Name() string { return "devices" }

// Facts tells a pod's plan which devices of each of its containers are
// gone (f.GoneDevices, by container name) and whether any container was
// given one (f.HasDevices): a container whose device is gone waits for it
// instead of crash-looping.
func (m *Manager) Facts(p *pod.Pod, f *podplan.Facts) { f.AddDevices(p, m.Gone) }

// Gone returns the devices container c of p was given that are not
// present now, each as "UNIT of RESOURCE" ("/dev/ttyUSB0 of
// tug.io/serial"; a CDI device of an annotation is named alone), and
// whether c was given any device at all. A host device node is gone when
// its path is no device node any more (the USB stick was pulled); a CDI
// device when no spec declares it.
func (m *Manager) Gone(p *pod.Pod, c *pod.Container) (gone []string, has bool) {
	held := m.Held(p.Metadata.UID)
	for _, r := range m.cfg.Resources {
		from, n := containerSlice(p, c, r.Name)
		units := held[r.Name]
		if n == 0 || len(units) < from+n {
			continue
		}
		for _, u := range units[from : from+n] {
			has = true
			if !m.present(r, u) {
				gone = append(gone, u+" of "+r.Name)
			}
		}
	}
	_, annotated, err := cdi.ParseAnnotations(p.Metadata.Annotations)
	if err != nil {
		return gone, has // the container does not start: ContainerDevices says why
	}
	slices.Sort(annotated)
	for _, name := range annotated {
		has = true
		if _, _, dev, _ := parser.ParseQualifiedName(name); dev == "all" {
			continue
		}
		if m.cdi == nil || m.cdi.GetDevice(name) == nil {
			gone = append(gone, name)
		}
	}
	return gone, has
}

// present reports whether unit u of r is there now.
func (m *Manager) present(r Resource, u string) bool {
	if r.CDIKind != "" {
		return m.cdi != nil && m.cdi.GetDevice(u) != nil
	}
	fi, err := os.Stat(u)
	return err == nil && fi.Mode()&fs.ModeDevice != 0
}

// deviceNode reads the host device node at path.
func deviceNode(path, access string) (specopts.DeviceNode, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return specopts.DeviceNode{}, fmt.Errorf("device %s: %w", path, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || fi.Mode()&fs.ModeDevice == 0 {
		return specopts.DeviceNode{}, fmt.Errorf("device %s: not a device node", path)
	}
	typ := "b"
	if fi.Mode()&fs.ModeCharDevice != 0 {
		typ = "c"
	}
	mode := fi.Mode().Perm()
	uid, gid := st.Uid, st.Gid
	major, minor := majorMinor(uint64(st.Rdev)) // its type differs between architectures
	return specopts.DeviceNode{
		LinuxDevice: specs.LinuxDevice{
			Path: path, Type: typ,
			Major: major, Minor: minor,
			FileMode: &mode, UID: &uid, GID: &gid,
		},
		Access: access,
	}, nil
}

// InjectCDI applies the CDI devices names to s through the CDI registry.
// "vendor.com/class=all" stands for every device of that kind the registry
// has.
func (m *Manager) InjectCDI(s *specs.Spec, names []string) error {
	if m.cdi == nil {
		return fmt.Errorf("inject CDI devices %s: no CDI spec directories (--cdi-spec-dirs)", strings.Join(names, ", "))
	}
	var expanded []string
	for _, name := range names {
		vendor, class, dev, err := parser.ParseQualifiedName(name)
		if err != nil {
			return fmt.Errorf("CDI device %q: %w", name, err)
		}
		if dev != "all" || m.cdi.GetDevice(name) != nil {
			expanded = append(expanded, name)
			continue
		}
		for _, d := range m.cdi.ListDevices() {
			if strings.HasPrefix(d, vendor+"/"+class+"=") {
				expanded = append(expanded, d)
			}
		}
	}
	if _, err := m.cdi.InjectDevices(s, expanded...); err != nil {
		m.logCDIErrors()
		return fmt.Errorf("inject CDI devices: %w", err)
	}
	return nil
}

// PodNeeds returns how many units of each extended resource the pod asks
// for: max(sum over its app containers, the largest init container's).
// An extended resource is a name with a "/" outside the kubernetes.io
// domain; a container's ask is its limit, else its request.
func PodNeeds(p *pod.Pod) map[string]int {
	out := map[string]int{}
	for i := range p.Spec.Containers {
		for name, n := range containerNeeds(&p.Spec.Containers[i]) {
			out[name] += n
		}
	}
	for i := range p.Spec.InitContainers {
		for name, n := range containerNeeds(&p.Spec.InitContainers[i]) {
			out[name] = max(out[name], n)
		}
	}
	for name, n := range out {
		if n == 0 {
			delete(out, name)
		}
	}
	return out
}

// IsExtended reports whether name is an extended resource's: it has a
// "/" and is not in the kubernetes.io domain.
func IsExtended(name string) bool {
	domain, _, ok := strings.Cut(name, "/")
	return ok && domain != "kubernetes.io" && !strings.HasSuffix(domain, ".kubernetes.io")
}

// containerNeeds returns c's ask of each extended resource.
func containerNeeds(c *pod.Container) map[string]int {
	out := map[string]int{}
	for _, rl := range []pod.ResourceList{c.Resources.Requests, c.Resources.Limits} {
		for name, q := range rl {
			if IsExtended(string(name)) {
				out[string(name)] = int(q.MilliValue() / 1000) // the limit, read last, wins
			}
		}
	}
	return out
}

// containerSlice returns where c's units of resource name start in the
// pod's set, and how many it gets (container names are unique in a pod,
// init containers' included).
func containerSlice(p *pod.Pod, c *pod.Container, name string) (from, n int) {
	if slices.ContainsFunc(p.Spec.InitContainers, func(i pod.Container) bool { return i.Name == c.Name }) {
		return 0, containerNeeds(c)[name]
	}
	for i := range p.Spec.Containers {
		app := &p.Spec.Containers[i]
		if app.Name == c.Name {
			return from, containerNeeds(app)[name]
		}
		from += containerNeeds(app)[name]
	}
	return 0, 0
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
