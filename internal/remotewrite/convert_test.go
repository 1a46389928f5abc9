package remotewrite

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/prompb"
)

// seriesText prints series as "name{a=b,...} value@ts" lines, labels in
// their order.
func seriesText(series []prompb.TimeSeries) []string {
	var out []string
	for _, s := range series {
		var b strings.Builder
		for i, l := range s.Labels {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(l.Name + "=" + l.Value)
		}
		for _, smp := range s.Samples {
			out = append(out, b.String()+" "+prompbValue(smp))
		}
	}
	return out
}

// decode reads a WriteRequest with Prometheus' own prompb types.
func decode(t *testing.T, data []byte) prompb.WriteRequest {
	t.Helper()
	var wr prompb.WriteRequest
	if err := wr.Unmarshal(data); err != nil {
		t.Fatalf("prompb cannot decode the request: %v", err)
	}
	return wr
}

// TestEncodeWriteRequestAsPrompb: the encoding is byte for byte the one of
// prompb's generated Marshal, zero values, negative timestamps, special
// floats and long strings included.
func TestEncodeWriteRequestAsPrompb(t *testing.T) {
	long := strings.Repeat("x", 300) // a length of two varint bytes
	for _, tt := range []struct {
		name string
		in   []series
	}{
		{"none", nil},
		{"one", []series{{labels: []Label{{"__name__", "up"}, {"node", "edge1"}}, samples: []sample{{value: 1, ts: 1000}}}}},
		{"zeros", []series{{labels: []Label{{"__name__", "z"}, {"empty", ""}}, samples: []sample{{value: 0, ts: 0}}}}},
		{"no labels", []series{{samples: []sample{{value: 2, ts: 5}}}}},
		{"several samples", []series{{labels: []Label{{"__name__", "up"}}, samples: []sample{{value: 1, ts: 1000}, {value: 0, ts: 2000}, {value: 3, ts: 3000}}}}},
		{"negative and special", []series{
			{labels: []Label{{"__name__", "a"}}, samples: []sample{{value: math.Inf(-1), ts: -1}}},
			{labels: []Label{{"__name__", "b"}}, samples: []sample{{value: math.NaN(), ts: math.MaxInt64}}},
			{labels: []Label{{"__name__", "c"}}, samples: []sample{{value: -0.5, ts: math.MinInt64}}},
		}},
		{"long", []series{{labels: []Label{{"__name__", long}, {"ünï", long + "ç"}}, samples: []sample{{value: 1e300, ts: 1 << 40}}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var ref prompb.WriteRequest
			for _, s := range tt.in {
				var ts prompb.TimeSeries
				for _, sm := range s.samples {
					ts.Samples = append(ts.Samples, prompb.Sample{Value: sm.value, Timestamp: sm.ts})
				}
				for _, l := range s.labels {
					ts.Labels = append(ts.Labels, prompb.Label{Name: l.Name, Value: l.Value})
				}
				ref.Timeseries = append(ref.Timeseries, ts)
			}
			want, err := ref.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if got := encodeWriteRequest(tt.in); !bytes.Equal(got, want) {
				t.Fatalf("encoding\n%x\nprompb's\n%x", got, want)
			}
		})
	}
}

func prompbValue(s prompb.Sample) string {
	return formatFloat(s.Value) + "@" + formatFloat(float64(s.Timestamp))
}

func gather(t *testing.T, cs ...prometheus.Collector) []*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(cs...)
	mf, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return mf
}

func TestToTimeSeries(t *testing.T) {
	counter := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "c_total", Help: "h"}, []string{"node"})
	counter.WithLabelValues("own").Add(3)
	gauge := prometheus.NewGauge(prometheus.GaugeOpts{Name: "g", Help: "h"})
	gauge.Set(-1.5)
	untyped := prometheus.NewUntypedFunc(prometheus.UntypedOpts{Name: "u", Help: "h"}, func() float64 { return 7 })
	hist := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "h_seconds", Help: "h", Buckets: []float64{0.5, 1}})
	hist.Observe(0.25)
	hist.Observe(2)
	summ := prometheus.NewSummary(prometheus.SummaryOpts{Name: "s", Help: "h", Objectives: map[float64]float64{0.5: 0.05}})
	summ.Observe(4)
	ext := []Label{{Name: "instance", Value: "edge1"}, {Name: "node", Value: "edge1"}}

	tests := []struct {
		name string
		c    prometheus.Collector
		want []string
	}{
		{"counter, own label wins", counter, []string{"__name__=c_total,instance=edge1,node=own 3@1000"}},
		{"gauge", gauge, []string{"__name__=g,instance=edge1,node=edge1 -1.5@1000"}},
		{"untyped", untyped, []string{"__name__=u,instance=edge1,node=edge1 7@1000"}},
		{"histogram as classic buckets", hist, []string{
			"__name__=h_seconds_bucket,instance=edge1,le=0.5,node=edge1 1@1000",
			"__name__=h_seconds_bucket,instance=edge1,le=1,node=edge1 1@1000",
			"__name__=h_seconds_bucket,instance=edge1,le=+Inf,node=edge1 2@1000",
			"__name__=h_seconds_sum,instance=edge1,node=edge1 2.25@1000",
			"__name__=h_seconds_count,instance=edge1,node=edge1 2@1000",
		}},
		{"summary with quantiles", summ, []string{
			"__name__=s,instance=edge1,node=edge1,quantile=0.5 4@1000",
			"__name__=s_sum,instance=edge1,node=edge1 4@1000",
			"__name__=s_count,instance=edge1,node=edge1 1@1000",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := seriesText(decode(t, encodeWriteRequest(toTimeSeries(gather(t, tt.c), 1000, ext))).Timeseries)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestLabelName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"zone", "zone"},
		{"node-role.kubernetes.io/edge", "node_role_kubernetes_io_edge"},
		{"1st", "_1st"},
		{"a9_B", "a9_B"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := LabelName(tt.in); got != tt.want {
				t.Errorf("LabelName(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
