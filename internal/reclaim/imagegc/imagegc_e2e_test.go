//go:build e2e

package imagegc_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/content"
	ctrimages "github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/opencontainers/go-digest"
	imagespec "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"tug/internal/images"
	"tug/internal/reclaim/imagegc"
	tugtest "tug/internal/testutil"
)

// runtimeImages adapts the image manager to the image GC's interfaces, as
// agent does.
type runtimeImages struct {
	rt   *images.Manager
	path string
	used map[string]bool
}

func (r runtimeImages) ListImages(ctx context.Context) ([]imagegc.Image, error) {
	list, err := r.rt.Stored(ctx)
	var out []imagegc.Image
	for _, si := range list {
		out = append(out, imagegc.Image{ID: si.Digest, Refs: si.Names, Size: si.Size, Pinned: si.Pinned, CreatedAt: si.CreatedAt})
	}
	return out, err
}

func (r runtimeImages) RemoveImage(ctx context.Context, ref string) error {
	return r.rt.Remove(ctx, ref)
}

func (r runtimeImages) ImagesInUse(context.Context) (map[string]bool, error) { return r.used, nil }

func (r runtimeImages) ImageFS(context.Context) (uint64, uint64, error) {
	c, a, err := statfs(r.path)
	return uint64(c), uint64(a), err
}

func statfs(path string) (capacity, available int64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, 0, err
	}
	return int64(st.Blocks) * st.Bsize, int64(st.Bavail) * st.Bsize, nil
}

// privateContainerd starts a containerd whose root is a small ext4
// filesystem loop-mounted for the test, and returns its socket and root.
func privateContainerd(t *testing.T, sizeMiB int) (sock, root string) {
	t.Helper()
	tugtest.RequireRoot(t)
	for _, c := range []string{"containerd", "mkfs.ext4", "mount", "umount"} {
		tugtest.RequireCommand(t, c)
	}
	dir := t.TempDir()
	img, root := filepath.Join(dir, "fs.img"), filepath.Join(dir, "root")
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"truncate", "-s", fmt.Sprintf("%dM", sizeMiB), img},
		{"mkfs.ext4", "-q", "-F", "-m", "0", img},
		{"mount", "-o", "loop", img, root},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v: %s", args, err, out)
		}
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", root).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", root, err, out)
		}
	})
	sock = filepath.Join(dir, "containerd.sock")
	cfg := fmt.Sprintf("version = 2\nroot = %q\nstate = %q\ndisabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n[grpc]\n  address = %q\n[ttrpc]\n  address = %q\n",
		filepath.Join(root, "containerd"), filepath.Join(dir, "state"), sock, sock+".ttrpc")
	if err := os.WriteFile(filepath.Join(dir, "containerd.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var logBuf bytes.Buffer
	cmd := exec.Command("containerd", "--config", filepath.Join(dir, "containerd.toml"))
	cmd.Stdout, cmd.Stderr = &logBuf, &logBuf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("containerd log:\n%s", logBuf.String())
		}
	})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("private containerd did not start:\n%s", logBuf.String())
		}
	}
	return sock, root
}

// syntheticImage stores an image whose one layer is size random bytes
// (unique content), labelled so that containerd's GC keeps the blobs while
// the image exists, and names it ref.
func syntheticImage(ctx context.Context, t *testing.T, client *containerd.Client, ref string, size int) {
	t.Helper()
	cs := client.ContentStore()
	write := func(mediaType string, data []byte, labels map[string]string) ocispec.Descriptor {
		desc := ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(data), Size: int64(len(data))}
		if err := content.WriteBlob(ctx, cs, desc.Digest.String(), bytes.NewReader(data), desc, content.WithLabels(labels)); err != nil {
			t.Fatal(err)
		}
		return desc
	}
	layerData := make([]byte, size)
	_, _ = rand.Read(layerData)
	layer := write(ocispec.MediaTypeImageLayer, layerData, nil)
	cfgData, _ := json.Marshal(ocispec.Image{Platform: ocispec.Platform{OS: "linux", Architecture: "amd64"}, RootFS: ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{layer.Digest}}})
	config := write(ocispec.MediaTypeImageConfig, cfgData, nil)
	mfData, _ := json.Marshal(ocispec.Manifest{Versioned: imagespec.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest, Config: config, Layers: []ocispec.Descriptor{layer}})
	manifest := write(ocispec.MediaTypeImageManifest, mfData, map[string]string{
		"containerd.io/gc.ref.content.config": config.Digest.String(),
		"containerd.io/gc.ref.content.l.0":    layer.Digest.String(),
	})
	if _, err := client.ImageService().Create(ctx, ctrimages.Image{Name: ref, Target: manifest}); err != nil {
		t.Fatal(err)
	}
}

