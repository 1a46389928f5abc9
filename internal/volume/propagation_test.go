package volume

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"tug/internal/pod"
	"tug/internal/testutil"
)

func TestSetPropagation(t *testing.T) {
	tests := []struct {
		mode pod.MountPropagationMode
		want []string
	}{
		{pod.MountPropagationNone, []string{"rbind", "rprivate", "ro"}},
		{pod.MountPropagationHostToContainer, []string{"rbind", "rslave", "ro"}},
		{pod.MountPropagationBidirectional, []string{"rbind", "rshared", "ro"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			m := BindMount("/src", "/dst", true)
			setPropagation(&m, tt.mode)
			if !slices.Equal(m.Options, tt.want) {
				t.Fatalf("options = %v, want %v", m.Options, tt.want)
			}
		})
	}
}

func TestCheckPropagation(t *testing.T) {
	testutil.RequireRoot(t) // bind mounts
	base := t.TempDir()
	private, shared, slave := filepath.Join(base, "private"), filepath.Join(base, "shared"), filepath.Join(base, "slave")
	for _, d := range []string{private, shared, slave} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bindSelf(t, private, private, unix.MS_PRIVATE)
	bindSelf(t, shared, shared, unix.MS_SHARED)
	bindSelf(t, shared, slave, unix.MS_SLAVE) // a slave of shared's peer group
	tests := []struct {
		dir     string
		mode    pod.MountPropagationMode
		wantErr bool
	}{
		{private, pod.MountPropagationNone, false},
		{private, pod.MountPropagationHostToContainer, true},
		{private, pod.MountPropagationBidirectional, true},
		{shared, pod.MountPropagationHostToContainer, false},
		{shared, pod.MountPropagationBidirectional, false},
		{slave, pod.MountPropagationHostToContainer, false},
		{slave, pod.MountPropagationBidirectional, true},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.dir)+"/"+string(tt.mode), func(t *testing.T) {
			fd, err := unix.Open(tt.dir, unix.O_PATH|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			err = checkPropagation(fd, tt.dir, tt.mode)
			if (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, ErrMountPropagation)) {
				t.Fatalf("checkPropagation = %v, want error %v", err, tt.wantErr)
			}
		})
	}
}

func TestMountsPropagation(t *testing.T) {
	testutil.RequireRoot(t) // staging is a bind mount
	host := t.TempDir()
	bindSelf(t, host, host, unix.MS_SHARED)
	mgr := testManager(t)
	mode := pod.MountPropagationHostToContainer
	p := &pod.Pod{Metadata: pod.ObjectMeta{Name: "p", Namespace: "default", UID: "u1"}, Spec: pod.PodSpec{
		Volumes: []pod.Volume{{Name: "h", HostPath: &pod.HostPathVolumeSource{Path: host}}},
	}}
	c := &pod.Container{Name: "c", VolumeMounts: []pod.VolumeMount{{Name: "h", MountPath: "/h", MountPropagation: &mode}}}
	stage := mgr.StagingDir("u1", "c-0")
	t.Cleanup(func() { _ = Unstage(stage) })
	mounts, err := mgr.Mounts(p, c, stage)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(mounts, func(m specs.Mount) bool { return m.Destination == "/h" })
	if i < 0 || !slices.Contains(mounts[i].Options, "rslave") || slices.Contains(mounts[i].Options, "rprivate") {
		t.Fatalf("mounts = %+v, want /h rslave", mounts)
	}
}
