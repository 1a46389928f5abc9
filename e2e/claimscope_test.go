//go:build e2e

package e2e

import (
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"tug/internal/testutil"
)

const claimData = `apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests: {storage: 10Mi}
`

const (
	claimMount  = "    volumeMounts:\n    - {name: data, mountPath: /data}\n"
	claimVolume = "  volumes:\n  - name: data\n    persistentVolumeClaim: {claimName: data}\n"
)

// TestClaimsBelongToTheirSource: the file source and the URL source both
// define the claim default/data. The file pod keeps the directory an
// earlier tug left at <root-dir>/claims/default/data with its data; the URL
// pod gets an empty claim of its own: it cannot read the file pod's file,
// and what it writes never reaches the file pod. When the URL source stops
// defining its claim and its pod is gone, its directory is removed and the
// file pod's data stays.
func TestClaimsBelongToTheirSource(t *testing.T) {
	t.Parallel()
	image, _ := testutil.TestImage(t)
	srv := newManifestServer(t, good(claimData+"---\n"+objPod("intruder", image, claimMount, claimVolume)))
	u, err := url.Parse(srv.url)
	if err != nil {
		t.Fatal(err)
	}
	tg := startTug(t, tugOpts{
		args: []string{"--manifest-url", srv.url, "--http-check-frequency", httpCheck.String()},
		beforeStart: func(tg *tug) {
			tg.relay(u.Host)
			// The claim as a device running an earlier tug has it.
			legacy := filepath.Join(tg.rootDir, "claims", "default", "data")
			must(t, os.MkdirAll(legacy, 0o777))
			must(t, os.WriteFile(filepath.Join(legacy, "private"), []byte("owner's"), 0o600))
			tg.writeManifest("claim.yaml", claimData)
			tg.writeManifest("owner.yaml", objPod("owner", tg.image, claimMount, claimVolume))
		},
	})
	owner := tg.waitRunning(startTimeout, "owner", "main", 0)
	tg.waitContent(owner, "/data/private", "owner's")

	intruder := tg.waitRunningUID(startTimeout, urlUID(srv.url, "intruder"), "main", 0)
	if got, err := inContainer(intruder, "/data/private"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the URL pod reads the file pod's claim: /data/private = %q, %v", got, err)
	}
	must(t, os.WriteFile(filepath.Join("/proc", strconv.Itoa(int(intruder.PID)), "root", "data", "planted"), []byte("x"), 0o644))
	if _, err := inContainer(owner, "/data/planted"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the URL pod wrote into the file pod's claim: /data/planted: %v", err)
	}
	tg.waitContent(owner, "/data/private", "owner's")

	// The URL source drops its claim and pod: its directory goes, the
	// file source's stays.
	planted := filepath.Join(tg.rootDir, "source-claims", "*", "default", "data", "planted")
	if m, _ := filepath.Glob(planted); len(m) != 1 {
		t.Fatalf("the URL pod's claim is not under %s: %v", planted, m)
	}
	srv.set(good(""))
	tg.waitFor(60*time.Second, "the URL source's claim directory removed", func() (bool, error) {
		m, err := filepath.Glob(planted)
		return len(m) == 0, err
	})
	tg.waitContent(owner, "/data/private", "owner's")
	b, err := os.ReadFile(filepath.Join(tg.rootDir, "claims", "default", "data", "private"))
	if err != nil || string(b) != "owner's" {
		t.Fatalf("the file source's claim: %q, %v", b, err)
	}
}