// TestImageGCOnSmallImageFS: on a 96 MiB image filesystem filled past the
// high threshold, the GC removes the unused image and keeps the one the
// URL checkpoint names and the one whose sideloaded archive is still in
// the image directory; once that archive is removed, its image goes too.
func TestImageGCOnSmallImageFS(t *testing.T) {
	_, archive := tugtest.TestImage(t)
	sock, root := privateContainerd(t, 96)
	ctx := context.Background()
	const ns = "tug-imagegc"
	dir := t.TempDir()
	imageDir := filepath.Join(dir, "images")
	if err := os.MkdirAll(imageDir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(imageDir, "busybox.tar"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	client, err := containerd.New(sock, containerd.WithDefaultNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	rt := images.New(images.Config{Client: client, Namespace: ns, Snapshotter: "overlayfs", RootDir: filepath.Join(dir, "root"),
		ImageDir: imageDir, Log: tugtest.Logger(t)})
	if err := rt.ImportArchives(ctx); err != nil {
		t.Fatal(err)
	}
	nsCtx := namespaces.WithNamespace(ctx, ns)
	syntheticImage(nsCtx, t, client, "example.com/checkpointed:1", 6<<20)
	syntheticImage(nsCtx, t, client, "example.com/unused:1", 12<<20)

	fsPath, err := rt.FSPath(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rel, err := filepath.Rel(root, fsPath); err != nil || !filepath.IsLocal(rel) {
		t.Fatalf("ImageFSPath() = %s, want a path under the private root %s", fsPath, root)
	}
	// Fill the filesystem to 88% (above the high threshold of 85): the
	// unused image's 12 MiB bring it back under the low threshold of 80.
	capacity, available, err := statfs(fsPath)
	if err != nil {
		t.Fatal(err)
	}
	fill := capacity*88/100 - (capacity - available)
	if fill <= 0 {
		t.Fatalf("filesystem already %d%% used", (capacity-available)*100/capacity)
	}
	if err := os.WriteFile(filepath.Join(root, "filler"), make([]byte, fill), 0o600); err != nil {
		t.Fatal(err)
	}
	capacity, available, _ = statfs(fsPath)
	t.Logf("image filesystem %d%% used before the collection", (capacity-available)*100/capacity)

	adapter := runtimeImages{rt: rt, path: fsPath, used: map[string]bool{"example.com/checkpointed:1": true}}
	reg := prometheus.NewRegistry()
	m, err := imagegc.New(imagegc.Config{Images: adapter, InUse: adapter, FS: adapter, Registerer: reg, Log: tugtest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.GarbageCollect(ctx); err != nil {
		t.Fatalf("GarbageCollect: %v", err)
	}
	names := func() []string {
		list, err := client.ImageService().List(nsCtx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, img := range list {
			out = append(out, img.Name)
		}
		slices.Sort(out)
		return out
	}
	busybox := "docker.io/library/busybox:1.35"
	if got, want := names(), []string{busybox, "example.com/checkpointed:1"}; !slices.Equal(got, want) {
		t.Errorf("images after the collection: %q, want %q", got, want)
	}
	capacity, available, _ = statfs(fsPath)
	if pct := (capacity - available) * 100 / capacity; pct >= 80 {
		t.Errorf("image filesystem %d%% used after the collection, want under the low threshold 80", pct)
	} else {
		t.Logf("image filesystem %d%% used after the collection", pct)
	}
	if got, err := testutil.GatherAndCount(reg, "kubelet_image_garbage_collected_total"); err != nil || got != 1 {
		t.Errorf("kubelet_image_garbage_collected_total: %d series, %v; want 1", got, err)
	}
	if mfs, err := reg.Gather(); err != nil || len(mfs) != 1 || mfs[0].GetMetric()[0].GetCounter().GetValue() != 1 {
		t.Errorf("kubelet_image_garbage_collected_total = %v, %v; want 1", mfs, err)
	}

	// The sideload rule: with its archive gone, busybox is an ordinary
	// unused image.
	if err := os.Remove(filepath.Join(imageDir, "busybox.tar")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.DeleteUnusedImages(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := names(), []string{"example.com/checkpointed:1"}; !slices.Equal(got, want) {
		t.Errorf("images after the archive was removed: %q, want %q", got, want)
	}
	_ = os.Remove(filepath.Join(root, "filler"))
}
