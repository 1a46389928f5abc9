//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/snapshots"
)

// TestContainerGCKeepsThePreviousAttempt: a crash-looping container keeps
// exactly its current and its previous attempt in containerd (the previous
// one for its exit status and "tug logs --previous"), and every removed
// attempt's snapshot goes with it: the namespace's active snapshots are
// exactly the containers' (what the sync loop's start and housekeeping
// do; the test pins it).
func TestContainerGCKeepsThePreviousAttempt(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{args: []string{"--crash-loop-back-off-initial", "100ms", "--crash-loop-back-off-max", "200ms"}})
	tg.writeManifest("crash.yaml", shPod("crash", tg.image, "exit 3"))
	uid := tg.uid("crash")
	const wantAttempt = 6
	tg.waitFor(startTimeout, fmt.Sprintf("attempt %d", wantAttempt), func() (bool, error) {
		cs, err := tg.podContainers(uid)
		if err != nil {
			return false, err
		}
		var attempts []int
		for _, c := range cs {
			attempts = append(attempts, c.Attempt())
		}
		slices.Sort(attempts)
		// Whenever we look: at most two attempts, consecutive.
		if len(attempts) > 2 || (len(attempts) == 2 && attempts[1] != attempts[0]+1) {
			return false, fmt.Errorf("%w: attempts %v in containerd: %v", errStop, attempts, cs)
		}
		return len(attempts) == 2 && attempts[0] >= wantAttempt-1, nil
	})
	cs, err := tg.podContainers(uid)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 {
		t.Fatalf("containers of the pod: %v, want the current and the previous attempt", cs)
	}
	// Snapshots: one per existing container, none for removed attempts.
	// (The crash loop goes on meanwhile: list the snapshots, then the
	// containers again, and allow the one being created or removed.)
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	var active []string
	err = tg.client.SnapshotService(cs[0].Snapshotter).Walk(ctx, func(_ context.Context, info snapshots.Info) error {
		if info.Kind == snapshots.KindActive {
			active = append(active, info.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	after, err := tg.containers()
	if err != nil {
		t.Fatal(err)
	}
	if len(active) > 3 || len(after) > 3 {
		t.Errorf("%d active snapshots %v and %d containers %v after %d attempts: removed attempts left snapshots", len(active), active, len(after), after, wantAttempt)
	}
	for _, c := range cs {
		if !slices.Contains(active, c.SnapshotKey) && slices.ContainsFunc(after, func(a ctr) bool { return a.ID == c.ID }) {
			t.Errorf("container %v has no active snapshot %q", c, c.SnapshotKey)
		}
	}
}

// TestHousekeepingRemovesLeftDirectories: a pod that is gone and left only
// its directory under <root-dir>/pods (an emptyDir with a file) and its log
// directory, nothing in containerd, no namespace, network or cgroup (a
// crash half-way through its removal), has both removed by housekeeping,
// while the directories of the pod that runs stay.
func TestHousekeepingRemovesLeftDirectories(t *testing.T) {
	t.Parallel()
	const gone = "0badc0de-0000-4000-8000-000000000015"
	var leftPod, leftLogs string
	tg := startTug(t, tugOpts{beforeStart: func(tg *tug) {
		leftPod = filepath.Join(tg.rootDir, "pods", gone)
		leftLogs = filepath.Join(tg.logsDir, "default_gone-e2e_"+gone)
		for _, f := range []string{filepath.Join(leftPod, "volumes", "empty-dir", "scratch", "data"), filepath.Join(leftLogs, "main", "0.log")} {
			if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
				tg.t.Fatal(err)
			}
			if err := os.WriteFile(f, []byte("left behind\n"), 0o644); err != nil {
				tg.t.Fatal(err)
			}
		}
	}})
	tg.writeManifest("web.yaml", shPod("web", tg.image, idle))
	tg.waitRunning(startTimeout, "web", "main", 0)
	tg.waitFor(startTimeout, "the gone pod's directories to be removed", func() (bool, error) {
		_, errPod := os.Stat(leftPod)
		_, errLogs := os.Stat(leftLogs)
		return os.IsNotExist(errPod) && os.IsNotExist(errLogs), nil
	})
	tg.waitForOutput(startTimeout, "removing the directories of a pod that is gone", gone)
	uid := tg.uid("web")
	logDirs, err := filepath.Glob(filepath.Join(tg.logsDir, "*_"+uid))
	if err != nil || len(logDirs) != 1 {
		t.Errorf("log directory of the running pod: %v, %v, want one", logDirs, err)
	}
	if _, err := os.Stat(filepath.Join(tg.rootDir, "pods", uid)); err != nil {
		t.Errorf("directory of the running pod: %v", err)
	}
	if c, ok, err := tg.container(uid, "main"); err != nil || !ok || c.Status != containerd.Running {
		t.Errorf("the running pod's container: %v %v %v", c, ok, err)
	}
}
