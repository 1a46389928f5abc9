//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"tug/internal/pod"
	"tug/internal/testutil"
)

// fakeDevice is a char device node made for a test, with the numbers of
// /dev/null (1:3) or /dev/zero (1:5).
type fakeDevice struct {
	name         string
	major, minor uint32
}

// mknodAll makes the device nodes in dir.
func mknodAll(t *testing.T, dir string, devs ...fakeDevice) {
	t.Helper()
	for _, d := range devs {
		if err := unix.Mknod(filepath.Join(dir, d.name), unix.S_IFCHR|0o666, int(unix.Mkdev(d.major, d.minor))); err != nil {
			t.Fatalf("mknod %s: %v", d.name, err)
		}
	}
}

// dongleDevices are three fake dongles: null, zero, null.
var dongleDevices = []fakeDevice{{"ttyFake0", 1, 3}, {"ttyFake1", 1, 5}, {"ttyFake2", 1, 3}}

// donglePod is the Kubernetes documentation's extended resource example
// (a container asking for example.com/dongle: 3 in requests and limits),
// with the test image and a script in place of nginx.
func donglePod(name, image string, n int, script string) string {
	return podYAML{name: name, containers: []ctrYAML{{name: "extended-resource-demo-ctr", image: image, script: script,
		extra: fmt.Sprintf("      resources:\n        requests:\n          example.com/dongle: %d\n        limits:\n          example.com/dongle: %d\n", n, n)}}}.String()
}

// nodeCapacity returns GET /node's capacity and allocatable of a resource.
func (tg *tug) nodeCapacity(name string) (capacity, allocatable string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	v, err := tg.api().Node(ctx)
	return v.Status.Capacity[name], v.Status.Allocatable[name], err
}

// TestDeviceResources: a node declaring three dongles (host device nodes
// by glob) runs the documentation's example asking for three; the
// container sees the three nodes and reads and writes them; a second pod
// asking for one more is refused with OutOfexample.com/dongle, also after
// tug is killed and started again, which leaves the first pod its
// devices; the second pod runs once the first is gone.
func TestDeviceResources(t *testing.T) {
	devDir := t.TempDir()
	mknodAll(t, devDir, dongleDevices...)
	tg := startTug(t, tugOpts{args: []string{"--device-resource", "example.com/dongle=" + filepath.Join(devDir, "ttyFake*")}})
	script := fmt.Sprintf(`for d in %[1]s/ttyFake*; do stat -c "%%n %%t:%%T %%F" $d; done
echo hello > %[1]s/ttyFake0 && echo write=ok
echo "read=$(head -c 4 %[1]s/ttyFake1 | wc -c)"
%[2]s`, devDir, idle)
	tg.writeManifest("dongles.yaml", donglePod("extended-resource-demo", tg.image, 3, script))
	first := tg.waitRunning(startTimeout, "extended-resource-demo", "extended-resource-demo-ctr", 0)
	tg.waitLog(startTimeout, "extended-resource-demo", "extended-resource-demo-ctr", 0,
		devDir+"/ttyFake0 1:3 character special file",
		devDir+"/ttyFake1 1:5 character special file",
		devDir+"/ttyFake2 1:3 character special file",
		"write=ok", "read=4")
	if c, a, err := tg.nodeCapacity("example.com/dongle"); err != nil || c != "3" || a != "3" {
		t.Errorf("GET /node: capacity %q allocatable %q (%v), want 3 and 3", c, a, err)
	}
	if out, _, code := tg.runCLI("node"); code != 0 || findLine(out, "example.com/dongle", "3", "3") == "" {
		t.Errorf("tug node (exit %d) does not show the dongles' capacity:\n%s", code, out)
	}

	refused := func(what string) {
		t.Helper()
		tg.waitPod(startTimeout, "one-more", what, reasonIs(pod.PhaseFailed, "OutOfexample.com/dongle",
			"Node didn't have enough resource: example.com/dongle, requested: 1, used: 3, capacity: 3"))
		tg.assertRefused("one-more", "OutOfexample.com/dongle")
	}
	tg.writeManifest("one-more.yaml", donglePod("one-more", tg.image, 1, idle))
	refused("refused: every dongle is taken")

	// tug is killed (SIGKILL) and started again: the running pod keeps its
	// container and its devices, and the second pod is still refused.
	tg.Kill()
	tg.Start()
	if again := tg.waitRunning(startTimeout, "extended-resource-demo", "extended-resource-demo-ctr", 0); again.PID != first.PID {
		t.Errorf("the pod's container was restarted: pid %d, was %d", again.PID, first.PID)
	}
	refused("refused after a restart of tug")

	// The first pod goes: its dongles are free, and the second pod runs.
	tg.removeManifest("dongles.yaml")
	tg.waitPod(removeTimeout+startTimeout, "one-more", "running once the dongles are free", phaseIs(pod.PhaseRunning))
}

// TestDeviceResourcesTooFew: on a node that declares two dongles, the
// documentation's example asking for three is refused with
// OutOfexample.com/dongle, shown by tug pods.
func TestDeviceResourcesTooFew(t *testing.T) {
	devDir := t.TempDir()
	mknodAll(t, devDir, dongleDevices[:2]...)
	tg := startTug(t, tugOpts{args: []string{"--device-resource", "example.com/dongle=" + filepath.Join(devDir, "ttyFake*")}})
	tg.writeManifest("dongles.yaml", donglePod("extended-resource-demo", tg.image, 3, idle))
	tg.waitPod(startTimeout, "extended-resource-demo", "refused", reasonIs(pod.PhaseFailed, "OutOfexample.com/dongle",
		"Node didn't have enough resource: example.com/dongle, requested: 3, used: 0, capacity: 2"))
	tg.assertRefused("extended-resource-demo", "OutOfexample.com/dongle")
}

