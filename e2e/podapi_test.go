//go:build e2e

package e2e

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"tug/internal/pod"
	"tug/internal/podview"
	"tug/internal/testutil"
)

// Pod v1 fields of Kubernetes 1.33 to 1.37 on the real containerd: what a
// container sees of each.

// waitFileContent waits for the file at path to exist and returns its
// content. Test containers write the file under a temporary name and
// rename it in, so that it is read whole.
func waitFileContent(t *testing.T, path string) string {
	t.Helper()
	var content []byte
	waitFor(t, startTimeout, "file "+filepath.Base(path), func() (bool, error) {
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return false, err
		}
		if err != nil {
			return false, errors.Join(errStop, err)
		}
		content = b
		return true, nil
	})
	return string(content)
}

// TestEmptyDirMode: emptyDir.mode gives the volume's directory its
// permission bits, the sticky bit included, on disk and on tmpfs, as the
// container sees them; without it the directory is 0777.
func TestEmptyDirMode(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	out := t.TempDir()
	tg.writeManifest("modes.yaml", podYAML{
		name: "modes",
		containers: []ctrYAML{{
			name: "main", image: tg.image,
			script: "stat -c %a /disk /mem /plain > /out/modes.tmp && mv /out/modes.tmp /out/modes; sleep 3600",
			mounts: []mountYAML{{name: "disk", path: "/disk"}, {name: "mem", path: "/mem"}, {name: "plain", path: "/plain"}, {name: "out", path: "/out"}},
		}},
		volumes: []volYAML{
			{"disk", "emptyDir: {mode: 01777}"},
			{"mem", "emptyDir: {medium: Memory, mode: 0750}"},
			emptyVol("plain"),
			hostPathVol("out", out, "Directory"),
		},
	}.String())
	if got, want := waitFileContent(t, filepath.Join(out, "modes")), "1777\n750\n777\n"; got != want {
		t.Errorf("stat -c %%a of /disk, /mem, /plain = %q, want %q", got, want)
	}
	tg.removePods("modes")
}

// TestStopSignal: a container whose lifecycle.stopSignal is SIGUSR1 gets
// SIGUSR1, not SIGTERM, when its manifest is removed; its neighbour without
// one gets SIGTERM.
func TestStopSignal(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	out := t.TempDir()
	trap := func(name string) string {
		return "trap 'echo " + name + " USR1 > /out/" + name + ".tmp; mv /out/" + name + ".tmp /out/" + name + "; exit 0' USR1\n" +
			"trap 'echo " + name + " TERM > /out/" + name + ".tmp; mv /out/" + name + ".tmp /out/" + name + "; exit 0' TERM\n" +
			"touch /out/" + name + ".up\nwhile true; do sleep 0.2; done"
	}
	mount := []mountYAML{{name: "out", path: "/out"}}
	tg.writeManifest("stopsig.yaml", podYAML{
		name: "stopsig",
		containers: []ctrYAML{
			{name: "usr1", image: tg.image, script: trap("usr1"), mounts: mount, extra: "      lifecycle:\n        stopSignal: SIGUSR1\n"},
			{name: "term", image: tg.image, script: trap("term"), mounts: mount},
		},
		volumes: []volYAML{hostPathVol("out", out, "Directory")},
		extra:   "  os:\n    name: linux\n",
	}.String())
	waitFileContent(t, filepath.Join(out, "usr1.up"))
	waitFileContent(t, filepath.Join(out, "term.up"))
	tg.removePods("stopsig")
	if got := waitFileContent(t, filepath.Join(out, "usr1")); got != "usr1 USR1\n" {
		t.Errorf("the container with stopSignal SIGUSR1 wrote %q, want %q", got, "usr1 USR1\n")
	}
	if got := waitFileContent(t, filepath.Join(out, "term")); got != "term TERM\n" {
		t.Errorf("the container without a stopSignal wrote %q, want %q", got, "term TERM\n")
	}
}

