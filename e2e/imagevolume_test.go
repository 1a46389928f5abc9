//go:build e2e

package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"tug/internal/pod"
	"tug/internal/podview"
	"tug/internal/testutil"
)

// artifactRef names the artifact that TestImageVolume sideloads.
const artifactRef = "tug.test/artifact:v1"

// imageVolumeScript reads the image volumes of imageVolumePod and tries to
// write to one, each result on a line of its own.
const imageVolumeScript = `echo "dirfile=$(cat /volume/dir/file)"
echo "file=$(cat /volume/file)"
echo "second=$(cat /volume/dir/second)"
echo "sub=$(cat /sub/file)"
test -x /bb/bin/busybox && echo busybox-there
touch /volume/x 2>/dev/null || echo "touch: $(touch /volume/x 2>&1 | sed 's/.*: //')"
touch /bb/x 2>/dev/null || echo "touch bb: $(touch /bb/x 2>&1 | sed 's/.*: //')"
` + idle

// TestImageVolume: image volumes from sideloaded archives. An OCI artifact
// (config media type application/vnd.oci.empty.v1+json, one gzip image
// layer and one plain-tar data layer of a custom media type) is mounted
// read-only with its layers merged, whole and by subPath; the test image,
// a runnable image, is mounted too (readOnly: false in the manifest, read-only
// all the same). Writes fail with "Read-only file system". The container's
// status names each volume's image digest. A volume whose image is missing
// under pullPolicy Never leaves its container waiting ErrImageNeverPull; a
// subPath the image does not have fails the container's creation with a
// clear message. After a tug restart the pod's volumes are adopted, and
// when the pod goes, their mounts and snapshot views go with it.
func TestImageVolume(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{beforeStart: func(tg *tug) {
		writeArtifactArchive(t, filepath.Join(tg.imageDir, "artifact.tar"), artifactRef)
	}})
	tg.writeManifest("imgvol.yaml", shPod("imgvol", tg.image, imageVolumeScript,
		`      volumeMounts:
        - {name: volume, mountPath: /volume}
        - {name: volume, mountPath: /sub, subPath: dir}
        - {name: busybox, mountPath: /bb, readOnly: false}
  volumes:
    - name: volume
      image: {reference: "`+artifactRef+`", pullPolicy: Never}
    - name: busybox
      image: {reference: "`+tg.image+`"}
`))
	tg.writeManifest("nevervol.yaml", shPod("nevervol", tg.image, idle,
		`      volumeMounts:
        - {name: volume, mountPath: /volume}
  volumes:
    - name: volume
      image: {reference: "tug.test/missing:v1", pullPolicy: Never}
`))
	tg.writeManifest("subvol.yaml", shPod("subvol", tg.image, idle,
		`      volumeMounts:
        - {name: volume, mountPath: /volume, subPath: no/such/dir}
  volumes:
    - name: volume
      image: {reference: "`+artifactRef+`", pullPolicy: Never}
`))

	tg.waitRunning(startTimeout, "imgvol", "main", 0)
	tg.waitLog(logTimeout, "imgvol", "main", 0, "dirfile=1", "file=2", "second=3", "sub=1", "busybox-there",
		"touch: Read-only file system", "touch bb: Read-only file system")

	v := tg.waitPod(startTimeout, "imgvol", "the image volumes' digests in its status", func(v *podview.View) error {
		cs := statusOf(v, "main")
		got := map[string]string{}
		for _, m := range cs.VolumeMounts {
			if m.Image != nil {
				got[m.Name+" "+m.MountPath] = m.Image.ImageRef
			}
			if !m.ReadOnly {
				return fmt.Errorf("volumeMount %s at %s is not read-only", m.Name, m.MountPath)
			}
		}
		for _, k := range []string{"volume /volume", "volume /sub", "busybox /bb"} {
			if !strings.Contains(got[k], "@sha256:") {
				return fmt.Errorf("volumeMounts %v: no image digest for %s", got, k)
			}
		}
		if !strings.HasPrefix(got["busybox /bb"], tg.image+"@") {
			return fmt.Errorf("volumeMounts %v: busybox's is not %s@digest", got, tg.image)
		}
		return nil
	})
	t.Logf("volume mounts: %+v", statusOf(&v, "main").VolumeMounts)

	tg.waitPod(startTimeout, "nevervol", "main waiting ErrImageNeverPull", func(v *podview.View) error {
		if w := statusOf(v, "main").State.Waiting; w == nil || w.Reason != pod.ReasonErrImageNeverPull || !strings.Contains(w.Message, "tug.test/missing:v1") {
			return fmt.Errorf("main waiting %+v, want ErrImageNeverPull naming the image", w)
		}
		return nil
	})
	tg.waitPod(startTimeout, "subvol", "main waiting on the missing subPath", func(v *podview.View) error {
		if w := statusOf(v, "main").State.Waiting; w == nil || w.Reason != pod.ReasonCreateContainerError || !strings.Contains(w.Message, "does not exist in the image volume") {
			return fmt.Errorf("main waiting %+v, want CreateContainerError saying the subPath does not exist", w)
		}
		return nil
	})

	// A pod's removal takes its views (subvol made one before its
	// container failed).
	tg.removePods("nevervol")
	removeImageVolumePod(t, tg, "subvol")

	// A restart adopts the views and mounts; the pod's removal takes them.
	uid := tg.uid("imgvol")
	if err := tg.Stop(); err != nil {
		t.Fatal(err)
	}
	tg.Start()
	tg.waitLog(logTimeout, "imgvol", "main", 0, "dirfile=1")
	if n := imageViews(t, tg, uid); n != 2 {
		t.Errorf("%d image volume views of pod imgvol after the restart, want 2", n)
	}
	removeImageVolumePod(t, tg, "imgvol")
	dir := filepath.Join(tg.rootDir, "pods", uid)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("pod directory %s: %v, want it gone", dir, err)
	}
}

