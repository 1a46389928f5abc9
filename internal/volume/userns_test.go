package volume

import (
	"testing"

	"golang.org/x/sys/unix"

	"tug/internal/pod"
	"tug/internal/testutil"
)

// TestPrepareUserNamespace: for a pod in its own user namespace, emptyDir
// volumes (on disk and tmpfs) belong to the pod's root, and fsGroup is the
// host group it maps to.
func TestPrepareUserNamespace(t *testing.T) {
	testutil.RequireRoot(t) // chown to another ID, tmpfs
	m := testManager(t)
	p := testutil.Pod("web-node1")
	fsGroup := int64(2000)
	p.Spec.SecurityContext = &pod.PodSecurityContext{FSGroup: &fsGroup}
	p.Spec.Volumes = []pod.Volume{
		{Name: "disk", EmptyDir: &pod.EmptyDirVolumeSource{}},
		{Name: "mem", EmptyDir: &pod.EmptyDirVolumeSource{Medium: pod.StorageMediumMemory}},
	}
	t.Cleanup(func() { m.Remove(p.Metadata.UID) })
	idmap := &pod.IDMapping{HostID: 196608, Size: 65536}
	if err := m.Prepare(p, pod.Sandbox{IP: "10.244.0.7", UserNS: idmap}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"disk", "mem"} {
		var st unix.Stat_t
		if err := unix.Stat(m.emptyDirPath(p.Metadata.UID, v), &st); err != nil {
			t.Fatal(err)
		}
		if st.Uid != 196608 || st.Gid != 196608+2000 {
			t.Errorf("emptyDir %s: owner %d:%d, want 196608:%d (the pod's root, fsGroup mapped)", v, st.Uid, st.Gid, 196608+2000)
		}
		if st.Mode&0o777 != 0o777 {
			t.Errorf("emptyDir %s: mode %o", v, st.Mode)
		}
	}
}
