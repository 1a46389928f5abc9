package main

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"tug/internal/podview"
)

// TestWaveMetrics: one state per source is 1, the others 0; the wave's
// opening only while a version with a plan waits; a URL source with no
// plan is idle; the manifest directory is left out unless it has a state.
func TestWaveMetrics(t *testing.T) {
	opens := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	ms := []podview.ManifestStatus{
		{Source: "oci:r/a", File: "oci:r/a", Fetch: &podview.FetchStatus{}, Wave: &podview.WaveState{State: "waiting", Version: 7, WaveIndex: 2, WaveOpens: opens}},
		{Source: "oci:r/b", File: "oci:r/b", Fetch: &podview.FetchStatus{}, Wave: &podview.WaveState{State: "halted", Version: 7}},
		{Source: "https://u", File: "https://u", Fetch: &podview.FetchStatus{}},
		{Source: "file:/m", File: "/m/web.yaml"},
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(newWaveMetrics(func() []podview.ManifestStatus { return ms }))
	want := `
# HELP tug_bundle_wave_opens_timestamp_seconds When this device's wave of the held bundle version opens (Unix time); 0 when no version with a rollout plan is held.
# TYPE tug_bundle_wave_opens_timestamp_seconds gauge
tug_bundle_wave_opens_timestamp_seconds{source="https://u"} 0
tug_bundle_wave_opens_timestamp_seconds{source="oci:r/a"} 1.7961156e+09
tug_bundle_wave_opens_timestamp_seconds{source="oci:r/b"} 0
# HELP tug_bundle_rollout_state 1 for the source's rollout state (idle, waiting, applied, halted, rolled_back), 0 for the others.
# TYPE tug_bundle_rollout_state gauge
tug_bundle_rollout_state{source="https://u",state="applied"} 0
tug_bundle_rollout_state{source="https://u",state="halted"} 0
tug_bundle_rollout_state{source="https://u",state="idle"} 1
tug_bundle_rollout_state{source="https://u",state="rolled_back"} 0
tug_bundle_rollout_state{source="https://u",state="waiting"} 0
tug_bundle_rollout_state{source="oci:r/a",state="applied"} 0
tug_bundle_rollout_state{source="oci:r/a",state="halted"} 0
tug_bundle_rollout_state{source="oci:r/a",state="idle"} 0
tug_bundle_rollout_state{source="oci:r/a",state="rolled_back"} 0
tug_bundle_rollout_state{source="oci:r/a",state="waiting"} 1
tug_bundle_rollout_state{source="oci:r/b",state="applied"} 0
tug_bundle_rollout_state{source="oci:r/b",state="halted"} 1
tug_bundle_rollout_state{source="oci:r/b",state="idle"} 0
tug_bundle_rollout_state{source="oci:r/b",state="rolled_back"} 0
tug_bundle_rollout_state{source="oci:r/b",state="waiting"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