// cdiSpecYAML is a CDI spec of kind example.com/device: device fake0 is
// the node hostPath (given as /dev/fake0), with an env var; the spec adds
// a read-only mount of share at /mnt/cdi to every container that gets one
// of its devices.
func cdiSpecYAML(hostPath, share string) string {
	return fmt.Sprintf(`cdiVersion: "0.6.0"
kind: example.com/device
devices:
- name: fake0
  containerEdits:
    deviceNodes:
    - path: /dev/fake0
      hostPath: %s
    env:
    - FAKE0=present
containerEdits:
  mounts:
  - hostPath: %s
    containerPath: /mnt/cdi
    options: [ro, bind]
`, hostPath, share)
}

// TestCDIDevices: a CDI spec written once tug runs (the registry watches
// its directory) gives a pod that names its device in a cdi.k8s.io/
// annotation the device node, the env and the mount; a pod without the
// annotation has no such node; a pod of the URL source that asks for
// the device, by annotation or by a resource, is refused without
// --url-allowed-devices.
func TestCDIDevices(t *testing.T) {
	image, _ := testutil.TestImage(t)
	devDir, specDir, share := t.TempDir(), t.TempDir(), t.TempDir()
	mknodAll(t, devDir, fakeDevice{"fake0", 1, 3})
	if err := os.WriteFile(filepath.Join(share, "hello"), []byte("from-cdi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const annotation = "  annotations:\n    cdi.k8s.io/test: example.com/device=fake0\n"
	withAnnotation := func(manifest string) string {
		return strings.Replace(manifest, "metadata:\n", "metadata:\n"+annotation, 1)
	}
	srv := newManifestServer(t, good(withAnnotation(shPod("urlcdi", image, idle))+"---\n"+
		donglePod("urldongle", image, 1, idle)))
	tg := urlTug(t, srv.url, "--cdi-spec-dirs", specDir,
		"--device-resource", "example.com/dongle=cdi:example.com/device")
	tg.waitBlocked("urlcdi", `metadata.annotations[cdi.k8s.io/test]: CDI device "example.com/device=fake0" (kind example.com/device) is a device, which pods of source `+srv.url+" may not use")
	tg.waitBlocked("urldongle", `spec.containers[0].resources.limits[example.com/dongle]: "example.com/dongle" is a device`)

	if err := os.WriteFile(filepath.Join(specDir, "example.yaml"), []byte(cdiSpecYAML(filepath.Join(devDir, "fake0"), share)), 0o644); err != nil {
		t.Fatal(err)
	}
	tg.waitFor(startTimeout, "the CDI device to count as a dongle", func() (bool, error) {
		c, _, err := tg.nodeCapacity("example.com/dongle")
		return c == "1", fmt.Errorf("capacity %q (%v)", c, err)
	})
	tg.writeManifest("cdi.yaml", withAnnotation(shPod("cdi", tg.image, `stat -c "%n %t:%T %F" /dev/fake0
echo "env=$FAKE0"; cat /mnt/cdi/hello
echo x > /dev/fake0 && echo write=ok
touch /mnt/cdi/x 2>/dev/null || echo mount=ro
`+idle)))
	tg.waitLog(startTimeout, "cdi", "main", 0, "/dev/fake0 1:3 character special file", "env=present", "from-cdi", "write=ok", "mount=ro")

	// A pod without the annotation has no such node.
	tg.writeManifest("nodev.yaml", shPod("nodev", tg.image, `test -e /dev/fake0 || echo absent=yes
`+idle))
	tg.waitLog(startTimeout, "nodev", "main", 0, "absent=yes")
}

// TestDeviceCgroupRules: the device cgroup lets a container open the
// nodes it was given, with the access declared, and no other: fake nodes
// with /dev/fuse's numbers (10:229, which the runtime's default rules do
// not allow) are opened read-write by the pod given one, only for reading
// by the pod given one with access "r", and not at all by a pod that
// makes the node itself.
func TestDeviceCgroupRules(t *testing.T) {
	devDir := t.TempDir()
	mknodAll(t, devDir, fakeDevice{"fuse0", 10, 229}, fakeDevice{"fuse1", 10, 229})
	tg := startTug(t, tugOpts{args: []string{
		"--device-resource", "example.com/fuse=" + filepath.Join(devDir, "fuse0"),
		"--device-resource", "example.com/fuse-ro=" + filepath.Join(devDir, "fuse1") + ":r",
	}})
	opens := func(path string) string {
		return fmt.Sprintf(`(exec 3<%[1]s) 2>/dev/null && echo read=ok || echo read=refused
(exec 3<>%[1]s) 2>/dev/null && echo rw=ok || echo rw=refused
`, path)
	}
	asking := func(name, resource string) string {
		return podYAML{name: name, containers: []ctrYAML{{name: "main", image: tg.image, script: opens(filepath.Join(devDir, name)) + idle,
			extra: "      resources:\n        limits:\n          " + resource + ": 1\n"}}}.String()
	}
	tg.writeManifest("fuse0.yaml", asking("fuse0", "example.com/fuse"))
	tg.writeManifest("fuse1.yaml", asking("fuse1", "example.com/fuse-ro"))
	tg.writeManifest("nodev.yaml", shPod("nodev", tg.image, "mknod /tmp/fuse c 10 229 && echo mknod=ok\n"+opens("/tmp/fuse")+idle))
	tg.waitLog(startTimeout, "fuse0", "main", 0, "read=ok", "rw=ok")
	tg.waitLog(startTimeout, "fuse1", "main", 0, "read=ok", "rw=refused")
	tg.waitLog(startTimeout, "nodev", "main", 0, "mknod=ok", "read=refused", "rw=refused")
}
