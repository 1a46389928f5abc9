package remotewrite

import (
	"math"
	"slices"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// Label is one external label.
type Label struct {
	Name, Value string
}

// toTimeSeries turns gathered families into remote-write series, as
// Prometheus' scrape of the same /metrics would store them: counters,
// gauges and untyped metrics as they are; a histogram as its cumulative
// <name>_bucket{le} series (with le="+Inf"), <name>_sum and <name>_count;
// a summary as <name>{quantile}, <name>_sum and <name>_count. Every sample
// has the timestamp ts (ms). An external label is added to a series only
// when the series has no label of that name. Labels are sorted by name, as
// the remote-write protocol requires.
func toTimeSeries(families []*dto.MetricFamily, ts int64, external []Label) []series {
	var out []series
	add := func(name string, m *dto.Metric, extraName, extraValue string, v float64) {
		labels := make([]Label, 0, len(m.GetLabel())+len(external)+2)
		labels = append(labels, Label{Name: "__name__", Value: name})
		for _, l := range m.GetLabel() {
			labels = append(labels, Label{Name: l.GetName(), Value: l.GetValue()})
		}
		if extraName != "" {
			labels = append(labels, Label{Name: extraName, Value: extraValue})
		}
		own := len(labels)
		for _, e := range external {
			if !slices.ContainsFunc(labels[:own], func(l Label) bool { return l.Name == e.Name }) {
				labels = append(labels, e)
			}
		}
		slices.SortFunc(labels, func(a, b Label) int { return strings.Compare(a.Name, b.Name) })
		out = append(out, series{labels: labels, samples: []sample{{value: v, ts: ts}}})
	}
	for _, f := range families {
		name := f.GetName()
		for _, m := range f.GetMetric() {
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				add(name, m, "", "", m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				add(name, m, "", "", m.GetGauge().GetValue())
			case dto.MetricType_UNTYPED:
				add(name, m, "", "", m.GetUntyped().GetValue())
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				for _, q := range s.GetQuantile() {
					add(name, m, "quantile", formatFloat(q.GetQuantile()), q.GetValue())
				}
				add(name+"_sum", m, "", "", s.GetSampleSum())
				add(name+"_count", m, "", "", float64(s.GetSampleCount()))
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				h := m.GetHistogram()
				inf := false
				for _, b := range h.GetBucket() {
					if math.IsInf(b.GetUpperBound(), +1) {
						inf = true
					}
					add(name+"_bucket", m, "le", formatFloat(b.GetUpperBound()), float64(b.GetCumulativeCount()))
				}
				if !inf {
					add(name+"_bucket", m, "le", "+Inf", float64(h.GetSampleCount()))
				}
				add(name+"_sum", m, "", "", h.GetSampleSum())
				add(name+"_count", m, "", "", float64(h.GetSampleCount()))
			}
		}
	}
	return out
}

// formatFloat writes le and quantile values as the text exposition format
// does (so they match what a scrape stores): "+Inf", "-Inf", "NaN" or the
// shortest representation.
func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, +1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case math.IsNaN(f):
		return "NaN"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// LabelName turns any string into a valid Prometheus label name: every
// character outside [a-zA-Z0-9_] becomes "_", and a leading digit gets a
// "_" before it ("node-role.kubernetes.io/edge" is
// "node_role_kubernetes_io_edge", as Prometheus' Kubernetes discovery
// writes node labels).
func LabelName(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_':
			b.WriteRune(r)
		case r >= '0' && r <= '9':
			if i == 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}
