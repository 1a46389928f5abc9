package selfupdate

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"os"
	"testing"
	"time"

	"tug/internal/bundle"
	"tug/internal/testutil"
	"tug/internal/wave"
	"tug/internal/window"
)

// release is what the fake source serves at a step.
type release struct {
	id      string
	version uint64
	plan    *wave.Plan
	halt    *wave.Halt
	expires time.Duration // from at; 0: 72 h
}

// planStep is one poll of TestUpdaterPlan: at, the source serves, and
// what the poll must give.
type planStep struct {
	at    time.Duration // from at
	serve *release      // nil: what the previous step served
	// restart makes a new updater on the same layout and state file
	// (tug restarted) before the poll.
	restart bool
	// tamper overwrites the slot of the release installed ahead.
	tamper bool

	err      error  // wanted from Poll (nil: none)
	state    string // Store.Current() after the poll
	trial    uint64 // the version switched to (0: none)
	ahead    string // the slot that must hold the binary, installed ahead (not current)
	gets     int    // fetches so far
	installs int    // checks of installed binaries so far, when not 0
	wave     int    // the wait's wave index
	reason   string // in the wait's reason
	opensAt  time.Duration
}

// TestUpdaterPlan follows releases with rollout plans and halts through
// an injected clock and a fake source: a release whose wave is not open
// is installed ahead and switched to at the opening, with no second
// fetch; one in no wave never is; a newer one served meanwhile wins; a
// halt drops a pending release, and with revert installs the halting one
// on a device that committed the halted version; the download window
// decides when a release is fetched, the update window when it is
// switched to.
func TestUpdaterPlan(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	bin := headerELF(t)
	arch, err := bundle.ELFArch(bin)
	if err != nil {
		testutil.Missing(t, "the test binary's architecture is not one tug knows: %v", err)
		return
	}
	// at is 03:04:05 UTC: 05:00 is at+1h55m55s.
	plan := func(waves ...wave.Wave) *wave.Plan { return &wave.Plan{Start: at, Waves: waves} }
	after := func(d time.Duration) wave.Duration { return wave.Duration(d) }
	canary := wave.Wave{Name: "canary", Labels: map[string]string{"ring": "canary"}}
	later := wave.Wave{Name: "rest", After: after(time.Hour)}
	onlyCanary := plan(canary)
	twoWaves := plan(canary, later)

	tests := []struct {
		name             string
		st               State
		labels           map[string]string
		update, download string
		steps            []planStep
	}{
		{name: "wave not open: waits, then switches at the opening", st: State{Committed: 4, Good: "a"},
			steps: []planStep{
				{serve: &release{id: "r5", version: 5, plan: twoWaves}, state: StateWaiting, ahead: "b", gets: 1, wave: 2,
					reason: `waiting for wave 2 "rest"`, opensAt: time.Hour},
				{at: 59 * time.Minute, state: StateWaiting, ahead: "b", gets: 1, wave: 2},
				{at: time.Hour, err: ErrRestart, state: StateTrial, trial: 5, gets: 1},
			}},
		{name: "in the first wave: switches at once", st: State{Committed: 4, Good: "a"}, labels: map[string]string{"ring": "canary"},
			steps: []planStep{
				{serve: &release{id: "r5", version: 5, plan: twoWaves}, err: ErrRestart, state: StateTrial, trial: 5, gets: 1},
			}},
		{name: "in no wave: never", st: State{Committed: 4, Good: "a"},
			steps: []planStep{
				{serve: &release{id: "r5", version: 5, plan: onlyCanary}, err: ErrNoWave, state: StateIdle, gets: 1, reason: "no wave of version 5 selects this node"},
				{at: 48 * time.Hour, state: StateIdle, gets: 1},
			}},
		{name: "a newer release served while waiting wins", st: State{Committed: 4, Good: "a"},
			steps: []planStep{
				{serve: &release{id: "r5", version: 5, plan: twoWaves}, state: StateWaiting, ahead: "b", gets: 1, wave: 2},
				{at: time.Minute, serve: &release{id: "r6", version: 6}, err: ErrRestart, state: StateTrial, trial: 6, gets: 2},
			}},
		{name: "a newer release with a later wave replaces the pending one", st: State{Committed: 4, Good: "a"},
			steps: []planStep{
				{serve: &release{id: "r5", version: 5, plan: twoWaves}, state: StateWaiting, ahead: "b", gets: 1, wave: 2},
				{at: time.Minute, serve: &release{id: "r6", version: 6, plan: plan(canary, wave.Wave{Name: "rest", After: after(2 * time.Hour)})},
					state: StateWaiting, ahead: "b", gets: 2, wave: 2, opensAt: 2 * time.Hour},
				{at: time.Hour, state: StateWaiting, gets: 2},
				{at: 2 * time.Hour, err: ErrRestart, state: StateTrial, trial: 6, gets: 2},
			}},
		{name: "halt without revert of a release not switched to: dropped, never switched", st: State{Committed: 4, Good: "a"},
			steps: []planStep{
				{serve: &release{id: "r5", version: 5, plan: twoWaves}, state: StateWaiting, ahead: "b", gets: 1, wave: 2},
				{at: time.Minute, serve: &release{id: "r6", version: 6, halt: &wave.Halt{Version: 5}}, err: ErrHalted, state: StateHalted, gets: 2,
					reason: "version 5 halted by version 6 before it was switched to here: keeping version 4"},
				{at: 3 * time.Hour, state: StateHalted, gets: 2},
			}},
		{name: "halt with revert of a release not switched to: dropped, never switched", st: State{Committed: 4, Good: "a"},
			steps: []planStep{
				{serve: &release{id: "r5", version: 5, plan: twoWaves}, state: StateWaiting, ahead: "b", gets: 1, wave: 2},
				{at: time.Minute, serve: &release{id: "r6", version: 6, halt: &wave.Halt{Version: 5, Revert: true}}, err: ErrHalted, state: StateHalted, gets: 2},
				{at: 3 * time.Hour, state: StateHalted, gets: 2},
			}},
		{name: "halt without revert of the committed release: kept", st: State{Committed: 5, Good: "b"},
			steps: []planStep{
				{serve: &release{id: "r6", version: 6, halt: &wave.Halt{Version: 5}}, err: ErrHalted, state: StateHalted, gets: 1,
					reason: "version 5 halted by version 6 after it was committed here: keeping it"},
			}},
		{name: "halt with revert of the committed release: the halting binary is installed", st: State{Committed: 5, Good: "b"},
			update: "daily 12:00-13:00 tz=UTC",
			steps: []planStep{
				// Windows aside, as a bundle's revert.
				{serve: &release{id: "r6", version: 6, halt: &wave.Halt{Version: 5, Revert: true}}, err: ErrRestart, state: StateTrial, trial: 6, gets: 1},
			}},
		{name: "prefetch in the download window, switch in the update window with no second fetch", st: State{Committed: 4, Good: "a"},
			update: "daily 05:00-06:00 tz=UTC", download: "daily 04:00-04:30 tz=UTC",
			steps: []planStep{
				{serve: &release{id: "r5", version: 5}, state: StateCommitted, gets: 0},
				{at: time.Hour, state: StateWaiting, ahead: "b", gets: 1, reason: "waiting for the update window at", opensAt: 115*time.Minute + 55*time.Second},
				{at: 90 * time.Minute, state: StateWaiting, ahead: "b", gets: 1},
				{at: 116 * time.Minute, err: ErrRestart, state: StateTrial, trial: 5, gets: 1},
			}},
		{name: "wave open but the update window not: installed ahead, switched in the window", st: State{Committed: 4, Good: "a"},
			update: "daily 05:00-06:00 tz=UTC", labels: map[string]string{"ring": "canary"},
			steps: []planStep{
				{serve: &release{id: "r5", version: 5, plan: twoWaves}, state: StateWaiting, ahead: "b", gets: 1, wave: 1, reason: "waiting for the update window"},
				{at: 116 * time.Minute, err: ErrRestart, state: StateTrial, trial: 5, gets: 1},
			}},
		{name: "restart while waiting: fetched and installed again, then switched", st: State{Committed: 4, Good: "a"},
			steps: []planStep{
				{serve: &release{id: "r5", version: 5, plan: twoWaves}, state: StateWaiting, ahead: "b", gets: 1, wave: 2},
				{at: time.Minute, restart: true, state: StateWaiting, ahead: "b", gets: 2, wave: 2},
				{at: time.Hour, err: ErrRestart, state: StateTrial, trial: 5, gets: 2},
			}},
		{name: "slot changed while waiting: fetched again before the switch", st: State{Committed: 4, Good: "a"},
			steps: []planStep{
				{serve: &release{id: "r5", version: 5, plan: twoWaves}, state: StateWaiting, ahead: "b", gets: 1, wave: 2},
				{at: time.Hour, tamper: true, err: errAny, state: StateCommitted, gets: 1},
				{at: time.Hour, err: ErrRestart, state: StateTrial, trial: 5, gets: 2},
			}},
		{name: "the same release under another identity: not installed again", st: State{Committed: 4, Good: "a"},
			steps: []planStep{
				{serve: &release{id: "r5", version: 5, plan: twoWaves}, state: StateWaiting, ahead: "b", gets: 1, wave: 2},
				{at: time.Minute, serve: &release{id: "r5-again", version: 5, plan: twoWaves}, state: StateWaiting, ahead: "b", gets: 2, wave: 2, installs: 1},
				{at: time.Hour, err: ErrRestart, state: StateTrial, trial: 5, gets: 2, installs: 1},
			}},
		{name: "expired while waiting: not switched to", st: State{Committed: 4, Good: "a"},
			steps: []planStep{
				{serve: &release{id: "r5", version: 5, plan: twoWaves, expires: 30 * time.Minute}, state: StateWaiting, ahead: "b", gets: 1, wave: 2},
				{at: time.Hour, err: bundle.ErrExpired, state: StateCommitted, gets: 1},
				{at: 2 * time.Hour, state: StateCommitted, gets: 1},
			}},
		{name: "the running release served again while waiting: dropped", st: State{Committed: 4, Good: "a"},
			steps: []planStep{
				{serve: &release{id: "r5", version: 5, plan: twoWaves}, state: StateWaiting, ahead: "b", gets: 1, wave: 2},
				{at: time.Minute, serve: &release{id: "r4", version: 4}, err: ErrNotNewer, state: StateCommitted, gets: 2},
				{at: 2 * time.Hour, state: StateCommitted, gets: 2},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLayout(t.TempDir())
			if tt.st.Good != "" {
				l.SetCurrent(tt.st.Good)
			}
			tt.st.Last = &Outcome{Version: tt.st.Committed, State: StateCommitted}
			if err := WriteState(l.StateFile(), tt.st); err != nil {
				t.Fatal(err)
			}
			now := at
			src := &fakeSource{}
			checks := 0
			newUpdater := func() (*Updater, *Store) {
				st, err := ReadState(l.StateFile())
				if err != nil {
					t.Fatal(err)
				}
				store := NewStore(l.StateFile(), st)
				return NewUpdater(UpdaterConfig{Layout: l, Store: store, Source: src, Keys: []ed25519.PublicKey{pub}, Node: "dev-1",
					Labels: tt.labels, Arch: arch, Period: time.Minute,
					Check:  func(ctx context.Context, path string) (string, error) { checks++; return "9.9", nil },
					Update: window.MustParse(tt.update), Download: window.MustParse(tt.download),
					Now: func() time.Time { return now }, Log: discard()}), store
			}
			u, store := newUpdater()
			for i, s := range tt.steps {
				now = at.Add(s.at)
				if r := s.serve; r != nil {
					expires := r.expires
					if expires == 0 {
						expires = 72 * time.Hour
					}
					env, err := bundle.SealEnvelope(priv, bundle.EnvelopeHeader{Version: r.version, NotAfter: at.Add(expires), Rollout: r.plan, Halt: r.halt}, bin)
					if err != nil {
						t.Fatal(err)
					}
					src.id, src.env = r.id, env
				}
				if s.restart {
					// The launch guard of the restarted tug runs the good
					// slot: a slot installed ahead is not current.
					st, _ := ReadState(l.StateFile())
					cur, _ := l.Current()
					if d := Decide(st, cur, DefaultMaxLaunches, now); d.Slot != tt.st.Good || d.Write || d.SetCurrent {
						t.Fatalf("step %d: the guard decides %+v after a release was installed ahead", i, d)
					}
					u, store = newUpdater()
				}
				if s.tamper {
					if err := os.WriteFile(l.Bin("b"), []byte("damaged"), 0o755); err != nil {
						t.Fatal(err)
					}
				}
				err := u.Poll(context.Background())
				switch {
				case s.err == errAny && err == nil, s.err != errAny && !errors.Is(err, s.err):
					t.Fatalf("step %d: Poll = %v, want %v", i, err, s.err)
				}
				cur, _ := l.Current()
				st := store.Get()
				if got := store.Current(); got != s.state {
					t.Errorf("step %d: state %q, want %q (wait %+v)", i, got, s.state, store.Wait())
				}
				if src.gets != s.gets {
					t.Errorf("step %d: fetched %d times, want %d", i, src.gets, s.gets)
				}
				if s.installs != 0 && checks != s.installs {
					t.Errorf("step %d: installed %d times, want %d", i, checks, s.installs)
				}
				if s.trial != 0 {
					if st.Trial == nil || st.Trial.Version != s.trial || cur != st.Trial.Slot || cur != Other(tt.st.Good) {
						t.Fatalf("step %d: not switched to %d: current %q, trial %+v", i, s.trial, cur, st.Trial)
					}
					continue
				}
				if st.Trial != nil || cur != tt.st.Good {
					t.Fatalf("step %d: switched: current %q, trial %+v", i, cur, st.Trial)
				}
				if s.ahead != "" {
					if data, _ := os.ReadFile(l.Bin(s.ahead)); !bytes.Equal(data, bin) {
						t.Errorf("step %d: slot %s holds %d bytes, not the release", i, s.ahead, len(data))
					}
					if w := store.Wait(); w == nil || w.Slot != s.ahead {
						t.Errorf("step %d: wait %+v, want slot %s", i, w, s.ahead)
					}
				}
				w := store.Wait()
				if s.wave != 0 && (w == nil || w.Wave.Index != s.wave) {
					t.Errorf("step %d: wait %+v, want wave %d", i, w, s.wave)
				}
				if s.reason != "" && (w == nil || !bytes.Contains([]byte(w.Reason), []byte(s.reason))) {
					t.Errorf("step %d: wait %+v, want a reason with %q", i, w, s.reason)
				}
				if s.opensAt != 0 && (w == nil || !w.Opens.Equal(at.Add(s.opensAt))) {
					t.Errorf("step %d: wait %+v, want it to open at %s", i, w, at.Add(s.opensAt))
				}
			}
		})
	}
}

// errAny is a step's wanted error when any error will do.
var errAny = errors.New("any error")

// headerELF is the test binary's ELF header alone (no program or section
// headers): an executable of this architecture to bundle.ELFArch, and a
// few bytes to install and hash many times.
func headerELF(t *testing.T) []byte {
	h := bytes.Clone(selfELF(t)[:64])
	if h[4] != 2 { // ELFCLASS64
		testutil.Missing(t, "the test binary is not a 64-bit ELF file")
	}
	clear(h[32:48]) // e_phoff, e_shoff
	clear(h[56:64]) // e_phnum, e_shentsize, e_shnum, e_shstrndx
	return h
}
