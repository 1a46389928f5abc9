package podlogs

import (
	"slices"
	"testing"

	"tug/internal/testutil"
)

// TestDamagedPumpState: a pump's state file a power cut damaged never
// stops tug: the adoption of the logs says so (Warn naming the file) and
// goes on with the other attempts; an intact state is adopted.
func TestDamagedPumpState(t *testing.T) {
	for _, d := range testutil.Damages {
		t.Run(string(d), func(t *testing.T) {
			dir := t.TempDir()
			p, _, base := newTestPump(t, dir, logConfig{})
			out, _, state := rawPaths(base)
			appendRaw(t, out, "one\ntwo\n")
			stepAll(t, p)
			p.close()
			testutil.DamageFile(t, state, d)
			log := testutil.NewWarnLog(t)
			l := newLogPumps(dir, logConfig{}, log.Logger, nil)
			l.adopt()
			defer func() {
				for _, p := range l.pumps {
					p.close()
				}
			}()
			if got := log.Files(); (d != testutil.DamageMissing) != slices.Contains(got, state) {
				t.Errorf("warnings name %q (damage %s)", got, d)
			}
			if len(l.pumps) != 0 {
				t.Errorf("a damaged state was adopted: %d pumps", len(l.pumps))
			}
		})
	}
}
