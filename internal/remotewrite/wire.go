package remotewrite

import (
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// series is one remote-write time series: its labels, sorted by name, and
// its one sample.
type series struct {
	labels []Label
	value  float64
	ts     int64 // ms
}

// Field numbers of the remote-write 1.0 messages (prometheus/prompb:
// remote.proto and types.proto).
const (
	fieldTimeseries  = 1 // WriteRequest.timeseries
	fieldLabels      = 1 // TimeSeries.labels
	fieldSamples     = 2 // TimeSeries.samples
	fieldLabelName   = 1 // Label.name
	fieldLabelValue  = 2 // Label.value
	fieldSampleValue = 1 // Sample.value (double)
	fieldSampleTime  = 2 // Sample.timestamp (int64, ms)
)

// encodeWriteRequest encodes a prometheus.WriteRequest of ss in the
// protobuf wire format, as prompb's generated Marshal does: fields in
// number order, proto3 zero values left out. The tests decode it with
// prompb and compare the bytes with prompb's own encoding.
func encodeWriteRequest(ss []series) []byte {
	var b []byte
	for _, s := range ss {
		b = protowire.AppendTag(b, fieldTimeseries, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(timeSeriesSize(s)))
		for _, l := range s.labels {
			b = protowire.AppendTag(b, fieldLabels, protowire.BytesType)
			b = protowire.AppendVarint(b, uint64(labelSize(l)))
			b = appendString(b, fieldLabelName, l.Name)
			b = appendString(b, fieldLabelValue, l.Value)
		}
		b = protowire.AppendTag(b, fieldSamples, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(sampleSize(s)))
		if s.value != 0 {
			b = protowire.AppendTag(b, fieldSampleValue, protowire.Fixed64Type)
			b = protowire.AppendFixed64(b, math.Float64bits(s.value))
		}
		if s.ts != 0 {
			b = protowire.AppendTag(b, fieldSampleTime, protowire.VarintType)
			b = protowire.AppendVarint(b, uint64(s.ts))
		}
	}
	return b
}

func appendString(b []byte, num protowire.Number, v string) []byte {
	if v == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, v)
}

func stringSize(num protowire.Number, v string) int {
	if v == "" {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeBytes(len(v))
}

func labelSize(l Label) int {
	return stringSize(fieldLabelName, l.Name) + stringSize(fieldLabelValue, l.Value)
}

func sampleSize(s series) int {
	n := 0
	if s.value != 0 {
		n += protowire.SizeTag(fieldSampleValue) + protowire.SizeFixed64()
	}
	if s.ts != 0 {
		n += protowire.SizeTag(fieldSampleTime) + protowire.SizeVarint(uint64(s.ts))
	}
	return n
}

func timeSeriesSize(s series) int {
	n := 0
	for _, l := range s.labels {
		n += protowire.SizeTag(fieldLabels) + protowire.SizeBytes(labelSize(l))
	}
	return n + protowire.SizeTag(fieldSamples) + protowire.SizeBytes(sampleSize(s))
}
