package podlogs

import (
	"os"
	"slices"
	"strings"
	"testing"

	"tug/internal/testutil"
)

// TestDamagedPumpState: a pump's state file a power cut damaged (or lost)
// never stops tug. With the attempt's container known (Identify), the
// state is rebuilt, naming the file in a Warn: the lines converted before
// stay in the CRI log, the output written since reaches it, and the next
// adoption is quiet. Without it, the adoption says so and goes on.
func TestDamagedPumpState(t *testing.T) {
	for _, d := range testutil.Damages {
		for _, known := range []bool{true, false} {
			name := string(d) + "/unknown container"
			if known {
				name = string(d) + "/known container"
			}
			t.Run(name, func(t *testing.T) {
				dir := t.TempDir()
				p, cri, base := newTestPump(t, dir, logConfig{})
				out, _, state := rawPaths(base)
				appendRaw(t, out, "one\ntwo\n")
				stepAll(t, p)
				p.close()
				testutil.DamageFile(t, state, d)
				appendRaw(t, out, "three\n") // written while tug was down
				adopt := func() (*Pumps, *testutil.WarnLog) {
					log := testutil.NewWarnLog(t)
					l := newLogPumps(dir, logConfig{}, log.Logger)
					if known {
						l.identify = func(uid, container string, attempt int) (string, string, bool) {
							return "cid", cri, uid == "uid" && container == "c" && attempt == 0
						}
					}
					l.adopt()
					t.Cleanup(func() {
						for _, p := range l.pumps {
							p.close()
						}
					})
					return l, log
				}
				l, log := adopt()
				if got := log.Files(); !slices.Contains(got, state) {
					t.Errorf("warnings name %q (damage %s)", got, d)
				}
				if !known {
					if len(l.pumps) != 0 {
						t.Errorf("a damaged state was adopted: %d pumps", len(l.pumps))
					}
					return
				}
				p = l.pumps["cid"]
				if p == nil {
					t.Fatal("the rebuilt pump is not adopted")
				}
				stepAll(t, p)
				data, _ := os.ReadFile(cri)
				for _, line := range []string{"one", "two", "three"} {
					if !strings.Contains(string(data), " "+line+"\n") {
						t.Errorf("the CRI log lacks %q:\n%s", line, data)
					}
				}
				p.close()
				delete(l.pumps, "cid")
				if _, log := adopt(); len(log.Files()) != 0 {
					t.Errorf("the rebuilt state warns again: %q", log.Files())
				}
			})
		}
	}
}
