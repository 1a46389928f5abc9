//go:build e2e

package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"tug/internal/podview"
	"tug/internal/statusreport"
	"tug/internal/testutil"
)

// stateFiles returns tug's files under its root dir: every regular file
// but the pods' own data (their volumes and the files tug mounts into
// their containers, which tug writes and does not read back) and the raw
// output the shims write.
func (tg *tug) stateFiles() []string {
	tg.t.Helper()
	var out []string
	err := filepath.WalkDir(tg.rootDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(tg.rootDir, path)
		parts := strings.Split(rel, string(filepath.Separator))
		if d.IsDir() {
			if len(parts) == 3 && parts[0] == "pods" && parts[2] != "logs" {
				return filepath.SkipDir // volumes, etc files, termination messages
			}
			return nil
		}
		if !d.Type().IsRegular() || strings.HasSuffix(path, ".stdout") || strings.HasSuffix(path, ".stderr") || strings.Contains(d.Name(), ".tmp-") {
			return nil
		}
		out = append(out, path)
		return nil
	})
	if err != nil {
		tg.t.Fatal(err)
	}
	return out
}

// TestDamagedStateFilesAllAtOnce: a tug with pods from the file and URL
// sources, one in a user namespace of its own, one holding a device, a
// CronJob's active run, pod networking, signed status documents and
// remote write is killed
// (SIGKILL), and every file under its root dir (the log pumps' state files
// among them) is damaged at once, half truncated to zero, half NUL-filled,
// as a power cut on ext4 leaves them. The next tug comes up, adopts every
// pod (same containers, same processes), says Warn for each damaged file
// it reads at start, naming it, and rewrites them: a third start warns
// about none.
func TestDamagedStateFilesAllAtOnce(t *testing.T) {
	t.Parallel()
	testutil.RequireCommand(t, "nft")
	devDir := t.TempDir()
	mknodAll(t, devDir, dongleDevices[:2]...)
	image, _ := testutil.TestImage(t)
	web := newManifestServer(t, good(shPod("urlp", image, idle)))
	rw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(rw.Close)
	tg, recv, _ := statusTug(t,
		"--manifest-url", web.url, "--http-check-frequency", httpCheck.String(),
		"--device-resource", "example.com/dongle="+filepath.Join(devDir, "ttyFake*"),
		"--metrics-remote-write-url", rw.URL+"/api/v1/write", "--metrics-push-interval", "2s",
		"--rollout-min-ready", "1s")
	for _, u := range []string{web.url, rw.URL} {
		p, _ := url.Parse(u)
		tg.relay(p.Host)
	}
	tg.writeManifest("nightly.yaml", cronJob(tg, "nightly", "echo start; "+idle, "  concurrencyPolicy: Forbid\n"))
	tg.writeManifest("plain.yaml", shPod("plain", tg.image, "echo plain; "+idle))
	tg.writeManifest("users.yaml", usernsPod("users", tg.image))
	tg.writeManifest("dongle.yaml", donglePod("dongle", tg.image, 1, idle))
	// A CronJob's run, active when tug is killed: its pod must be adopted,
	// not removed as an orphan of a lost cronjob/state.json, nor run again.
	slot := tg.waitRuns(cronTimeout, "nightly", "a run", func(slots []int64, _ map[int64]podview.View) error {
		if len(slots) == 0 {
			return fmt.Errorf("no run")
		}
		return nil
	})[0]
	files := []string{"plain", "users", "dongle", runPod("nightly", slot)}
	all := append(slices.Clone(files), "urlp")
	tg.waitAllRunning(logTimeout, all)
	anyDoc := func(statusreport.Document) error { return nil }
	recv.waitDoc(tg, startTimeout, 0, "a signed status document", anyDoc)
	// Each pod's spec becomes its last good one (rollout/<uid>.json).
	tg.waitFor(logTimeout, "a rollout record per pod", func() (bool, error) {
		recs, _ := filepath.Glob(filepath.Join(tg.rootDir, "rollout", "*.json"))
		return len(recs) == len(all), fmt.Errorf("%d records", len(recs))
	})
	want := tg.snapshotTasks(files)
	for id, c := range tg.tasksOf(urlUID(web.url, "urlp")) {
		want[id] = c
	}

	tg.Kill()
	damaged := tg.stateFiles()
	for i, f := range damaged {
		d := testutil.DamageEmpty
		if i%2 == 1 {
			d = testutil.DamageNULFilled
		}
		testutil.DamageFile(t, f, d)
		t.Logf("%s: %s", d, f)
	}
	for _, must := range []string{"status/sequence", "userns.json", "devices/allocations.json", "network/leases/10.87.0.2", "cronjob/state.json"} {
		if !slices.Contains(damaged, filepath.Join(tg.rootDir, must)) {
			t.Errorf("%s was not there to damage", must)
		}
	}
	mark := len(tg.output())
	tg.Start()
	tg.waitAllRunning(logTimeout, all)
	if err := tg.sameTasks(want); err != nil {
		t.Fatalf("after the damage: %v", err)
	}
	if !tg.running() {
		t.Fatal("tug exited")
	}
	// Some files are read by components that start with the loop (the
	// log pumps): their Warns come within moments.
	var quiet []string
	tg.waitFor(startTimeout, "a Warn naming each damaged file tug reads at start", func() (bool, error) {
		warned := warnedFiles(tg.output()[mark:])
		quiet = quiet[:0]
		var missing []string
		for _, f := range damaged {
			if !warned[f] {
				quiet = append(quiet, f)
				if readAtStart(tg.rootDir, f) {
					missing = append(missing, f)
				}
			}
		}
		if len(missing) > 0 {
			return false, fmt.Errorf("no Warn names %q", missing)
		}
		return true, nil
	})
	t.Logf("%d files damaged, %d named by a Warn; not named (not read at start): %q", len(damaged), len(damaged)-len(quiet), quiet)
	// The sequence goes on from the clock: the receiver takes the next
	// document (it refuses a version that does not go up).
	recv.waitDoc(tg, startTimeout, recv.count(), "a signed status document after the damage", anyDoc)
	if _, refused := recv.since(0); refused > 0 {
		t.Errorf("the receiver refused %d documents", refused)
	}

	// Each file is rewritten (or removed: a rollout record that said
	// nothing any more, a lease of no pod); the marker that tug turned IP
	// forwarding on says so by being there.
	tg.waitFor(logTimeout, "every damaged file rewritten or removed", func() (bool, error) {
		for _, f := range damaged {
			if strings.HasSuffix(f, "ip_forward-enabled-by-tug") {
				continue
			}
			data, err := os.ReadFile(f)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return false, err
			}
			if len(bytes.Trim(data, "\x00")) == 0 {
				return false, fmt.Errorf("%s still holds %d bytes, all NUL", f, len(data))
			}
		}
		return true, nil
	})

	// The files are valid again: a further kill and start warns about none.
	tg.Kill()
	mark = len(tg.output())
	tg.Start()
	tg.waitAllRunning(logTimeout, all)
	if err := tg.sameTasks(want); err != nil {
		t.Fatalf("after the second restart: %v", err)
	}
	// The run's slot ran once; with Forbid and the run active, no other
	// slot has started.
	if slots, _ := tg.mustRuns("nightly"); !slices.Equal(slots, []int64{slot}) {
		t.Errorf("CronJob runs %v, want only the adopted run %d", slots, slot)
	}
	for f := range warnedFiles(tg.output()[mark:]) {
		if strings.HasPrefix(f, tg.rootDir+"/") {
			t.Errorf("the second restart warns about %s", f)
		}
	}
}

// warnedFiles returns the file= of tug's WARN lines in out.
func warnedFiles(out string) map[string]bool {
	got := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(line, "level=WARN") {
			continue
		}
		_, rest, ok := strings.Cut(line, " file=")
		if !ok {
			continue
		}
		if strings.HasPrefix(rest, `"`) {
			end := strings.Index(rest[1:], `"`)
			got[rest[1:1+end]] = true
			continue
		}
		f, _, _ := strings.Cut(rest, " ")
		got[f] = true
	}
	return got
}

// readAtStart reports whether f, a file below root, is one tug reads at
// start (docs/damaged-files.md): a damaged one must be named by a Warn.
func readAtStart(root, f string) bool {
	rel, _ := filepath.Rel(root, f)
	switch {
	case rel == "status/sequence", rel == "userns.json", rel == "devices/allocations.json", rel == "cronjob/state.json", rel == "timefloor":
		return true
	case strings.HasPrefix(rel, "rollout/"), strings.HasPrefix(rel, "checkpoints/"), strings.HasPrefix(rel, "network/leases/"):
		return true
	case strings.HasPrefix(rel, "pods/") && strings.HasSuffix(rel, ".state"):
		return true
	}
	return false
}
