//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"tug/internal/pod"
	"tug/internal/podview"
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

// waitCapacity waits until GET /node shows want as the capacity and the
// allocatable of a resource.
func (tg *tug) waitCapacity(name, want string) {
	tg.t.Helper()
	tg.waitFor(startTimeout, name+" capacity "+want, func() (bool, error) {
		c, a, err := tg.nodeCapacity(name)
		return c == want && a == want, fmt.Errorf("capacity %q allocatable %q (%v)", c, a, err)
	})
}

// TestDeviceResources: a node declaring three dongles (host device nodes
// by glob) runs the documentation's example asking for three; the
// container sees the three nodes and reads and writes them; a second pod
// asking for one more is refused with OutOfexample.com/dongle, also after
// tug is killed and started again, which leaves the first pod its
// devices; the second pod runs once the first is gone.
func TestDeviceResources(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
// not allow) are opened read-write by the container given one, only for
// reading by the container given one with access "r", and not at all by a
// pod that makes the node itself. The two nodes are one device (a device
// goes to one pod): the two containers are of one pod. It runs on the cgroup v1 host (devices.allow)
// and in the cgroup v2 guest of make test-v2 (the runtime's eBPF device
// program).
func TestDeviceCgroupRules(t *testing.T) {
	t.Parallel()
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
	asking := func(name, resource string) ctrYAML {
		return ctrYAML{name: name, image: tg.image, script: opens(filepath.Join(devDir, name)) + idle,
			extra: "      resources:\n        limits:\n          " + resource + ": 1\n"}
	}
	tg.writeManifest("fuse.yaml", podYAML{name: "fuse", containers: []ctrYAML{
		asking("fuse0", "example.com/fuse"), asking("fuse1", "example.com/fuse-ro"),
	}}.String())
	tg.writeManifest("nodev.yaml", shPod("nodev", tg.image, "mknod /tmp/fuse c 10 229 && echo mknod=ok\n"+opens("/tmp/fuse")+idle))
	tg.waitLog(startTimeout, "fuse", "fuse0", 0, "read=ok", "rw=ok")
	tg.waitLog(startTimeout, "fuse", "fuse1", 0, "read=ok", "rw=refused")
	tg.waitLog(startTimeout, "nodev", "main", 0, "mknod=ok", "read=refused", "rw=refused")
}

// TestDeviceHotplug: a node declaring dongles by glob counts the nodes
// present (two, then three once one is made), and a pod asking for three,
// refused with two, starts when the third is made (the directory is
// watched: the resync is ten minutes away); the pod holding the three
// whose node ttyFake1 is removed, as a USB stick is pulled out, gets a
// Warning DeviceUnavailable event and a False tug.io/DevicesReady
// condition naming the device, shown by tug pods and tug describe; its
// container, which exits as a program does when its device goes, is not
// restarted while the node is gone (it waits with reason
// DeviceUnavailable, even with a back-off of one second); the node made
// again clears the condition and the container runs again.
func TestDeviceHotplug(t *testing.T) {
	t.Parallel()
	devDir, gate := t.TempDir(), t.TempDir()
	mknodAll(t, devDir, dongleDevices[:2]...)
	// A resync every ten minutes: within the test, only the watch of the
	// directory (and the containers' own events) sync the pod.
	tg := startTug(t, tugOpts{args: []string{"--device-resource", "example.com/dongle=" + filepath.Join(devDir, "ttyFake*"),
		"--crash-loop-back-off-initial", "1s", "--sync-frequency", "10m"}})
	capacityIs := func(want string) {
		t.Helper()
		tg.waitCapacity("example.com/dongle", want)
		if out, _, code := tg.runCLI("node"); code != 0 || findLine(out, "example.com/dongle", want, want) == "" {
			t.Errorf("tug node (exit %d) does not show capacity %s:\n%s", code, want, out)
		}
	}
	capacityIs("2")

	// The container runs while the gate file exists: the test removes it
	// with the node, as a program exits when its device fails.
	up := filepath.Join(gate, "up")
	if err := os.WriteFile(up, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tg.writeManifest("holder.yaml", podYAML{name: "holder",
		containers: []ctrYAML{{name: "main", image: tg.image,
			script: "while [ -e /gate/up ]; do sleep 1; done; echo device gone; exit 1\n",
			mounts: []mountYAML{{name: "gate", path: "/gate"}},
			extra:  "      resources:\n        limits:\n          example.com/dongle: 3\n"}},
		volumes: []volYAML{hostPathVol("gate", gate, "Directory")}}.String())
	tg.waitPod(startTimeout, "holder", "refused: two dongles of three", reasonIs(pod.PhaseFailed, "OutOfexample.com/dongle",
		"Node didn't have enough resource: example.com/dongle, requested: 3, used: 0, capacity: 2"))

	// A third dongle plugged in: the capacity is 3 and the pod starts.
	mknodAll(t, devDir, dongleDevices[2])
	capacityIs("3")
	tg.waitRunning(startTimeout, "holder", "main", 0)
	tg.waitPod(startTimeout, "holder", "DevicesReady True", func(v *podview.View) error {
		if c := conditionOf(v, pod.ConditionDevicesReady); c.Status != "True" {
			return fmt.Errorf("DevicesReady %+v", c)
		}
		return nil
	})

	gone := filepath.Join(devDir, "ttyFake1")
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(up); err != nil {
		t.Fatal(err)
	}
	want := gone + " of example.com/dongle"
	var restarts int32
	v := tg.waitPod(startTimeout, "holder", "DevicesReady False, the container waiting for its device", func(v *podview.View) error {
		c := conditionOf(v, pod.ConditionDevicesReady)
		if c.Status != "False" || c.Reason != "DeviceUnavailable" || !strings.Contains(c.Message, want) {
			return fmt.Errorf("DevicesReady %+v, want False DeviceUnavailable naming %s", c, want)
		}
		cs := mainStatus(v)
		if cs.State.Waiting == nil || cs.State.Waiting.Reason != "DeviceUnavailable" {
			return fmt.Errorf("container main is not waiting for its device: %+v", cs.State)
		}
		restarts = cs.RestartCount
		return nil
	})
	if !slices.Contains(tg.eventReasons(v.Metadata.UID), "DeviceUnavailable") {
		t.Errorf("no DeviceUnavailable event: %v", tg.eventReasons(v.Metadata.UID))
	}
	if out, _, code := tg.runCLI("pods"); code != 0 || findLine(out, staticName("holder"), "DeviceUnavailable") == "" || !strings.Contains(out, want) {
		t.Errorf("tug pods (exit %d) does not show the pod waiting for %s:\n%s", code, want, out)
	}
	if out, _, code := tg.runCLI("describe", "holder"); code != 0 ||
		findLine(out, "tug.io/DevicesReady", "False") == "" || findLine(out, "Warning", "DeviceUnavailable", want) == "" {
		t.Errorf("tug describe holder (exit %d) shows no False DevicesReady and no DeviceUnavailable event:\n%s", code, out)
	}

	// No crash loop: over ten seconds (ten back-offs of one second) the
	// container is not started again.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		v, err := tg.podView("holder")
		if err != nil {
			t.Fatal(err)
		}
		if cs := mainStatus(&v); cs.RestartCount != restarts || cs.State.Waiting == nil || cs.State.Waiting.Reason != "DeviceUnavailable" {
			t.Fatalf("container main restarted while its device is gone: restartCount %d (was %d), state %+v", cs.RestartCount, restarts, cs.State)
		}
		time.Sleep(time.Second)
	}

	// The stick is back: the condition clears and the container runs.
	if err := os.WriteFile(up, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	mknodAll(t, devDir, dongleDevices[1])
	tg.waitPod(startTimeout, "holder", "DevicesReady True again, the container running", func(v *podview.View) error {
		if c := conditionOf(v, pod.ConditionDevicesReady); c.Status != "True" {
			return fmt.Errorf("DevicesReady %+v", c)
		}
		if cs := mainStatus(v); cs.State.Running == nil || cs.RestartCount != restarts+1 {
			return fmt.Errorf("container main: restartCount %d, state %+v; want running, restartCount %d", cs.RestartCount, cs.State, restarts+1)
		}
		return nil
	})
}

// TestDeviceResourcesCDI: the documentation's example asking for three
// dongles runs unchanged on a node whose example.com/dongle units are the
// three devices of a CDI spec (backed by device nodes made by the test),
// and its container sees the three nodes; a second pod asking for one
// more is refused with OutOfexample.com/dongle.
func TestDeviceResourcesCDI(t *testing.T) {
	t.Parallel()
	devDir, specDir := t.TempDir(), t.TempDir()
	mknodAll(t, devDir, dongleDevices...)
	spec := "cdiVersion: \"0.6.0\"\nkind: example.com/dongle\ndevices:\n"
	for i, d := range dongleDevices {
		spec += fmt.Sprintf("- name: dongle%d\n  containerEdits:\n    deviceNodes:\n    - path: /dev/dongle%d\n      hostPath: %s\n", i, i, filepath.Join(devDir, d.name))
	}
	if err := os.WriteFile(filepath.Join(specDir, "dongle.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	tg := startTug(t, tugOpts{args: []string{"--cdi-spec-dirs", specDir,
		"--device-resource", "example.com/dongle=cdi:example.com/dongle"}})
	tg.waitCapacity("example.com/dongle", "3")
	tg.writeManifest("dongles.yaml", donglePod("extended-resource-demo", tg.image, 3,
		`for d in /dev/dongle*; do stat -c "%n %t:%T %F" $d; done
`+idle))
	tg.waitLog(startTimeout, "extended-resource-demo", "extended-resource-demo-ctr", 0,
		"/dev/dongle0 1:3 character special file",
		"/dev/dongle1 1:5 character special file",
		"/dev/dongle2 1:3 character special file")
	tg.writeManifest("one-more.yaml", donglePod("one-more", tg.image, 1, idle))
	tg.waitPod(startTimeout, "one-more", "refused", reasonIs(pod.PhaseFailed, "OutOfexample.com/dongle",
		"Node didn't have enough resource: example.com/dongle, requested: 1, used: 3, capacity: 3"))
	tg.assertRefused("one-more", "OutOfexample.com/dongle")
}

// TestPrivilegedHostPathDevice: the form that predates device resources
// keeps working for the manifest directory's pods: a privileged container
// (tug run --allow-privileged) given a host device node by a hostPath
// volume of type CharDevice, mounted at /dev/ttyUSB0, opens it for
// reading and writing, with no device resource declared. The node has
// /dev/fuse's numbers, which the runtime's default device rules refuse
// (TestDeviceCgroupRules): privileged lifts them.
func TestPrivilegedHostPathDevice(t *testing.T) {
	t.Parallel()
	devDir := t.TempDir()
	mknodAll(t, devDir, fakeDevice{"ttyUSB0", 10, 229})
	tg := startTug(t, tugOpts{args: []string{"--allow-privileged"}})
	tg.writeManifest("zigbee.yaml", podYAML{name: "zigbee",
		containers: []ctrYAML{{name: "main", image: tg.image,
			script: "(exec 3<>/dev/ttyUSB0) && echo rw=ok\n" + idle,
			mounts: []mountYAML{{name: "stick", path: "/dev/ttyUSB0"}},
			extra:  "      securityContext:\n        privileged: true\n"}},
		volumes: []volYAML{hostPathVol("stick", filepath.Join(devDir, "ttyUSB0"), "CharDevice")}}.String())
	tg.waitLog(startTimeout, "zigbee", "main", 0, "rw=ok")
}

// TestDeviceExclusiveAcrossResources: exclusivity keys on the device,
// node-wide: one device node (with /dev/zero's numbers) is reached by two
// resources' globs, example.com/serial through a by-id symlink and
// example.com/tty through the node itself. The pod asking for the serial
// gets it; the pod asking for the tty is refused with
// OutOfexample.com/tty, naming the pod that holds the device, its path
// and its resource, in its status and in tug pods; once the first pod is
// gone, the second runs with the node.
func TestDeviceExclusiveAcrossResources(t *testing.T) {
	t.Parallel()
	devDir := t.TempDir()
	mknodAll(t, devDir, fakeDevice{"ttyUSB0", 1, 5})
	byID := filepath.Join(devDir, "by-id")
	if err := os.Mkdir(byID, 0o755); err != nil {
		t.Fatal(err)
	}
	stick := filepath.Join(byID, "usb-Fake_Stick_0001-if00")
	if err := os.Symlink("../ttyUSB0", stick); err != nil {
		t.Fatal(err)
	}
	tg := startTug(t, tugOpts{args: []string{
		"--device-resource", "example.com/serial=" + filepath.Join(byID, "*"),
		"--device-resource", "example.com/tty=" + filepath.Join(devDir, "ttyUSB*"),
	}})
	asking := func(name, resource, script string) string {
		return podYAML{name: name, containers: []ctrYAML{{name: "main", image: tg.image, script: script + idle,
			extra: "      resources:\n        limits:\n          " + resource + ": 1\n"}}}.String()
	}
	tg.writeManifest("modem.yaml", asking("modem", "example.com/serial", `stat -L -c "%n %t:%T" `+stick+"\n"))
	tg.waitLog(startTimeout, "modem", "main", 0, stick+" 1:5")

	tg.writeManifest("logger.yaml", asking("logger", "example.com/tty", `stat -c "%n %t:%T" `+filepath.Join(devDir, "ttyUSB0")+"\n"))
	want := "Node didn't have enough resource: example.com/tty, requested: 1, used: 1, capacity: 1; " +
		filepath.Join(devDir, "ttyUSB0") + " is char device 1:5, held by pod default/" + staticName("modem") + " as " + stick + " of example.com/serial"
	tg.waitPod(startTimeout, "logger", "refused: the device is the modem's", reasonIs(pod.PhaseFailed, "OutOfexample.com/tty", want))
	rest := tg.assertRefused("logger", "OutOfexample.com/tty")
	if !slices.ContainsFunc(rest, func(l string) bool { return strings.Contains(l, want) }) {
		t.Errorf("tug pods does not show why logger is refused (%s):\n%s", want, strings.Join(rest, "\n"))
	}

	tg.removeManifest("modem.yaml")
	tg.waitPod(removeTimeout+startTimeout, "logger", "running once the modem is gone", phaseIs(pod.PhaseRunning))
	tg.waitLog(startTimeout, "logger", "main", 0, filepath.Join(devDir, "ttyUSB0")+" 1:5")
}