// TestHostnameOverride: spec.hostnameOverride is the pod's hostname, over
// hostname and subdomain: in /etc/hostname, from uname -n, and in
// /etc/hosts, with no cluster FQDN.
func TestHostnameOverride(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	out := t.TempDir()
	tg.writeManifest("override.yaml", podYAML{
		name: "override",
		containers: []ctrYAML{{
			name: "main", image: tg.image,
			script: "{ cat /etc/hostname; uname -n; grep -c 'cam.plant-7.example' /etc/hosts; grep -c 'svc.cluster.local' /etc/hosts; } > /out/names.tmp; mv /out/names.tmp /out/names; sleep 3600",
			mounts: []mountYAML{{name: "out", path: "/out"}},
		}},
		volumes: []volYAML{hostPathVol("out", out, "Directory")},
		extra:   "  hostname: db\n  subdomain: cams\n  hostnameOverride: cam.plant-7.example\n",
	}.String())
	want := "cam.plant-7.example\ncam.plant-7.example\n1\n0\n"
	if got := waitFileContent(t, filepath.Join(out, "names")); got != want {
		t.Errorf("/etc/hostname, uname -n, /etc/hosts lines with the override and with a cluster FQDN = %q, want %q", got, want)
	}
	tg.removePods("override")
}

// TestEnvFileKeyRef: an init container writes an env file into an
// emptyDir; the app container's env valueFrom.fileKeyRef reads its keys
// when it starts (the file is not mounted into it); an optional key that
// the file lacks leaves the variable unset.
func TestEnvFileKeyRef(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	out := t.TempDir()
	env := "      env:\n" +
		"        - name: DB_TOKEN\n          valueFrom:\n            fileKeyRef: {volumeName: cfg, path: gen/app.env, key: TOKEN}\n" +
		"        - name: DB_HOST\n          valueFrom:\n            fileKeyRef: {volumeName: cfg, path: gen/app.env, key: HOST}\n" +
		"        - name: DB_PORT\n          valueFrom:\n            fileKeyRef: {volumeName: cfg, path: gen/app.env, key: PORT, optional: true}\n"
	tg.writeManifest("envfile.yaml", podYAML{
		name: "envfile",
		init: []ctrYAML{{
			name: "setup", image: tg.image,
			script: "mkdir -p /cfg/gen && printf '# generated\\nTOKEN=s3cr=t\\nHOST=db.local\\n' > /cfg/gen/app.env",
			mounts: []mountYAML{{name: "cfg", path: "/cfg"}},
		}},
		containers: []ctrYAML{{
			name: "app", image: tg.image,
			script: "echo \"$DB_TOKEN|$DB_HOST|${DB_PORT-unset}\" > /out/env.tmp; mv /out/env.tmp /out/env; sleep 3600",
			mounts: []mountYAML{{name: "out", path: "/out"}},
			extra:  env,
		}},
		volumes: []volYAML{emptyVol("cfg"), hostPathVol("out", out, "Directory")},
	}.String())
	if got, want := waitFileContent(t, filepath.Join(out, "env")), "s3cr=t|db.local|unset\n"; got != want {
		t.Errorf("DB_TOKEN|DB_HOST|DB_PORT = %q, want %q", got, want)
	}
	tg.removePods("envfile")
}

