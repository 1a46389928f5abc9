package wave

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func share(f float64) *float64 { return &f }

// TestBucket pins the hash: fleets compute it outside tug (the package
// doc's shell line gives 4b651f94b5cd46ff for kiosk-7 at version 42).
func TestBucket(t *testing.T) {
	tests := []struct {
		node    string
		version uint64
		want    int
	}{
		{"kiosk-7", 42, int(0x4b651f94b5cd46ff % Buckets)},
	}
	for _, tt := range tests {
		if got := Bucket(tt.node, tt.version); got != tt.want {
			t.Errorf("Bucket(%q, %d) = %d, want %d", tt.node, tt.version, got, tt.want)
		}
	}
	// The version moves a device between buckets, and the buckets spread.
	below := 0
	for i := range 1000 {
		if Bucket("node-"+string(rune('a'+i%26))+strings.Repeat("x", i/26), 7) < Buckets/2 {
			below++
		}
	}
	if below < 430 || below > 570 {
		t.Errorf("%d of 1000 nodes below 50 %%: the hash does not spread", below)
	}
	if Bucket("kiosk-7", 42) == Bucket("kiosk-7", 43) && Bucket("kiosk-7", 44) == Bucket("kiosk-7", 42) {
		t.Error("the bucket does not depend on the version")
	}
}

func TestChoose(t *testing.T) {
	start := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	node := "kiosk-7"
	b := Bucket(node, 42)
	plan := func(ws ...Wave) *Plan { return &Plan{Start: start, Waves: ws} }
	tests := []struct {
		name      string
		plan      *Plan
		labels    map[string]string
		wantIndex int
		wantName  string
		wantAfter time.Duration
	}{
		{"labels match", plan(Wave{Name: "canary", Labels: map[string]string{"ring": "canary"}}, Wave{After: Duration(time.Hour)}),
			map[string]string{"ring": "canary"}, 1, "canary", 0},
		{"labels differ: next wave", plan(Wave{Name: "canary", Labels: map[string]string{"ring": "canary"}}, Wave{After: Duration(time.Hour)}),
			map[string]string{"ring": "prod"}, 2, "wave 2", time.Hour},
		{"label missing", plan(Wave{Labels: map[string]string{"ring": "canary"}}), nil, 0, "", 0},
		{"share above the bucket", plan(Wave{Name: "s", Share: share(float64(b+1) / 100)}), nil, 1, "s", 0},
		{"share at the bucket", plan(Wave{Name: "s", Share: share(float64(b) / 100)}), nil, 0, "", 0},
		{"share 0", plan(Wave{Share: share(0)}), nil, 0, "", 0},
		{"share 100", plan(Wave{Share: share(100)}), nil, 1, "wave 1", 0},
		{"labels and share, labels fail", plan(Wave{Labels: map[string]string{"a": "b"}, Share: share(100)}), nil, 0, "", 0},
		{"neither selects all", plan(Wave{Share: share(0)}, Wave{After: Duration(2 * time.Hour)}), nil, 2, "wave 2", 2 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.plan.Choose(node, tt.labels, 42)
			if a.Index != tt.wantIndex || a.Name != tt.wantName || a.Bucket != b {
				t.Fatalf("got %+v, want wave %d %q, bucket %d", a, tt.wantIndex, tt.wantName, b)
			}
			if a.Index > 0 && !a.Opens.Equal(start.Add(tt.wantAfter)) {
				t.Errorf("opens %s, want %s", a.Opens, start.Add(tt.wantAfter))
			}
			if a.Index == 0 && !a.Opens.IsZero() {
				t.Errorf("no wave, opens %s", a.Opens)
			}
		})
	}
}