// TestImageVolumePullFailure: an image volume naming a tag the test
// registry does not have leaves its container waiting on the pull
// (ImagePullBackOff once retried, naming the image), with no container
// created, as a container's own image does.
func TestImageVolumePullFailure(t *testing.T) {
	t.Parallel()
	ref := testutil.RegistryImage(t)
	registry := os.Getenv(testutil.EnvRegistry)
	tg := startTug(t, tugOpts{beforeStart: func(tg *tug) { tg.relay(registry) }})
	missing := ref[:strings.LastIndex(ref, ":")] + ":no-such-tag"
	tg.writeManifest("pullvol.yaml", shPod("pullvol", tg.image, idle,
		`      volumeMounts:
        - {name: volume, mountPath: /volume}
  volumes:
    - name: volume
      image: {reference: "`+missing+`", pullPolicy: IfNotPresent}
`))
	seen := map[string]bool{}
	tg.waitPod(startTimeout, "pullvol", "main waiting ImagePullBackOff", func(v *podview.View) error {
		w := statusOf(v, "main").State.Waiting
		if w != nil && strings.Contains(w.Message, "no-such-tag") {
			seen[w.Reason] = true
		}
		if !seen[pod.ReasonImagePullBackOff] {
			return fmt.Errorf("main waiting %+v; reasons seen %v", w, seen)
		}
		return nil
	})
	if cs, err := tg.podContainers(tg.uid("pullvol")); err != nil || len(cs) > 0 {
		t.Errorf("containers of a pod whose image volume cannot be pulled: %v, %v", cs, err)
	}
}

// TestImageVolumeFromRegistry: an image volume pulled from the test
// registry (a pull that does not unpack, then the volume's own unpack) is
// mounted, and the status names its digest.
func TestImageVolumeFromRegistry(t *testing.T) {
	t.Parallel()
	ref := testutil.RegistryImage(t)
	registry := os.Getenv(testutil.EnvRegistry)
	tg := startTug(t, tugOpts{beforeStart: func(tg *tug) { tg.relay(registry) }})
	tg.writeManifest("regvol.yaml", shPod("regvol", tg.image, "test -f /vol/bin/busybox && echo pulled-volume; "+idle,
		`      volumeMounts:
        - {name: vol, mountPath: /vol}
  volumes:
    - name: vol
      image: {reference: "`+ref+`", pullPolicy: Always}
`))
	tg.waitRunning(startTimeout, "regvol", "main", 0)
	tg.waitLog(logTimeout, "regvol", "main", 0, "pulled-volume")
	tg.waitPod(startTimeout, "regvol", "the volume's digest in its status", func(v *podview.View) error {
		for _, m := range statusOf(v, "main").VolumeMounts {
			if m.Name == "vol" && m.Image != nil && strings.HasPrefix(m.Image.ImageRef, ref+"@sha256:") {
				return nil
			}
		}
		return fmt.Errorf("volumeMounts %+v: no %s@digest", statusOf(v, "main").VolumeMounts, ref)
	})
	removeImageVolumePod(t, tg, "regvol")
}

// removeImageVolumePod removes the pod named name and waits until its image
// volume views are gone with it.
func removeImageVolumePod(t *testing.T, tg *tug, name string) {
	t.Helper()
	uid := tg.uid(name)
	tg.removePods(name)
	tg.waitFor(removeTimeout, "the image volume views of "+name+" removed", func() (bool, error) {
		if n := imageViews(t, tg, uid); n != 0 {
			return false, fmt.Errorf("%d views left", n)
		}
		return true, nil
	})
}

