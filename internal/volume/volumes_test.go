package volume

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"tug/internal/pod"
	"tug/internal/testutil"
)

func testManager(t *testing.T) *Manager {
	t.Helper()
	return New(Config{RootDir: filepath.Join(t.TempDir(), "root")})
}

func TestPrepareHostPath(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	missing := filepath.Join(dir, "missing")

	tests := []struct {
		name    string
		path    string
		typ     pod.HostPathType
		wantErr bool
		check   func(t *testing.T, path string)
	}{
		{name: "unset, missing", path: missing, typ: pod.HostPathUnset},
		{name: "Directory ok", path: dir, typ: pod.HostPathDirectory},
		{name: "Directory missing", path: missing, typ: pod.HostPathDirectory, wantErr: true},
		{name: "Directory is a file", path: file, typ: pod.HostPathDirectory, wantErr: true},
		{name: "DirectoryOrCreate creates", path: filepath.Join(dir, "a", "b"), typ: pod.HostPathDirectoryOrCreate, check: func(t *testing.T, p string) {
			if fi, err := os.Stat(p); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o755 {
				t.Errorf("created %v, %v", fi, err)
			}
		}},
		{name: "DirectoryOrCreate on a file", path: file, typ: pod.HostPathDirectoryOrCreate, wantErr: true},
		{name: "FileOrCreate creates", path: filepath.Join(dir, "new"), typ: pod.HostPathFileOrCreate, check: func(t *testing.T, p string) {
			if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
				t.Errorf("created %v, %v", fi, err)
			}
		}},
		{name: "FileOrCreate needs the parent", path: filepath.Join(missing, "f"), typ: pod.HostPathFileOrCreate, wantErr: true},
		{name: "FileOrCreate on a directory", path: dir, typ: pod.HostPathFileOrCreate, wantErr: true},
		{name: "File ok", path: file, typ: pod.HostPathFile},
		{name: "File is a directory", path: dir, typ: pod.HostPathFile, wantErr: true},
		{name: "File missing", path: missing, typ: pod.HostPathFile, wantErr: true},
		{name: "Socket ok", path: sock, typ: pod.HostPathSocket},
		{name: "Socket is a file", path: file, typ: pod.HostPathSocket, wantErr: true},
		{name: "CharDevice ok", path: "/dev/null", typ: pod.HostPathCharDev},
		{name: "CharDevice is a file", path: file, typ: pod.HostPathCharDev, wantErr: true},
		{name: "BlockDevice is a char device", path: "/dev/null", typ: pod.HostPathBlockDev, wantErr: true},
		{name: "unknown type", path: dir, typ: "Weird", wantErr: true},
		{name: "relative path", path: "rel", typ: pod.HostPathDirectory, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := prepareHostPath(&pod.HostPathVolumeSource{Path: tt.path, Type: tt.typ})
			if tt.wantErr {
				if !errors.Is(err, ErrHostPathType) {
					if err == nil || tt.typ != pod.HostPathFileOrCreate {
						t.Fatalf("err = %v, want ErrHostPathType", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.check != nil {
				tt.check(t, tt.path)
			}
		})
	}
}

func TestOpenBeneath(t *testing.T) {
	for _, noOpenat2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("noOpenat2=%v", noOpenat2), func(t *testing.T) {
			root := t.TempDir()
			outside := t.TempDir()
			mustDo(t, os.Symlink(outside, filepath.Join(root, "escape")))
			mustDo(t, os.Symlink("/", filepath.Join(root, "slash")))
			mustDo(t, os.Mkdir(filepath.Join(root, "in"), 0o755))
			mustDo(t, os.Symlink("in", filepath.Join(root, "link-in")))
			mustDo(t, os.Symlink("in", filepath.Join(root, "in", "loop")))
			mustDo(t, os.WriteFile(filepath.Join(root, "in", "file"), []byte("x"), 0o644))
			tests := []struct {
				name    string
				sub     string
				want    string // below root
				wantDir bool
				wantErr string // in the error text; ErrInvalidSubPath unless "!"
			}{
				{name: "missing components are created", sub: "a/b", want: "a/b", wantDir: true},
				{name: "existing dir", sub: "in", want: "in", wantDir: true},
				{name: "dot components", sub: "./in/.", want: "in", wantDir: true},
				{name: "file", sub: "in/file", want: "in/file"},
				{name: "empty is the root", sub: "", want: "", wantDir: true},
				{name: "absolute", sub: "/etc", wantErr: "absolute"},
				{name: "dotdot", sub: "../x", wantErr: `".."`},
				{name: "dotdot inside", sub: "a/../../x", wantErr: `".."`},
				{name: "dotdot that stays inside", sub: "in/../in", wantErr: `".."`},
				{name: "symlink out", sub: "escape", wantErr: "symlink"},
				{name: "symlink to root", sub: "slash", wantErr: "symlink"},
				{name: "symlink out then deeper", sub: "escape/deeper", wantErr: "symlink"},
				{name: "symlink inside the volume", sub: "link-in", wantErr: "symlink"},
				{name: "symlink as the last component", sub: "in/loop", wantErr: "symlink"},
				{name: "file as a directory", sub: "in/file/x", wantErr: "not a directory"},
			}
			rootFd, err := openRoot(root)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(rootFd)
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					fd, err := openBeneath(rootFd, tt.sub, noOpenat2)
					if tt.wantErr != "" {
						if err == nil {
							unix.Close(fd)
						}
						if !errors.Is(err, ErrInvalidSubPath) || !strings.Contains(err.Error(), tt.wantErr) {
							t.Fatalf("openBeneath(%q) = %v; want ErrInvalidSubPath with %q", tt.sub, err, tt.wantErr)
						}
						return
					}
					if err != nil {
						t.Fatalf("openBeneath(%q): %v", tt.sub, err)
					}
					defer unix.Close(fd)
					got, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
					if want := filepath.Join(root, tt.want); err != nil || got != want {
						t.Errorf("opened %q, %v; want %q", got, err, want)
					}
					mode, err := fdMode(fd)
					if err != nil || mode.IsDir() != tt.wantDir {
						t.Errorf("opened a %v, %v; want dir %v", mode, err, tt.wantDir)
					}
				})
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Errorf("something was created outside the volume: %v", entries)
			}
		})
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func volumePod(t *testing.T, hostDir string) *pod.Pod {
	t.Helper()
	p := testutil.Pod("web-node1")
	p.Spec.Volumes = []pod.Volume{
		{Name: "host", HostPath: &pod.HostPathVolumeSource{Path: hostDir, Type: pod.HostPathDirectoryOrCreate}},
		{Name: "scratch", EmptyDir: &pod.EmptyDirVolumeSource{}},
	}
	p.Spec.Containers[0].VolumeMounts = []pod.VolumeMount{
		{Name: "host", MountPath: "/host", ReadOnly: true},
		{Name: "scratch", MountPath: "/scratch"},
		{Name: "scratch", MountPath: "/sub", SubPath: "s/t"},
	}
	return p
}

