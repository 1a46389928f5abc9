package network

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"tug/internal/pod"
)

// nsfsMagic is the filesystem magic of a mounted namespace file.
const nsfsMagic = 0x6e736673

// kinds are the namespaces a pod sandbox pins, in the order they are pinned,
// with their unshare flag.
var kinds = []struct {
	name string
	flag int
}{
	{"net", unix.CLONE_NEWNET},
	{"ipc", unix.CLONE_NEWIPC},
	{"uts", unix.CLONE_NEWUTS},
}

// Namespaces creates, finds and removes pods' pinned namespaces under
// <runDir>/ns. It is safe for concurrent use for different pods; calls for
// the same pod must not overlap (the pod worker serialises them).
type Namespaces struct {
	dir string
	log *slog.Logger
	// nodeNet pins tug's own network namespace when it is not the init
	// process's ("" otherwise), for hostNetwork pods; see Init.
	nodeNet string
}

// NewNamespaces returns a Namespaces rooted at <runDir>/ns.
func NewNamespaces(runDir string, log *slog.Logger) *Namespaces {
	return &Namespaces{dir: filepath.Join(runDir, "ns"), log: log, nodeNet: filepath.Join(runDir, "node-net")}
}

// Init makes the namespace directory a shared mount (as `ip netns` does for
// /run/netns), so that when a pin is unmounted the unmount also reaches the
// copies in containers' mount namespaces and the namespace can really go.
//
// The node's network is the one tug runs in. When that is not the init
// process's (tug started in a network namespace of its own, as the
// end-to-end tests do), Init pins it at <runDir>/node-net, and hostNetwork
// pods join it there rather than the init process's, which runc would
// give them.
func (n *Namespaces) Init() error {
	if err := os.MkdirAll(n.dir, 0o700); err != nil {
		return fmt.Errorf("create namespace dir: %w", err)
	}
	if err := n.pinNodeNet(); err != nil {
		return err
	}
	err := unix.Mount("", n.dir, "none", unix.MS_SHARED|unix.MS_REC, "")
	if errors.Is(err, unix.EINVAL) { // not a mount point yet
		if err = unix.Mount(n.dir, n.dir, "none", unix.MS_BIND|unix.MS_REC, ""); err == nil {
			err = unix.Mount("", n.dir, "none", unix.MS_SHARED|unix.MS_REC, "")
		}
	}
	if err != nil {
		return fmt.Errorf("make %s a shared mount: %w", n.dir, err)
	}
	return nil
}

// EnsureNamespaces pins the pod's namespaces, or finds them pinned already.
// A hostNetwork pod shares the host's network and UTS namespaces (as in
// Kubernetes) and gets only its own IPC namespace; a hostIPC pod shares the
// host's IPC namespace.
func (n *Namespaces) EnsureNamespaces(_ context.Context, p *pod.Pod) (pod.Namespaces, error) {
	dir := filepath.Join(n.dir, p.Metadata.UID)
	path := func(kind string) string { return filepath.Join(dir, kind) }
	want := []string{"net", "uts"}
	if p.Spec.HostNetwork {
		want = nil
	}
	if !p.Spec.HostIPC {
		want = append(want, "ipc")
	}
	var missing []string
	for _, k := range want {
		if !pinned(path(k)) {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return pod.Namespaces{}, fmt.Errorf("create namespaces of pod %s: %w", p.FullName(), err)
		}
		if err := pin(dir, missing, p.Hostname()); err != nil {
			return pod.Namespaces{}, fmt.Errorf("create namespaces of pod %s: %w", p.FullName(), err)
		}
	}
	ns := pod.Namespaces{Net: n.nodeNet}
	if !p.Spec.HostIPC {
		ns.IPC = path("ipc")
	}
	if !p.Spec.HostNetwork {
		ns.Net, ns.UTS = path("net"), path("uts")
	}
	return ns, nil
}

// pinNodeNet pins tug's network namespace at n.nodeNet if it is not the
// init process's, and clears n.nodeNet otherwise.
func (n *Namespaces) pinNodeNet() error {
	own, init := nsID("/proc/self/ns/net"), nsID("/proc/1/ns/net")
	if own == init {
		n.nodeNet = ""
		return nil
	}
	if pinned(n.nodeNet) {
		if nsID(n.nodeNet) == own {
			return nil
		}
		if err := unix.Unmount(n.nodeNet, unix.MNT_DETACH); err != nil {
			return fmt.Errorf("unpin stale node network namespace: %w", err)
		}
	}
	f, err := os.OpenFile(n.nodeNet, os.O_CREATE|os.O_RDONLY, 0o400)
	if err != nil {
		return fmt.Errorf("pin node network namespace: %w", err)
	}
	f.Close()
	if err := unix.Mount("/proc/self/ns/net", n.nodeNet, "none", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("pin node network namespace at %s: %w", n.nodeNet, err)
	}
	n.log.Info("tug runs in a network namespace of its own: hostNetwork pods join it", "path", n.nodeNet)
	return nil
}

