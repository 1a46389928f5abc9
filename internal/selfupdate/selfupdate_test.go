package selfupdate

import (
	"context"
	"crypto/ed25519"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"tug/internal/testutil"

	"tug/internal/bundle"
	"tug/internal/wave"
)

var at = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func TestDecide(t *testing.T) {
	trial := func(slot string, launches int) *Trial { return &Trial{Version: 5, Slot: slot, Launches: launches} }
	tests := []struct {
		name     string
		st       State
		current  string
		slot     string
		set      bool
		reverted bool
		trial    *Trial // the trial after the decision
		broken   bool   // version 5 marked broken
	}{
		{name: "fresh install", st: State{}, current: "", slot: ""},
		{name: "committed a", st: State{Committed: 4, Good: "a"}, current: "a", slot: "a"},
		{name: "link lost", st: State{Committed: 4, Good: "a"}, current: "", slot: "a", set: true},
		{name: "link names another slot", st: State{Committed: 4, Good: "a"}, current: "b", slot: "a", set: true},
		{name: "first launch of a trial", st: State{Committed: 4, Good: "a", Trial: trial("b", 0)}, current: "b", slot: "b", trial: trial("b", 1)},
		{name: "third launch of a trial", st: State{Committed: 4, Good: "a", Trial: trial("b", 2)}, current: "b", slot: "b", trial: trial("b", 3)},
		{name: "launches used up", st: State{Committed: 4, Good: "a", Trial: trial("b", 3)}, current: "b", slot: "a", set: true, reverted: true, broken: true},
		{name: "launches used up, from the installed binary", st: State{Trial: trial("a", 3)}, current: "a", slot: "", set: true, reverted: true, broken: true},
		{name: "cut before the switch", st: State{Committed: 4, Good: "a", Trial: trial("b", 0)}, current: "a", slot: "a"},
		{name: "cut between a revert's link and state", st: State{Committed: 4, Good: "a", Trial: trial("b", 3)}, current: "a", slot: "a", reverted: true, broken: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before int
			if tt.st.Trial != nil {
				before = tt.st.Trial.Launches
			}
			d := Decide(tt.st, tt.current, 3, at)
			if tt.st.Trial != nil && tt.st.Trial.Launches != before {
				t.Errorf("the input state changed")
			}
			if d.Slot != tt.slot || d.SetCurrent != tt.set || d.Reverted != tt.reverted {
				t.Fatalf("decision %+v", d)
			}
			if !reflect.DeepEqual(d.State.Trial, tt.trial) {
				t.Errorf("trial %+v, want %+v", d.State.Trial, tt.trial)
			}
			_, broken := d.State.Broken[5]
			if broken != tt.broken {
				t.Errorf("broken %v", d.State.Broken)
			}
			if tt.broken && (d.State.Last == nil || d.State.Last.State != StateReverted || d.State.Reverted != 1) {
				t.Errorf("outcome %+v, reverted %d", d.State.Last, d.State.Reverted)
			}
		})
	}
}

func TestAdmit(t *testing.T) {
	st := State{Committed: 10, Good: "a", Broken: map[uint64]string{12: "hung"}, Trial: &Trial{Version: 14, Slot: "b"}}
	tests := []struct {
		v    uint64
		want error
	}{
		{9, ErrBelowFloor},
		{10, ErrNotNewer},
		{11, nil},
		{12, ErrBroken},
		{14, ErrNotNewer},
		{15, nil},
	}
	for _, tt := range tests {
		if err := Admit(st, tt.v); !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
			t.Errorf("Admit(%d) = %v, want %v", tt.v, err, tt.want)
		}
	}
}