func TestPreparePodAndMounts(t *testing.T) {
	m := testManager(t)
	hostDir := filepath.Join(t.TempDir(), "data")
	p := volumePod(t, hostDir)
	for range 2 { // idempotent
		if err := m.Prepare(p, pod.Sandbox{IP: "10.244.0.7"}); err != nil {
			t.Fatal(err)
		}
	}
	if fi, err := os.Stat(hostDir); err != nil || !fi.IsDir() {
		t.Fatalf("hostPath DirectoryOrCreate not created: %v", err)
	}
	scratch := m.emptyDirPath(p.Metadata.UID, "scratch")
	if fi, err := os.Stat(scratch); err != nil || fi.Mode().Perm() != 0o777 {
		t.Fatalf("emptyDir %s: %v %v", scratch, fi, err)
	}
	b, err := os.ReadFile(m.hostnamePath(p.Metadata.UID))
	if err != nil || string(b) != "web-node1\n" {
		t.Fatalf("hostname file = %q, %v", b, err)
	}

	testutil.RequireRoot(t) // staging is a bind mount
	stageDir := m.StagingDir(p.Metadata.UID, "web_app_0")
	t.Cleanup(func() { Unstage(stageDir) })
	mounts, err := m.Mounts(p, &p.Spec.Containers[0], stageDir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range mounts {
		mode := "rw"
		if slices.Contains(m.Options, "ro") {
			mode = "ro"
		}
		got[m.Destination] = m.Source + " " + mode
	}
	want := map[string]string{
		"/host":            filepath.Join(stageDir, "0") + " ro",
		"/scratch":         scratch + " rw",
		"/sub":             filepath.Join(stageDir, "2") + " rw",
		"/etc/hostname":    m.hostnamePath(p.Metadata.UID) + " ro",
		"/etc/hosts":       m.hostsPath(p.Metadata.UID) + " ro",
		"/etc/resolv.conf": m.resolvConfPath(p.Metadata.UID) + " ro",
	}
	if !maps.Equal(got, want) {
		t.Errorf("mounts =\n%v\nwant\n%v", got, want)
	}
	// The staged paths are the volumes' objects, bound.
	for staged, orig := range map[string]string{
		filepath.Join(stageDir, "0"): hostDir,
		filepath.Join(stageDir, "2"): filepath.Join(scratch, "s", "t"),
	} {
		a, err1 := os.Stat(staged)
		b, err2 := os.Stat(orig)
		if err1 != nil || err2 != nil || !os.SameFile(a, b) {
			t.Errorf("%s is not %s: %v %v", staged, orig, err1, err2)
		}
	}
	if err := Unstage(stageDir); err != nil {
		t.Fatal(err)
	}
	if n := countMountsUnder(t, m.podDir(p.Metadata.UID)); n != 0 {
		t.Errorf("%d staging mounts left after Unstage", n)
	}
	if _, err := os.Stat(filepath.Join(scratch, "s", "t")); err != nil {
		t.Errorf("unstaging removed the volume's content: %v", err)
	}

	// A symlinked subPath is refused, and leaves no mount.
	if err := os.Symlink("/", filepath.Join(scratch, "evil")); err != nil {
		t.Fatal(err)
	}
	c := p.Spec.Containers[0]
	c.VolumeMounts = []pod.VolumeMount{{Name: "scratch", MountPath: "/x", SubPath: "evil"}}
	if _, err := m.Mounts(p, &c, stageDir); !errors.Is(err, ErrInvalidSubPath) {
		t.Errorf("symlinked subPath: err = %v", err)
	}
	Unstage(stageDir)
	if n := countMountsUnder(t, m.podDir(p.Metadata.UID)); n != 0 {
		t.Errorf("%d staging mounts left after a refused subPath", n)
	}

	// A volume mounted on /etc/hosts replaces the host's file.
	c.VolumeMounts = []pod.VolumeMount{{Name: "scratch", MountPath: "/etc/hosts"}}
	mounts, err = m.Mounts(p, &c, stageDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mounts {
		if m.Destination == "/etc/hosts" && m.Source != scratch {
			t.Errorf("/etc/hosts still from %s", m.Source)
		}
	}
	// An unknown volume is an error.
	c.VolumeMounts = []pod.VolumeMount{{Name: "nope", MountPath: "/x"}}
	if _, err := m.Mounts(p, &c, stageDir); !errors.Is(err, ErrVolumeNotFound) {
		t.Errorf("unknown volume: err = %v", err)
	}

	// Remove removes the pod's state, and is idempotent.
	for range 2 {
		if err := m.Remove(p.Metadata.UID); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{m.podDir(p.Metadata.UID)} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s still there: %v", d, err)
		}
	}
	if _, err := os.Stat(hostDir); err != nil {
		t.Errorf("cleanup touched the hostPath: %v", err)
	}
}

// TestPreparePodKeepsEmptyDirMode: PreparePod runs at every sync; once an
// emptyDir exists, a later run leaves its mode alone: the setgid bit fsGroup
// added stays (an e2e run saw /scratch at 777 instead of 2777 when a sync
// came between the container's start and its stat), and so does the pod's
// own chmod of the volume.
func TestPreparePodKeepsEmptyDirMode(t *testing.T) {
	gid := int64(os.Getgid()) // a group of our own: chown to it needs no root
	tests := []struct {
		name    string
		fsGroup *int64
		mode    *int32      // emptyDir.mode
		podMode os.FileMode // what the pod sets between the syncs; 0: nothing
		want    os.FileMode
	}{
		{name: "fsGroup", fsGroup: &gid, want: 0o777 | os.ModeSetgid},
		{name: "mode sticky", mode: new(int32(0o1777)), want: 0o777 | os.ModeSticky},
		{name: "mode 0750", mode: new(int32(0o750)), want: 0o750},
		{name: "mode 0700 fsGroup", mode: new(int32(0o700)), fsGroup: &gid, want: 0o770 | os.ModeSetgid},
		{name: "mode 0", mode: new(int32(0)), want: 0},
		{name: "pod chmod", podMode: 0o700, want: 0o700},
		{name: "plain", want: 0o777},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := testManager(t)
			p := volumePod(t, filepath.Join(t.TempDir(), "data"))
			p.Spec.SecurityContext = &pod.PodSecurityContext{FSGroup: tt.fsGroup}
			for i := range p.Spec.Volumes {
				if ed := p.Spec.Volumes[i].EmptyDir; ed != nil {
					ed.Mode = tt.mode
				}
			}
			scratch := m.emptyDirPath(p.Metadata.UID, "scratch")
			for sync := range 3 {
				if err := m.Prepare(p, pod.Sandbox{IP: "10.244.0.7"}); err != nil {
					t.Fatal(err)
				}
				if sync == 0 && tt.podMode != 0 {
					if err := os.Chmod(scratch, tt.podMode); err != nil {
						t.Fatal(err)
					}
				}
			}
			fi, err := os.Stat(scratch)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode() & (os.ModePerm | os.ModeSetgid | os.ModeSticky); got != tt.want {
				t.Errorf("emptyDir mode after three syncs = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPreparePodHostNetworkHostname(t *testing.T) {
	m := testManager(t)
	p := testutil.Pod("web-node1")
	p.Spec.HostNetwork = true
	if err := m.Prepare(p, pod.Sandbox{IP: "10.244.0.7"}); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	if b, _ := os.ReadFile(m.hostnamePath(p.Metadata.UID)); string(b) != host+"\n" {
		t.Errorf("hostNetwork pod hostname file = %q, want the node's %q", b, host)
	}
}

func TestPreparePodLongNameHostname(t *testing.T) {
	m := testManager(t)
	p := testutil.Pod(strings.Repeat("a", 62) + "-node1")
	if err := m.Prepare(p, pod.Sandbox{IP: "10.244.0.7"}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(m.hostnamePath(p.Metadata.UID)); string(b) != strings.Repeat("a", 62)+"\n" {
		t.Errorf("hostname file = %q, want the name cut to 63 without the trailing '-'", b)
	}
}

func TestPreparePodErrors(t *testing.T) {
	m := testManager(t)
	p := testutil.Pod("web-node1")
	p.Spec.Volumes = []pod.Volume{
		{Name: "a", HostPath: &pod.HostPathVolumeSource{Path: "/no/such/dir", Type: pod.HostPathDirectory}},
		{Name: "b", HostPath: &pod.HostPathVolumeSource{Path: "/dev/null", Type: pod.HostPathFile}},
	}
	err := m.Prepare(p, pod.Sandbox{IP: "10.244.0.7"})
	if !errors.Is(err, ErrHostPathType) {
		t.Fatalf("err = %v, want ErrHostPathType", err)
	}
	for _, s := range []string{`volume "a"`, `volume "b"`} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %s", err, s)
		}
	}
}

func TestMemoryEmptyDir(t *testing.T) {
	testutil.RequireRoot(t) // mounting a tmpfs needs root
	m := testManager(t)
	p := testutil.Pod("web-node1")
	limit := pod.MustParseQuantity("1Mi")
	p.Spec.Volumes = []pod.Volume{
		{Name: "mem", EmptyDir: &pod.EmptyDirVolumeSource{Medium: pod.StorageMediumMemory}},
		{Name: "small", EmptyDir: &pod.EmptyDirVolumeSource{Medium: pod.StorageMediumMemory, SizeLimit: &limit}},
	}
	t.Cleanup(func() { m.Remove(p.Metadata.UID) })
	for range 2 {
		if err := m.Prepare(p, pod.Sandbox{IP: "10.244.0.7"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []string{"mem", "small"} {
		dir := m.emptyDirPath(p.Metadata.UID, v)
		mounted, err := isMountPoint(dir)
		if err != nil || !mounted {
			t.Fatalf("%s not a mount point: %v", dir, err)
		}
		if n := countMounts(t, dir); n != 1 {
			t.Errorf("%s mounted %d times after two PreparePod calls", dir, n)
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs(m.emptyDirPath(p.Metadata.UID, "small"), &st); err != nil {
		t.Fatal(err)
	}
	if size := int64(st.Blocks) * st.Bsize; size != 1<<20 {
		t.Errorf("tmpfs size = %d, want sizeLimit 1Mi", size)
	}
	if err := m.Remove(p.Metadata.UID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(m.podDir(p.Metadata.UID)); !os.IsNotExist(err) {
		t.Errorf("pod dir still there: %v", err)
	}
}

// countMountsUnder counts the mounts at or below dir.
func countMountsUnder(t *testing.T, dir string) int {
	return countMountsWith(t, mountinfo.PrefixFilter(dir))
}

// countMounts counts the mounts on dir itself (stacked ones included).
func countMounts(t *testing.T, dir string) int {
	return countMountsWith(t, func(m *mountinfo.Info) (skip, stop bool) { return m.Mountpoint != dir, false })
}

func countMountsWith(t *testing.T, filter mountinfo.FilterFunc) int {
	t.Helper()
	ms, err := mountinfo.GetMounts(filter)
	if err != nil {
		t.Fatal(err)
	}
	return len(ms)
}