// nsID identifies the namespace a namespace file refers to ("" if it
// cannot be read).
func nsID(path string) string {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return ""
	}
	return fmt.Sprintf("%d:%d", st.Dev, st.Ino)
}

// RemoveNamespaces unpins and deletes every namespace of the pod. A pod with
// none is not an error.
func (n *Namespaces) RemoveNamespaces(_ context.Context, uid string) error {
	dir := filepath.Join(n.dir, uid)
	var errs []error
	for _, k := range kinds {
		p := filepath.Join(dir, k.name)
		if pinned(p) {
			if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
				errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
				continue
			}
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// List returns the UIDs of the pods that have a namespace directory.
func (n *Namespaces) List() ([]string, error) {
	entries, err := os.ReadDir(n.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	var uids []string
	for _, e := range entries {
		if e.IsDir() {
			uids = append(uids, e.Name())
		}
	}
	return uids, nil
}

// pinned reports whether path is a mounted namespace file.
func pinned(path string) bool {
	var st unix.Statfs_t
	return unix.Statfs(path, &st) == nil && st.Type == nsfsMagic
}

// pin creates new namespaces of the given kinds on a locked OS thread,
// bind-mounts them into dir, then moves the thread back into the namespaces
// it came from. Only when that worked is the thread unlocked for reuse;
// otherwise it stays locked and the Go runtime ends it with the goroutine.
// Going back matters even then: the runtime cannot end the process's main
// thread, which would otherwise stay in (and keep alive) the pod's
// namespaces.
func pin(dir string, names []string, hostname string) error {
	flags := 0
	for _, k := range kinds {
		for _, name := range names {
			if k.name == name {
				flags |= k.flag
			}
		}
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		origins, err := openOwn(names)
		if err != nil {
			runtime.UnlockOSThread() // nothing changed yet
			errc <- err
			return
		}
		err = pinOnThisThread(dir, names, flags, hostname)
		if restore(origins) {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// openOwn opens the calling thread's current namespaces of the given kinds.
func openOwn(names []string) ([]*os.File, error) {
	var files []*os.File
	for _, name := range names {
		f, err := os.Open(fmt.Sprintf("/proc/thread-self/ns/%s", name))
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			return nil, fmt.Errorf("open own %s namespace: %w", name, err)
		}
		files = append(files, f)
	}
	return files, nil
}

// restore moves the calling thread back into the given namespaces and
// closes them. It reports whether every move worked.
func restore(origins []*os.File) bool {
	ok := true
	for _, f := range origins {
		if err := unix.Setns(int(f.Fd()), 0); err != nil {
			ok = false
		}
		f.Close()
	}
	return ok
}

// ignoreRouterAdvertisements makes the links created from now on in the
// calling thread's network namespace (a new pod's eth0) act on no IPv6
// Router Advertisement: no route and no address from one. IPv6 itself stays
// on, for ::1 and programs that listen on [::]. A kernel without IPv6 has
// nothing to turn off.
func ignoreRouterAdvertisements() error {
	for _, key := range []string{"accept_ra", "autoconf"} {
		err := writeSysctl("net/ipv6/conf/default/"+key, "0")
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("turn %s off in the pod's network namespace: %w", key, err)
		}
	}
	return nil
}

func pinOnThisThread(dir string, names []string, flags int, hostname string) error {
	if err := unix.Unshare(flags); err != nil {
		return fmt.Errorf("unshare %s: %w", strings.Join(names, ","), err)
	}
	if flags&unix.CLONE_NEWUTS != 0 {
		if err := unix.Sethostname([]byte(hostname)); err != nil {
			return fmt.Errorf("set hostname %q: %w", hostname, err)
		}
	}
	if flags&unix.CLONE_NEWNET != 0 {
		if err := ignoreRouterAdvertisements(); err != nil {
			return err
		}
	}
	src := fmt.Sprintf("/proc/%d/task/%d/ns", os.Getpid(), unix.Gettid())
	for _, name := range names {
		target := filepath.Join(dir, name)
		f, err := os.OpenFile(target, os.O_CREATE|os.O_RDONLY, 0o400)
		if err != nil {
			return fmt.Errorf("create %s: %w", target, err)
		}
		f.Close()
		if err := unix.Mount(filepath.Join(src, name), target, "none", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("pin %s namespace at %s: %w", name, target, err)
		}
	}
	return nil
}
