package images

import (
	"testing"

	"tug/internal/registry"
)

func TestServedBy(t *testing.T) {
	tests := []struct {
		name       string
		answers    []registry.Served
		wantString string
		wantNote   string
	}{
		{"nothing fetched", nil, "", ""},
		{"the registry itself", []registry.Served{{Host: "r.example"}, {Host: "r.example"}}, "r.example", ""},
		{"a mirror", []registry.Served{{Host: "m:5000", Mirror: true}, {Host: "m:5000", Mirror: true}},
			"mirror m:5000", " Pulled from mirror m:5000."},
		{"a mirror, then the upstream", []registry.Served{{Host: "m:5000", Mirror: true}, {Host: "r.example"}},
			"mirror m:5000, r.example", " Pulled from mirror m:5000, r.example."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s servedBy
			for _, a := range tt.answers {
				s.observe(a)
			}
			if got := s.String(); got != tt.wantString {
				t.Errorf("String() = %q, want %q", got, tt.wantString)
			}
			if got := s.eventNote(); got != tt.wantNote {
				t.Errorf("eventNote() = %q, want %q", got, tt.wantNote)
			}
		})
	}
}