// TestSupplementalGroupsPolicy: with supplementalGroupsPolicy Strict a
// container's groups are its primary group, fsGroup and
// supplementalGroups only; with Merge (the default) the groups the image's
// /etc/group gives its user come too. The image is the test image with
// root in group wheel (10), imported from the image directory.
func TestSupplementalGroupsPolicy(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	const image = "tug.test/groups:1"
	writeImageWithFile(t, tg.archive, filepath.Join(tg.imageDir, "groups.tar"), image,
		"etc/group", "root:x:0:\nwheel:x:10:root\nnogroup:x:65534:\n")
	out := t.TempDir()
	for _, policy := range []string{"Merge", "Strict"} {
		name := "groups-" + strings.ToLower(policy)
		tg.writeManifest(name+".yaml", podYAML{
			name: name,
			containers: []ctrYAML{{
				name: "main", image: image,
				script: "id -G > /out/" + policy + ".tmp; mv /out/" + policy + ".tmp /out/" + policy + "; sleep 3600",
				mounts: []mountYAML{{name: "out", path: "/out"}},
				extra:  "      imagePullPolicy: Never\n",
			}},
			volumes: []volYAML{hostPathVol("out", out, "Directory")},
			extra: "  securityContext:\n    runAsUser: 0\n    runAsGroup: 0\n    fsGroup: 3000\n    supplementalGroups: [4000]\n" +
				"    supplementalGroupsPolicy: " + policy + "\n",
		}.String())
	}
	merge := waitFileContent(t, filepath.Join(out, "Merge"))
	strict := waitFileContent(t, filepath.Join(out, "Strict"))
	if strict != "0 3000 4000\n" {
		t.Errorf("Strict: id -G = %q, want %q", strict, "0 3000 4000\n")
	}
	if merge != "0 10 3000 4000\n" {
		t.Errorf("Merge: id -G = %q, want %q (the image's wheel group too)", merge, "0 10 3000 4000\n")
	}
	tg.removePods("groups-merge", "groups-strict")
}

// writeImageWithFile writes to dst an OCI archive of the image of the
// OCI archive src (one uncompressed layer) with one more file in its
// layer, named ref: an image no registry has, for the image directory.
func writeImageWithFile(t *testing.T, src, dst, ref, name, content string) {
	t.Helper()
	blobs := map[string][]byte{}
	f, err := os.Open(src)
	must(t, err)
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		must(t, err)
		if hdr.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			must(t, err)
			blobs[hdr.Name] = b
		}
	}
	blob := func(d digest.Digest) []byte {
		b, ok := blobs["blobs/"+d.Algorithm().String()+"/"+d.Encoded()]
		if !ok {
			t.Fatalf("%s: no blob %s", src, d)
		}
		return b
	}
	var index ocispec.Index
	must(t, json.Unmarshal(blobs["index.json"], &index))
	if len(index.Manifests) != 1 {
		t.Fatalf("%s: %d manifests, want 1", src, len(index.Manifests))
	}
	var m ocispec.Manifest
	must(t, json.Unmarshal(blob(index.Manifests[0].Digest), &m))
	if len(m.Layers) != 1 || m.Layers[0].MediaType != ocispec.MediaTypeImageLayer {
		t.Fatalf("%s: want one uncompressed layer, got %v", src, m.Layers)
	}
	layer := withFile(t, blob(m.Layers[0].Digest), name, content)
	var config ocispec.Image
	must(t, json.Unmarshal(blob(m.Config.Digest), &config))
	config.RootFS.DiffIDs = []digest.Digest{digest.FromBytes(layer)}
	configBlob, err := json.Marshal(config)
	must(t, err)
	m.Config.Digest, m.Config.Size = digest.FromBytes(configBlob), int64(len(configBlob))
	m.Layers[0].Digest, m.Layers[0].Size = digest.FromBytes(layer), int64(len(layer))
	manifest, err := json.Marshal(m)
	must(t, err)
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(manifest), Size: int64(len(manifest)),
		Platform: index.Manifests[0].Platform, Annotations: map[string]string{"io.containerd.image.name": ref}}
	indexBlob, err := json.Marshal(ocispec.Index{Versioned: index.Versioned, MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{desc}})
	must(t, err)

	tmp := filepath.Join(t.TempDir(), filepath.Base(dst)) // renamed in whole
	out, err := os.Create(tmp)
	must(t, err)
	tw := tar.NewWriter(out)
	put := func(name string, b []byte) {
		must(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}))
		_, err := tw.Write(b)
		must(t, err)
	}
	put("oci-layout", blobs["oci-layout"])
	put("index.json", indexBlob)
	for _, b := range [][]byte{configBlob, layer, manifest} {
		put("blobs/sha256/"+digest.FromBytes(b).Encoded(), b)
	}
	must(t, tw.Close())
	must(t, out.Close())
	must(t, os.Rename(tmp, dst))
}

