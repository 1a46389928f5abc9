package rollout

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"tug/internal/clock"
	"tug/internal/testutil"
)

// TestDamagedStateFile: a rollout record a power cut damaged never stops
// tug: New says so (Warn naming the file), the pod has no last good spec,
// and the file is removed, so that the next start is quiet.
func TestDamagedStateFile(t *testing.T) {
	for _, d := range testutil.Damages {
		t.Run(string(d), func(t *testing.T) {
			dir := t.TempDir()
			h := newHarness(t, dir, "boot-1")
			p := testPod(nil)
			h.good(p, "A")
			path := filepath.Join(dir, p.Metadata.UID+".json")
			testutil.DamageFile(t, path, d)
			open := func() ([]string, *Controller) {
				log := testutil.NewWarnLog(t)
				c, err := New(Config{Dir: dir, MinReady: 30 * time.Second, Timeout: 5 * time.Minute, Store: &fakeStore{}, Pods: &fakePods{},
					Registerer: prometheus.NewRegistry(), Clock: clock.Clock(time.Now), BootID: "boot-1", Log: log.Logger})
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				return log.Files(), c
			}
			files, c := open()
			if (d != testutil.DamageMissing) != slices.Contains(files, path) {
				t.Errorf("warnings name %q (damage %s)", files, d)
			}
			if hist, _ := c.History(p.Metadata.UID); hist.GoodHash != "" {
				t.Errorf("a damaged record gave good hash %q", hist.GoodHash)
			}
			if files, _ := open(); len(files) != 0 {
				t.Errorf("second start warns %q", files)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("the damaged record is still there: %v", err)
			}
		})
	}
}
