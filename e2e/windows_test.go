//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"

	"tug/internal/podview"
	"tug/internal/statusreport"
	"tug/internal/testutil"
)

// TestUpdateWindow: a URL source's first bundle runs at once; the next,
// served while --update-window is closed, is held: the pod keeps its
// container, its image is pulled ahead (the download window is open),
// tug pods, tug describe and the status document say when the window
// opens; when it opens, the update is applied.
func TestUpdateWindow(t *testing.T) {
	t.Parallel()
	image, _ := testutil.TestImage(t)
	// A window that opens 1 to 2 minutes from now, for half an hour.
	now := time.Now().UTC()
	opens := now.Truncate(time.Minute).Add(2 * time.Minute)
	spec := fmt.Sprintf("daily %s-%s tz=UTC", opens.Format("15:04"), opens.Add(30*time.Minute).Format("15:04"))
	srv := newManifestServer(t, good(shPod("win", image, "echo v1; "+idle)))
	tg, r, _ := statusTug(t, "--manifest-url", srv.url, "--http-check-frequency", httpCheck.String(),
		"--update-window", spec, "--download-window", "daily 00:00-24:00 tz=UTC")
	u, err := url.Parse(srv.url)
	if err != nil {
		t.Fatal(err)
	}
	tg.relay(u.Host)
	uid := urlUID(srv.url, "win")
	v1 := tg.waitRunningUID(startTimeout, uid, "main", 0)

	srv.set(good(shPod("win", image, "echo v2; "+idle)))
	tg.waitURLManifest(fetchTimeout, srv.url, "v2 waiting for the window, its image pulled", func(m *podview.ManifestStatus) error {
		w := m.UpdateWaiting
		switch {
		case w == nil:
			return errors.New("no update waiting")
		case !w.Opens.Equal(opens):
			return fmt.Errorf("opens %s, want %s", w.Opens, opens)
		case !w.Prefetched:
			return errors.New("its image is not pulled ahead")
		}
		return nil
	})
	local := opens.In(time.Local).Format("2006-01-02 15:04:05 MST")
	want := "update waiting for the window at " + local
	if out := tg.cli("pods"); !strings.Contains(out, srv.url+": "+want) {
		t.Errorf("tug pods says:\n%s\nwant a line %q", out, srv.url+": "+want)
	}
	if out := tg.cli("describe", "win"); !strings.Contains(out, "Update:") || !strings.Contains(out, want) {
		t.Errorf("tug describe says:\n%s\nwant %q", out, want)
	}
	r.waitDoc(tg, fetchTimeout, 0, "the update waiting", func(d statusreport.Document) error {
		for _, s := range d.Sources {
			for _, f := range s.Files {
				if f.UpdateWaiting != nil {
					if msg := "update waiting for the window at " + opens.Format(time.RFC3339); f.UpdateWaiting.Message != msg {
						return fmt.Errorf("message %q, want %q", f.UpdateWaiting.Message, msg)
					}
					return nil
				}
			}
		}
		return errors.New("no file with an update waiting")
	})
	c, ok, err := tg.container(uid, "main")
	if err != nil || !ok {
		t.Fatalf("container main: found %v, %v", ok, err)
	}
	if c.ID != v1.ID || c.PID != v1.PID || c.Status != containerd.Running {
		t.Errorf("the held update changed the container: before %v, after %v", v1, c)
	}
	if time.Now().After(opens) {
		t.Fatalf("the window opened (%s) before the checks of the held update ended", opens)
	}

	v2 := tg.waitRunningUID(time.Until(opens)+startTimeout, uid, "main", 1)
	if at := time.Now(); at.Before(opens) {
		t.Errorf("v2 runs at %s, before the window opens at %s", at, opens)
	}
	if v2.ID == v1.ID {
		t.Errorf("v2 did not replace v1's container: %v", v2)
	}
	tg.waitURLManifest(fetchTimeout, srv.url, "nothing waiting", func(m *podview.ManifestStatus) error {
		if m.UpdateWaiting != nil {
			return fmt.Errorf("still waiting: %+v", *m.UpdateWaiting)
		}
		return nil
	})
}

// TestUpdateWindowRollback: a rollback to the last good spec is never held
// by a closed window. The device's window is closed; v1 runs; v2 carries
// its own window, open, so it is applied, and crashes; v3, served next,
// waits for the device's window; v2 is rolled back to v1 at once all the
// same, while v3 still waits.
func TestUpdateWindowRollback(t *testing.T) {
	t.Parallel()
	image, _ := testutil.TestImage(t)
	keys := t.TempDir()
	_, pub := keyPair(t, keys, "k")
	key := filepath.Join(keys, "k.pem")
	// A window that opens in about 12 hours: closed for the whole test.
	opens := time.Now().UTC().Truncate(time.Minute).Add(12 * time.Hour)
	spec := fmt.Sprintf("daily %s-%s tz=UTC", opens.Format("15:04"), opens.Add(time.Minute).Format("15:04"))
	ann := map[string]string{"tug.io/rollout-max-restarts": "1", "tug.io/rollout-timeout": "60s"}
	signed := func(version int, script string, more ...string) answer {
		return good(string(tugSign(t, key, rolloutPod("roll", image, script, ann, ""), append([]string{"--version", fmt.Sprint(version)}, more...)...)))
	}
	srv := newManifestServer(t, signed(1, fmt.Sprintf(rolloutWeb, "v1")))
	tg := urlTug(t, srv.url, append([]string{"--manifest-verify-key", pub, "--update-window", spec}, rolloutArgs...)...)
	uid := urlUID(srv.url, "roll")
	tg.waitRunningUID(startTimeout, uid, "main", 0)
	goodHash := tg.waitGood("roll", "")

	srv.set(signed(2, "echo broken; exit 1", "--update-window", "daily 00:00-24:00 tz=UTC"))
	tg.waitURLManifest(fetchTimeout, srv.url, "v2 applied (its own window is open)", func(m *podview.ManifestStatus) error {
		if m.Version != 2 || m.UpdateWaiting != nil {
			return fmt.Errorf("version %d applied, waiting %+v", m.Version, m.UpdateWaiting)
		}
		return nil
	})
	srv.set(signed(3, fmt.Sprintf(rolloutWeb, "v3")))
	tg.waitURLManifest(fetchTimeout, srv.url, "v3 waiting for the device's window", func(m *podview.ManifestStatus) error {
		if w := m.UpdateWaiting; w == nil || w.Version != 3 || !w.Opens.Equal(opens) {
			return fmt.Errorf("waiting %+v, want version 3 until %s", w, opens)
		}
		return nil
	})
	tg.waitRolledBack(45*time.Second, "roll", goodHash, "restarted 2 times")
	tg.waitMainReady("roll", "v1 runs again")
	m, err := tg.urlManifest(srv.url)
	if err != nil {
		t.Fatal(err)
	}
	if w := m.UpdateWaiting; w == nil || w.Version != 3 {
		t.Errorf("after the rollback: waiting %+v, want v3 still waiting", w)
	}
}