// TestAppArmorWithoutKernelSupport: on a node whose kernel has AppArmor
// off, a pod asking for a Localhost profile is refused (Failed, reason
// AppArmor) and gets no container; one asking for RuntimeDefault runs, and
// tug warns that the profile has no effect.
func TestAppArmorWithoutKernelSupport(t *testing.T) {
	t.Parallel()
	if b, err := os.ReadFile("/sys/module/apparmor/parameters/enabled"); err == nil && strings.HasPrefix(string(b), "Y") {
		testutil.Missing(t, "a kernel without AppArmor (this one enforces it)")
	}
	tg := startTug(t, tugOpts{})
	tg.writeManifest("aa-local.yaml", shPod("aa-local", tg.image, "sleep 3600",
		"  securityContext:\n    appArmorProfile: {type: Localhost, localhostProfile: k8s-deny-write}\n"))
	tg.writeManifest("aa-default.yaml", shPod("aa-default", tg.image, "sleep 3600",
		"  securityContext:\n    appArmorProfile: {type: RuntimeDefault}\n"))
	tg.waitPod(startTimeout, "aa-local", "Failed/AppArmor", reasonIs(pod.PhaseFailed, "AppArmor", "AppArmor is not enabled on the host"))
	tg.assertRefused("aa-local", "AppArmor")
	tg.waitRunning(startTimeout, "aa-default", "main", 0)
	tg.waitForOutput(startTimeout, "appArmorProfile has no effect", staticName("aa-default"))
	tg.removePods("aa-local", "aa-default")
}

// TestContainerRestartRules: in a restartPolicy Always pod, an app
// container with its own restartPolicy Never is not restarted when it
// fails; one with a rule restarting it on exit code 42 is restarted after
// a 42 and not after its next, 0, exit; the pod stays Running beside a
// third container that keeps running.
func TestContainerRestartRules(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{args: []string{"--crash-loop-back-off-initial", "1s"}})
	mount := []mountYAML{{name: "state", path: "/state"}}
	tg.writeManifest("rules.yaml", podYAML{
		name: "rules",
		containers: []ctrYAML{
			{name: "once", image: tg.image, script: "exit 3", extra: "      restartPolicy: Never\n"},
			{name: "retry", image: tg.image, mounts: mount,
				script: "if [ -f /state/again ]; then exit 0; fi; touch /state/again; exit 42",
				extra:  "      restartPolicy: Never\n      restartPolicyRules:\n        - {action: Restart, exitCodes: {operator: In, values: [42]}}\n"},
			{name: "main", image: tg.image, script: "sleep 3600"},
		},
		volumes: []volYAML{emptyVol("state")},
	}.String())
	v := tg.waitPod(startTimeout, "rules", "retry done after one restart, once failed for good", func(v *podview.View) error {
		st := map[string]pod.ContainerStatus{}
		for _, cs := range v.Status.ContainerStatuses {
			st[cs.Name] = cs
		}
		once, retry := st["once"], st["retry"]
		switch {
		case once.State.Terminated == nil || once.State.Terminated.ExitCode != 3:
			return fmt.Errorf("once: %+v", once.State)
		case retry.State.Terminated == nil || retry.State.Terminated.ExitCode != 0 || retry.RestartCount != 1:
			return fmt.Errorf("retry: restarts %d, %+v", retry.RestartCount, retry.State)
		case st["main"].State.Running == nil:
			return fmt.Errorf("main: %+v", st["main"].State)
		}
		return nil
	})
	if v.Status.Phase != pod.PhaseRunning {
		t.Errorf("phase %s, want Running", v.Status.Phase)
	}
	// Well past the back-off: neither stopped container starts again.
	time.Sleep(3 * time.Second)
	v = tg.waitPod(startTimeout, "rules", "status", phaseIs(pod.PhaseRunning))
	for _, cs := range v.Status.ContainerStatuses {
		if want := map[string]int32{"once": 0, "retry": 1}; cs.Name != "main" && cs.RestartCount != want[cs.Name] {
			t.Errorf("%s restarted %d times, want %d", cs.Name, cs.RestartCount, want[cs.Name])
		}
	}
	tg.removePods("rules")
}