func TestLayout(t *testing.T) {
	l := NewLayout(t.TempDir())
	if cur, err := l.Current(); cur != "" || err != nil {
		t.Fatalf("fresh: %q %v", cur, err)
	}
	if err := l.Install("b", []byte("bin")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(l.Bin("b")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("installed: %v %v", fi, err)
	}
	if err := l.SetCurrent("b"); err != nil {
		t.Fatal(err)
	}
	if cur, err := l.Current(); cur != "b" || err != nil {
		t.Fatalf("current %q %v", cur, err)
	}
	if data, err := os.ReadFile(filepath.Join(l.Dir, "current", "tug")); string(data) != "bin" || err != nil {
		t.Fatalf("through the link: %q %v", data, err)
	}
	if err := l.SetCurrent(""); err != nil {
		t.Fatal(err)
	}
	if cur, _ := l.Current(); cur != "" {
		t.Fatalf("removed: %q", cur)
	}
	os.Symlink("/usr/bin", filepath.Join(l.Dir, "current"))
	if _, err := l.Current(); err == nil {
		t.Error("a link out of the layout is a slot")
	}
	for _, bad := range []string{"c", "../a", ""} {
		if err := l.Install(bad, nil); err == nil {
			t.Errorf("installed into %q", bad)
		}
	}
	if st, err := ReadState(l.StateFile()); err != nil || !reflect.DeepEqual(st, State{}) {
		t.Errorf("missing state: %+v %v", st, err)
	}
	want := State{Committed: 3, Good: "b", Broken: map[uint64]string{2: "x"}, Last: &Outcome{Version: 3, State: StateCommitted, At: at}}
	if err := WriteState(l.StateFile(), want); err != nil {
		t.Fatal(err)
	}
	if st, err := ReadState(l.StateFile()); err != nil || !reflect.DeepEqual(st, want) {
		t.Errorf("state %+v %v", st, err)
	}
	os.WriteFile(l.StateFile(), []byte(`{"good":"../../bin"}`), 0o600)
	if _, err := ReadState(l.StateFile()); err == nil {
		t.Error("a state naming a path as its slot")
	}
	os.WriteFile(l.StateFile(), []byte(`{"comm`), 0o600)
	if st, err := ReadState(l.StateFile()); err == nil || !reflect.DeepEqual(st, State{}) {
		t.Errorf("damaged state: %+v %v", st, err)
	}
}

func TestApplyRevertOrder(t *testing.T) {
	l := NewLayout(t.TempDir())
	st := State{Committed: 4, Good: "a", Trial: &Trial{Version: 5, Slot: "b", Launches: 3}}
	if err := WriteState(l.StateFile(), st); err != nil {
		t.Fatal(err)
	}
	l.SetCurrent("b")
	d := Decide(st, "b", 3, at)
	if err := l.Apply(d); err != nil {
		t.Fatal(err)
	}
	cur, _ := l.Current()
	got, _ := ReadState(l.StateFile())
	if cur != "a" || got.Trial != nil || got.Broken[5] == "" {
		t.Fatalf("after a revert: current %q, state %+v", cur, got)
	}
	// The next launch runs a with nothing to write.
	if d := Decide(got, cur, 3, at); d.Write || d.SetCurrent || d.Slot != "a" {
		t.Fatalf("after: %+v", d)
	}
}

type fakeSource struct {
	id   string
	env  []byte
	err  error
	gets int
}

func (f *fakeSource) Name() string                                  { return "fake" }
func (f *fakeSource) Resolve(context.Context) (string, error)       { return f.id, f.err }
func (f *fakeSource) Fetch(context.Context, string) ([]byte, error) { f.gets++; return f.env, nil }
func discard() *slog.Logger                                         { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
func selfELF(t *testing.T) []byte {
	exe, _ := os.Executable()
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestUpdater(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	_, other, _ := ed25519.GenerateKey(nil)
	arch, err := bundle.ELFArch(selfELF(t))
	if err != nil {
		testutil.Missing(t, "the test binary's architecture is not one tug knows: %v", err)
		return
	}
	seal := func(key ed25519.PrivateKey, v uint64, body []byte) []byte {
		b, err := bundle.SealEnvelope(key, bundle.EnvelopeHeader{Version: v, NotAfter: at.Add(time.Hour), Nodes: []string{"dev-*"}}, body)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	bin := selfELF(t)
	halted, err := bundle.SealEnvelope(priv, bundle.EnvelopeHeader{Version: 5, NotAfter: at.Add(time.Hour), Halt: &wave.Halt{Version: 4}}, bin)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		st     State
		env    []byte
		arch   string
		check  error
		want   error
		slot   string // switched to
		broken bool
	}{
		{name: "good", st: State{Committed: 4, Good: "a"}, env: seal(priv, 5, bin), want: ErrRestart, slot: "b"},
		{name: "from the installed binary", st: State{}, env: seal(priv, 1, bin), want: ErrRestart, slot: "a"},
		{name: "other key", st: State{Committed: 4, Good: "a"}, env: seal(other, 5, bin), want: bundle.ErrBadSignature},
		{name: "tampered", st: State{Committed: 4, Good: "a"}, env: append(seal(priv, 5, bin), 'x'), want: bundle.ErrBadEnvelope},
		{name: "lower", st: State{Committed: 4, Good: "a"}, env: seal(priv, 3, bin), want: ErrBelowFloor},
		{name: "same", st: State{Committed: 4, Good: "a"}, env: seal(priv, 4, bin), want: ErrNotNewer},
		{name: "broken", st: State{Committed: 4, Good: "a", Broken: map[uint64]string{5: "hung"}}, env: seal(priv, 5, bin), want: ErrBroken},
		{name: "wrong arch", st: State{Committed: 4, Good: "a"}, env: seal(priv, 5, bin), arch: "riscv64", want: ErrArch},
		{name: "not a binary", st: State{Committed: 4, Good: "a"}, env: seal(priv, 5, []byte("#!/bin/sh\n")), want: bundle.ErrWrongArch},
		{name: "a halt of the committed release, without revert", st: State{Committed: 4, Good: "a"}, env: halted, want: ErrHalted},
		{name: "check fails", st: State{Committed: 4, Good: "a"}, env: seal(priv, 5, bin), check: errors.New("config refused"), want: ErrCheck, broken: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLayout(t.TempDir())
			if tt.st.Good != "" {
				l.SetCurrent(tt.st.Good)
			}
			store := NewStore(l.StateFile(), tt.st)
			src := &fakeSource{id: "sha256:1", env: tt.env}
			a := arch
			if tt.arch != "" {
				a = tt.arch
			}
			u := NewUpdater(UpdaterConfig{Layout: l, Store: store, Source: src, Keys: []ed25519.PublicKey{pub}, Node: "dev-1", Arch: a,
				Check:  func(ctx context.Context, path string) (string, error) { return "tug 9.9", tt.check },
				Period: time.Hour, Now: func() time.Time { return at }, Log: discard()})
			err := u.Poll(context.Background())
			if !errors.Is(err, tt.want) {
				t.Fatalf("Poll = %v, want %v", err, tt.want)
			}
			cur, _ := l.Current()
			st := store.Get()
			if tt.slot != "" {
				if cur != tt.slot || st.Trial == nil || st.Trial.Slot != tt.slot || st.Trial.Printed != "tug 9.9" || store.Current() != StateTrial {
					t.Fatalf("switched: current %q, state %+v", cur, st)
				}
				if data, _ := os.ReadFile(l.Bin(tt.slot)); len(data) != len(bin) {
					t.Fatalf("installed %d bytes", len(data))
				}
				return
			}
			if cur != tt.st.Good || st.Trial != nil {
				t.Fatalf("not switched: current %q, trial %+v", cur, st.Trial)
			}
			if _, ok := st.Broken[5]; ok != (tt.broken || tt.st.Broken[5] != "") {
				t.Fatalf("broken %v", st.Broken)
			}
			// A refused release is not fetched again while the source
			// serves it.
			u.Poll(context.Background())
			if src.gets != 1 {
				t.Errorf("fetched %d times", src.gets)
			}
		})
	}
}

type fakeSources struct{ ok bool }

func (f fakeSources) AllReady() (bool, []string) {
	if f.ok {
		return true, nil
	}
	return false, []string{"url"}
}

func TestGate(t *testing.T) {
	tests := []struct {
		name    string
		health  error
		sources bool
		running []string // at the end
		fault   string
		commit  bool
		reason  string
	}{
		{name: "passes", sources: true, running: []string{"c1", "c2"}, commit: true},
		{name: "watchdog", health: errors.New("PLEG not relisted"), sources: true, running: []string{"c1", "c2"}, reason: "watchdog"},
		{name: "sources", sources: false, running: []string{"c1", "c2"}, reason: "sources not reported: url"},
		{name: "container restarted", sources: true, running: []string{"c1", "c3"}, reason: "c2"},
		{name: "fault", sources: true, running: []string{"c1", "c2"}, fault: "test fault", reason: "test fault"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLayout(t.TempDir())
			l.SetCurrent("b")
			store := NewStore(l.StateFile(), State{Committed: 4, Good: "a", Trial: &Trial{Version: 5, Slot: "b", Launches: 1}})
			calls := 0
			g := NewGate(GateConfig{Layout: l, Store: store, Slot: "b", Window: 30 * time.Millisecond, Tick: 5 * time.Millisecond,
				Health: func() error { return tt.health }, Sources: fakeSources{tt.sources}, Fault: tt.fault,
				Running: func() []string {
					calls++
					if calls == 1 {
						return []string{"c1", "c2"}
					}
					return tt.running
				}, Log: discard()})
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			err := g.Run(ctx)
			st := store.Get()
			cur, _ := l.Current()
			if tt.commit {
				if err != nil || st.Committed != 5 || st.Good != "b" || st.Trial != nil || store.Current() != StateCommitted || cur != "b" {
					t.Fatalf("commit: %v, %+v, current %q", err, st, cur)
				}
				return
			}
			if !errors.Is(err, ErrRestart) || cur != "a" || st.Trial != nil || !strings.Contains(st.Broken[5], tt.reason) || st.Reverted != 1 || store.Current() != StateReverted {
				t.Fatalf("revert: %v, %+v, current %q", err, st, cur)
			}
		})
	}
	// Not on trial: it waits.
	l := NewLayout(t.TempDir())
	g := NewGate(GateConfig{Layout: l, Store: NewStore(l.StateFile(), State{Committed: 4, Good: "a"}), Slot: "a", Log: discard()})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := g.Run(ctx); err != nil || g.OnTrial() {
		t.Fatalf("not on trial: %v", err)
	}
}
