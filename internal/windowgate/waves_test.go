package windowgate

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"tug/internal/pod"
	"tug/internal/wave"
	"tug/internal/window"
)

// planned is file with a rollout plan.
func planned(hash string, version uint64, p wave.Plan) pod.SourceFile {
	f := file(url, hash, version)
	b, _ := json.Marshal(p)
	f.Rollout.Plan = string(b)
	return f
}

// halting is file with a halt of version halted.
func halting(hash string, version, halted uint64, revert bool) pod.SourceFile {
	f := file(url, hash, version)
	b, _ := json.Marshal(wave.Halt{Version: halted, Revert: revert})
	f.Rollout.Halt = string(b)
	return f
}

func percent(f float64) *float64 { return &f }

func waveFixture(t *testing.T, update string, labels map[string]string) *fixture {
	t.Helper()
	f := &fixture{now: closed, sink: &sink{}, pf: &prefetcher{}}
	f.gate = New(Config{Sink: f.sink, Update: window.MustParse(update), Node: "kiosk-1", Labels: labels,
		Prefetch: f.pf, Clock: func() time.Time { return f.now }})
	return f
}

func (f *fixture) applied(t *testing.T, want string) {
	t.Helper()
	if got := f.sink.hashes(url); !slices.Equal(got, []string{url + "=" + want}) {
		t.Fatalf("sink has %v, want %s", got, want)
	}
}

func (f *fixture) rollout(t *testing.T) Rollout {
	t.Helper()
	rs := f.gate.Rollouts()
	if len(rs) != 1 {
		t.Fatalf("Rollouts = %+v, want one", rs)
	}
	return rs[0]
}

// TestWaves: the device's wave is chosen by its labels and bucket; held
// content passes when its wave opens and, after it, its update window;
// images are pulled ahead before the wave; a device in no wave never
// applies the version and pulls nothing.
func TestWaves(t *testing.T) {
	ctx := context.Background()
	start := closed.Add(10 * time.Minute)
	b := wave.Bucket("kiosk-1", 2)
	plan := wave.Plan{Start: start, Waves: []wave.Wave{
		{Name: "canary", Labels: map[string]string{"ring": "canary"}},
		{Name: "share", Share: percent(float64(b+1) / 100), After: wave.Duration(time.Hour)},
		{Name: "rest", After: wave.Duration(2 * time.Hour)},
	}}
	tests := []struct {
		name      string
		update    string
		labels    map[string]string
		plan      wave.Plan
		wantWave  int
		wantOpens time.Time // when v2 passes; zero: never
	}{
		{"labels: first wave", "", map[string]string{"ring": "canary"}, plan, 1, start},
		{"share: second wave", "", nil, plan, 2, start.Add(time.Hour)},
		{"outside the share: third wave", "", nil, func() wave.Plan {
			p := plan
			p.Waves = slices.Clone(plan.Waves)
			p.Waves[1].Share = percent(float64(b) / 100)
			return p
		}(), 3, start.Add(2 * time.Hour)},
		{"wave open, window closed: the window's opening", "daily 02:00-04:00 tz=UTC", map[string]string{"ring": "canary"}, plan, 1, opening},
		{"wave after the window opens: the next window", "daily 01:00-01:30 tz=UTC", nil, plan, 2, closed.Add(24 * time.Hour)},
		{"no wave selects the node", "", nil, wave.Plan{Start: start, Waves: []wave.Wave{{Labels: map[string]string{"ring": "canary"}}}}, 0, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := waveFixture(t, tt.update, tt.labels)
			g := f.gate
			g.Set(url, []pod.SourceFile{file(url, "v1", 1)})
			g.Set(url, []pod.SourceFile{planned("v2", 2, tt.plan)})
			f.applied(t, "v1")
			if !g.Holds(url, "v2") {
				t.Error("v2 not held: the source would checkpoint it")
			}
			r := f.rollout(t)
			if r.WaveIndex != tt.wantWave || r.Version != 2 {
				t.Fatalf("Rollout = %+v, want version 2 in wave %d", r, tt.wantWave)
			}
			g.step(ctx)
			if tt.wantOpens.IsZero() {
				if r.State != StateIdle || len(g.Waits()) != 0 || len(f.pf.calls) != 0 {
					t.Errorf("no wave: Rollout %+v, Waits %+v, prefetches %d; want idle, nothing waiting or pulled", r, g.Waits(), len(f.pf.calls))
				}
				f.now = closed.Add(1000 * time.Hour)
				g.step(ctx)
				f.applied(t, "v1")
				return
			}
			if r.State != StateWaiting || !r.Opens.Equal(tt.wantOpens) {
				t.Errorf("Rollout = %+v, want waiting until %s", r, tt.wantOpens)
			}
			w := g.Waits()
			if len(w) != 1 || w[0].WaveIndex != tt.wantWave || !w[0].Opens.Equal(tt.wantOpens) || !w[0].Prefetched {
				t.Errorf("Waits = %+v, want wave %d, opening %s, prefetched", w, tt.wantWave, tt.wantOpens)
			}
			if len(f.pf.calls) != 1 {
				t.Errorf("%d prefetches before the wave, want 1", len(f.pf.calls))
			}
			f.now = tt.wantOpens.Add(-time.Second)
			g.step(ctx)
			f.applied(t, "v1")
			f.now = tt.wantOpens
			g.step(ctx)
			f.applied(t, "v2")
			if r := f.rollout(t); r.State != StateApplied || r.WaveIndex != tt.wantWave || r.Version != 2 {
				t.Errorf("after the opening: Rollout = %+v, want applied in wave %d", r, tt.wantWave)
			}
		})
	}
}

