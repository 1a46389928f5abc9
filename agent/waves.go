package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"tug/internal/podview"
)

// rolloutStates are the states of tug_bundle_rollout_state, in order.
var rolloutStates = []string{"idle", "waiting", "applied", "halted", "rolled_back"}

// waveMetrics exports each source's place in its bundle rollout, read
// from the status API's manifests at each scrape:
// tug_bundle_wave_opens_timestamp_seconds{source} and
// tug_bundle_rollout_state{source,state}. A URL or OCI source is always
// there (idle when no plan concerns it); the manifest directory only when
// a file of it was rolled back.
type waveMetrics struct {
	manifests   func() []podview.ManifestStatus
	opens, info *prometheus.Desc
}

func newWaveMetrics(manifests func() []podview.ManifestStatus) *waveMetrics {
	return &waveMetrics{
		manifests: manifests,
		opens: prometheus.NewDesc("tug_bundle_wave_opens_timestamp_seconds",
			"When this device's wave of the held bundle version opens (Unix time); 0 when no version with a rollout plan is held.", []string{"source"}, nil),
		info: prometheus.NewDesc("tug_bundle_rollout_state",
			"1 for the source's rollout state (idle, waiting, applied, halted, rolled_back), 0 for the others.", []string{"source", "state"}, nil),
	}
}

func (m *waveMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.opens
	ch <- m.info
}

func (m *waveMetrics) Collect(ch chan<- prometheus.Metric) {
	type sourceState struct {
		state string
		opens float64
	}
	by := map[string]sourceState{}
	for _, ms := range m.manifests() {
		st, seen := by[ms.Source]
		if !seen && ms.Fetch != nil {
			st.state = "idle"
		}
		if w := ms.Wave; w != nil && (st.state == "" || st.state == "idle") {
			st.state = w.State
			if w.State == "waiting" && !w.WaveOpens.IsZero() {
				st.opens = float64(w.WaveOpens.UnixMilli()) / 1e3
			}
		}
		if st.state != "" {
			by[ms.Source] = st
		}
	}
	for src, st := range by {
		ch <- prometheus.MustNewConstMetric(m.opens, prometheus.GaugeValue, st.opens, src)
		for _, s := range rolloutStates {
			v := 0.0
			if s == st.state {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(m.info, prometheus.GaugeValue, v, src, s)
		}
	}
}