// TestImageVolumeUpdateBlocked: a running pod updated so that its image
// volume names an image that is not there (pullPolicy Never), with
// rollback off, keeps its old container running: the volume's image is
// ensured before the old container is stopped, as a container's image is.
func TestImageVolumeUpdateBlocked(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{args: rolloutArgs, beforeStart: func(tg *tug) {
		writeArtifactArchive(t, filepath.Join(tg.imageDir, "artifact.tar"), artifactRef)
	}})
	noRollback := map[string]string{pod.AnnotationRolloutTimeout: "0"}
	volume := func(ref string) string {
		return `      volumeMounts:
        - {name: volume, mountPath: /volume}
  volumes:
    - name: volume
      image: {reference: "` + ref + `", pullPolicy: Never}
`
	}
	const script = "cat /volume/file; while :; do sleep 1; done"
	tg.writeManifest("updvol.yaml", rolloutPod("updvol", tg.image, script, noRollback, volume(artifactRef)))
	c := tg.waitRunning(startTimeout, "updvol", "main", 0)
	tg.waitLog(logTimeout, "updvol", "main", 0, "2")

	tg.writeManifest("updvol.yaml", rolloutPod("updvol", tg.image, script, noRollback, volume("tug.test/missing:v1")))
	v := tg.waitPod(startTimeout, "updvol", "the update blocked on its image volume", func(v *podview.View) error {
		u := conditionOf(v, pod.ConditionUpdateReady)
		if u.Status != "False" || u.Reason != pod.ReasonErrImageNeverPull || !strings.Contains(u.Message, "tug.test/missing:v1") {
			return fmt.Errorf("%s condition %+v, want False (ErrImageNeverPull) naming the image", pod.ConditionUpdateReady, u)
		}
		return nil
	})
	if cs := statusOf(&v, "main"); cs.State.Running == nil || cs.ContainerID != "containerd://"+c.ID {
		t.Errorf("main %+v, want the old container %s running", cs, c.ID)
	}
	removeImageVolumePod(t, tg, "updvol")
}

// imageViews counts the image volume views of pod uid in tug's namespace.
func imageViews(t *testing.T, tg *tug, uid string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	n := 0
	err := tg.client.SnapshotService("overlayfs").Walk(ctx, func(_ context.Context, info snapshots.Info) error {
		if info.Kind == snapshots.KindView && strings.HasPrefix(info.Name, "tug-image-volume/"+uid+"/") {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// writeArtifactArchive writes an OCI layout archive at path holding an
// artifact named name: an empty config (application/vnd.oci.empty.v1+json)
// and two layers, a gzip image layer with dir/file ("1") and file ("2"),
// and a plain tar data layer of a custom media type with dir/second ("3").
func writeArtifactArchive(t *testing.T, path, name string) {
	t.Helper()
	blobs := map[digest.Digest][]byte{}
	add := func(mediaType string, b []byte) ocispec.Descriptor {
		d := digest.FromBytes(b)
		blobs[d] = b
		return ocispec.Descriptor{MediaType: mediaType, Digest: d, Size: int64(len(b))}
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(tarOf(t, map[string]string{"dir/file": "1\n", "file": "2\n"})); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	manifest := ocispec.Manifest{
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: "application/vnd.tug.test.artifact.v1",
		Config:       add("application/vnd.oci.empty.v1+json", []byte("{}")),
		Layers: []ocispec.Descriptor{
			add(ocispec.MediaTypeImageLayerGzip, gz.Bytes()),
			add("application/vnd.tug.test.data.v1.tar", tarOf(t, map[string]string{"dir/second": "3\n"})),
		},
	}
	manifest.SchemaVersion = 2
	mb, err := json.Marshal(manifest)
	if err != nil {
		t.Fatal(err)
	}
	mdesc := add(ocispec.MediaTypeImageManifest, mb)
	mdesc.Annotations = map[string]string{"io.containerd.image.name": name}
	index := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{mdesc}}
	index.SchemaVersion = 2
	ib, err := json.Marshal(index)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"oci-layout": `{"imageLayoutVersion":"1.0.0"}`,
		"index.json": string(ib),
	}
	for d, b := range blobs {
		files["blobs/sha256/"+d.Encoded()] = string(b)
	}
	if err := os.WriteFile(path, tarOf(t, files), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tarOf returns a tar archive of files (path: content), with the
// directories their paths need.
func tarOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	mtime := time.Unix(1700000000, 0)
	for name, body := range files {
		parts := strings.Split(name, "/")
		for i := 1; i < len(parts); i++ {
			if d := strings.Join(parts[:i], "/"); !dirs[d] {
				dirs[d] = true
				if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: mtime}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(body)), ModTime: mtime}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