// TestHalt: a bundle that halts version 2 keeps what each device runs and
// drops a held version 2; with revert, a device that runs version 2 applies
// the halting bundle's content at once, window or not.
func TestHalt(t *testing.T) {
	ctx := context.Background()
	later := wave.Plan{Start: closed.Add(time.Hour), Waves: []wave.Wave{{}}}
	now := wave.Plan{Start: closed.Add(-time.Hour), Waves: []wave.Wave{{}}}
	tests := []struct {
		name       string
		update     string
		plan       wave.Plan // version 2's
		revert     bool
		want       string // content applied after the halt
		wantState  string
		wantReason string
	}{
		{"held version 2 dropped", "", later, false, "v1", StateHalted, "version 2 halted by version 3 before it was applied here: keeping version 1"},
		{"held version 2 dropped, revert changes nothing", "", later, true, "v1", StateHalted, "version 2 halted by version 3 before it was applied here: keeping version 1"},
		{"applied version 2 kept", "", now, false, "v2", StateHalted, "version 2 halted by version 3 after it was applied here: keeping it"},
		{"applied version 2 reverted, window closed", "daily 02:00-04:00 tz=UTC", now, true, "v3", StateHalted, "version 2 halted with revert by version 3: running version 3's content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := waveFixture(t, "", nil)
			g := f.gate
			g.Set(url, []pod.SourceFile{file(url, "v1", 1)})
			g.Set(url, []pod.SourceFile{planned("v2", 2, tt.plan)})
			if tt.update != "" {
				g.cfg.Update = window.MustParse(tt.update)
			}
			g.Set(url, []pod.SourceFile{halting("v3", 3, 2, tt.revert)})
			for range 2 {
				f.now = f.now.Add(1000 * time.Hour)
				g.step(ctx)
			}
			f.applied(t, tt.want)
			if r := f.rollout(t); r.State != tt.wantState || r.Version != 2 || r.Reason != tt.wantReason {
				t.Errorf("Rollout = %+v, want %s of version 2: %q", r, tt.wantState, tt.wantReason)
			}
			if w := g.Waits(); len(w) != 0 {
				t.Errorf("Waits = %+v, want none", w)
			}
			if held := g.Holds(url, "v3"); held == (tt.want == "v3") {
				t.Errorf("Holds(v3) = %v", held)
			}
			if tt.want != "v3" {
				// A fetch error keeps the halt: it is never checkpointed.
				g.Set(url, []pod.SourceFile{{Origin: pod.Origin{Source: url, File: url}, Hash: "v3", Version: 3, Err: errors.New("unreachable")}})
				if r := f.rollout(t); !g.Holds(url, "v3") || r.State != StateHalted {
					t.Errorf("after a fetch error: Holds(v3) = %v, Rollout %+v; want the halt held", g.Holds(url, "v3"), r)
				}
			}
			// A newer version goes on with its own plan.
			g.cfg.Update = window.Window{}
			g.Set(url, []pod.SourceFile{planned("v4", 4, now)})
			g.step(ctx)
			f.applied(t, "v4")
		})
	}
	// A fresh device runs the halting bundle's content.
	f := waveFixture(t, "", nil)
	f.gate.Set(url, []pod.SourceFile{halting("v3", 3, 2, false)})
	f.applied(t, "v3")
	if r := f.rollout(t); r.State != StateHalted || r.Reason != "running version 3, which halts version 2" {
		t.Errorf("fresh device: Rollout = %+v", r)
	}
}

// TestWavesFirstSnapshot: a fresh device (or the checkpoint at start) runs
// its first content at once, whatever its wave.
func TestWavesFirstSnapshot(t *testing.T) {
	f := waveFixture(t, "daily 02:00-04:00 tz=UTC", nil)
	later := wave.Plan{Start: closed.Add(time.Hour), Waves: []wave.Wave{{Name: "all"}}}
	f.gate.Set(url, []pod.SourceFile{planned("v2", 2, later)})
	f.applied(t, "v2")
	if r := f.rollout(t); r.State != StateApplied || r.WaveIndex != 1 || r.Version != 2 {
		t.Errorf("Rollout = %+v, want applied in wave 1", r)
	}
}