func TestPlanJSONAndValidate(t *testing.T) {
	tests := []struct {
		name string
		json string
		want string // "" : valid; else the field the error names
	}{
		{"good", `{"start":"2026-12-01T08:00:00Z","waves":[{"name":"canary","labels":{"ring":"canary"}},{"share":50,"after":"1h"},{"after":"24h"}]}`, ""},
		{"no start", `{"waves":[{}]}`, "rollout.start"},
		{"no waves", `{"start":"2026-12-01T08:00:00Z","waves":[]}`, "rollout.waves"},
		{"share above 100", `{"start":"2026-12-01T08:00:00Z","waves":[{"share":150}]}`, "rollout.waves[0].share"},
		{"share negative", `{"start":"2026-12-01T08:00:00Z","waves":[{},{"share":-1}]}`, "rollout.waves[1].share"},
		{"after negative", `{"start":"2026-12-01T08:00:00Z","waves":[{"after":"-1h"}]}`, "rollout.waves[0].after"},
		{"after out of order", `{"start":"2026-12-01T08:00:00Z","waves":[{"after":"2h"},{"after":"1h"}]}`, "rollout.waves[1].after"},
		{"same name twice", `{"start":"2026-12-01T08:00:00Z","waves":[{"name":"a"},{"name":"a"}]}`, "rollout.waves[1].name"},
		{"empty label key", `{"start":"2026-12-01T08:00:00Z","waves":[{"labels":{"":"x"}}]}`, "rollout.waves[0].labels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p Plan
			if err := json.Unmarshal([]byte(tt.json), &p); err != nil {
				t.Fatal(err)
			}
			err := p.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tt.want == "":
				out, _ := json.Marshal(p)
				var again Plan
				if err := json.Unmarshal(out, &again); err != nil || again.Validate() != nil || len(again.Waves) != len(p.Waves) || again.Waves[1].After != p.Waves[1].After {
					t.Errorf("round trip %s: %+v, %v", out, again, err)
				}
			case err == nil:
				t.Fatalf("Validate accepted it, want an error naming %s", tt.want)
			case !errors.Is(err, ErrBadPlan) || !strings.Contains(err.Error(), tt.want+":"):
				t.Errorf("error %q does not name %s", err, tt.want)
			}
		})
	}
	var p Plan
	if err := json.Unmarshal([]byte(`{"start":"2026-12-01T08:00:00Z","waves":[{"after":"soon"}]}`), &p); err == nil {
		t.Error("after \"soon\" decoded")
	}
}

func TestValidateHalt(t *testing.T) {
	tests := []struct {
		name    string
		halt    Halt
		version uint64
		ok      bool
	}{
		{"older version", Halt{Version: 6}, 7, true},
		{"no version", Halt{}, 7, false},
		{"same version", Halt{Version: 7}, 7, false},
		{"newer version", Halt{Version: 8, Revert: true}, 7, false},
	}
	for _, tt := range tests {
		err := ValidateHalt(&tt.halt, tt.version)
		if (err == nil) != tt.ok || (err != nil && !strings.Contains(err.Error(), "halt.version")) {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

func TestParseFlag(t *testing.T) {
	tests := []struct {
		in   string
		want string // the wave's JSON, or "error"
	}{
		{"name=canary,labels=ring=canary,after=0s", `{"name":"canary","labels":{"ring":"canary"}}`},
		{"share=50,after=1h", `{"share":50,"after":"1h0m0s"}`},
		{"share=2.5%,labels=a=b,labels=c=d", `{"labels":{"a":"b","c":"d"},"share":2.5}`},
		{"after=soon", "error"},
		{"ring=canary", "error"},
		{"labels=canary", "error"},
		{"share=half", "error"},
	}
	for _, tt := range tests {
		w, err := ParseFlag(tt.in)
		if tt.want == "error" {
			if err == nil || !errors.Is(err, ErrBadPlan) {
				t.Errorf("ParseFlag(%q) = %+v, %v; want an error", tt.in, w, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseFlag(%q): %v", tt.in, err)
			continue
		}
		if got, _ := json.Marshal(w); string(got) != tt.want {
			t.Errorf("ParseFlag(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
