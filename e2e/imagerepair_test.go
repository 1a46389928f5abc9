//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opencontainers/image-spec/identity"

	"tug/internal/testutil"
)

// TestImageRepairAfterDamagedSnapshot: a pod runs; tug is killed and the
// pod's task with it (as a power cut would), and the busybox binary in the
// committed snapshot of the image's top layer is truncated to 0 bytes, as
// ext4 leaves a file whose data never reached the disk. The started tug
// finds the container exited and restarts it: the restart looks at the
// entrypoint, finds it empty, removes the image's snapshots and content and
// fetches the image again — pulled from the local registry, or imported
// again from the image directory — and the pod runs with an intact binary,
// with an ImageRepaired event and a Warn line naming the image. In the
// third case the binary is removed and a new pod of the image comes while
// tug is down: its first start fails at task create, and the same repair
// follows.
func TestImageRepairAfterDamagedSnapshot(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		policy string
		ref    func(tg *tug) string
		opts   func(t *testing.T) tugOpts
		// remove removes busybox instead of truncating it, and a new pod
		// replaces the first one while tug is down.
		remove bool
	}{
		{
			name:   "pulled",
			policy: "IfNotPresent",
			ref:    func(*tug) string { return testutil.RegistryImage(t) },
			opts: func(t *testing.T) tugOpts {
				registry := os.Getenv(testutil.EnvRegistry)
				testutil.RegistryImage(t)
				return tugOpts{noImageArchive: true, beforeStart: func(tg *tug) { tg.relay(registry) }}
			},
		},
		{
			name:   "imported",
			policy: "Never",
			ref:    func(tg *tug) string { return tg.image },
			opts:   func(*testing.T) tugOpts { return tugOpts{} },
		},
		{
			name:   "removed-new-pod",
			policy: "Never",
			ref:    func(tg *tug) string { return tg.image },
			opts:   func(*testing.T) tugOpts { return tugOpts{} },
			remove: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg := startTug(t, tt.opts(t))
			ref := tt.ref(tg)
			tg.writeManifest("repair.yaml", shPod("repair", ref, "echo busybox runs; "+idle, "      imagePullPolicy: "+tt.policy+"\n"))
			c0 := tg.waitRunning(startTimeout, "repair", "main", 0)

			tg.Kill()
			killTask(t, tg, c0.ID)
			before := damageBusybox(t, tg, ref, tt.remove)
			name, attempt, damage := "repair", 1, "is empty"
			if tt.remove {
				must(t, os.Remove(tg.manifestPath("repair.yaml")))
				name, attempt, damage = "fresh", 0, "not found in the image"
				tg.writeManifest("fresh.yaml", shPod(name, ref, "echo busybox runs; "+idle, "      imagePullPolicy: "+tt.policy+"\n"))
			}

			tg.Start()
			tg.waitRunning(startTimeout, name, "main", attempt)
			line := tg.waitForOutput(logTimeout, "repaired damaged image", ref)
			if !strings.Contains(line, "WARN") {
				t.Errorf("the repair is logged as %q, want a Warn line", line)
			}
			tg.waitForOutput(logTimeout, "image damaged; removing its snapshots and content", "entrypoint", damage)
			if reasons := tg.eventReasons(tg.uid(name)); !slices.Contains(reasons, "ImageRepaired") {
				t.Errorf("events %v, want ImageRepaired", reasons)
			}
			after := busyboxFiles(t, tg, ref)
			if len(after) == 0 {
				t.Fatal("no busybox in the repaired image's snapshots")
			}
			for _, f := range after {
				if fi, err := os.Stat(f); err != nil || fi.Size() == 0 {
					t.Errorf("busybox of the repaired image %s: %v, size %d", f, err, sizeOf(fi))
				}
				if slices.Contains(before, f) {
					t.Errorf("the repaired image's busybox is the damaged file %s: its snapshot was not removed", f)
				}
			}
			for _, f := range before {
				if _, err := os.Stat(f); err == nil {
					t.Errorf("the damaged snapshot file %s is still there", f)
				}
			}
			tg.waitLog(logTimeout, name, "main", attempt, "busybox runs")
		})
	}
}

// killTask kills the task of container id with SIGKILL and waits for its
// exit, leaving the task for tug to reap.
func killTask(t *testing.T, tg *tug, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	cont, err := tg.client.LoadContainer(ctx, id)
	must(t, err)
	task, err := cont.Task(ctx, nil)
	must(t, err)
	exited, err := task.Wait(ctx)
	must(t, err)
	must(t, task.Kill(ctx, syscall.SIGKILL))
	select {
	case <-exited:
	case <-ctx.Done():
		t.Fatalf("task %s did not exit after SIGKILL", id)
	}
}

// damageBusybox truncates bin/busybox in the snapshots of ref's unpacked
// chain to 0 bytes, or removes it, and returns the files it damaged.
func damageBusybox(t *testing.T, tg *tug, ref string, remove bool) []string {
	t.Helper()
	files := busyboxFiles(t, tg, ref)
	if len(files) == 0 {
		t.Fatalf("no bin/busybox in the snapshots of %s", ref)
	}
	for _, f := range files {
		if remove {
			must(t, os.Remove(f))
		} else {
			must(t, os.Truncate(f, 0))
		}
	}
	return files
}

// busyboxFiles returns the bin/busybox files of the layers of ref's
// unpacked chain in tug's namespace, found through the mounts of a view
// of the chain (a bind mount of one layer, or overlay lowerdirs).
func busyboxFiles(t *testing.T, tg *tug, ref string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	img, err := tg.client.GetImage(ctx, ref)
	must(t, err)
	diffIDs, err := img.RootFS(ctx)
	must(t, err)
	// The view is held by a lease: containerd's garbage collection (which
	// tug's removals trigger) collects a snapshot nothing references.
	ctx, done, err := tg.client.WithLease(ctx)
	must(t, err)
	defer func() { must(t, done(context.Background())) }()
	sn := tg.client.SnapshotService("overlayfs") // tug's default
	key := fmt.Sprintf("e2e-damage-%d", time.Now().UnixNano())
	mounts, err := sn.View(ctx, key, identity.ChainID(diffIDs).String())
	must(t, err)
	defer func() { must(t, ignoreNotFound(sn.Remove(ctx, key))) }()
	var dirs []string
	for _, m := range mounts {
		switch m.Type {
		case "bind":
			dirs = append(dirs, m.Source)
		case "overlay":
			for _, o := range m.Options {
				if v, ok := strings.CutPrefix(o, "lowerdir="); ok {
					dirs = append(dirs, strings.Split(v, ":")...)
				}
			}
		}
	}
	var out []string
	for _, d := range dirs {
		f := filepath.Join(d, "bin", "busybox")
		if fi, err := os.Lstat(f); err == nil && fi.Mode().IsRegular() {
			out = append(out, f)
		}
	}
	return out
}

func sizeOf(fi os.FileInfo) int64 {
	if fi == nil {
		return -1
	}
	return fi.Size()
}
