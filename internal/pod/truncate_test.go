package pod

import (
	"strings"
	"testing"
)

func TestTruncate(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"short", "web", "web"},
		{"exactly the limit", strings.Repeat("a", MaxEcho), strings.Repeat("a", MaxEcho)},
		{"long", strings.Repeat("a", 1<<20), strings.Repeat("a", MaxEcho) + "…(1048576 bytes)"},
		{"cut at a rune boundary", strings.Repeat("a", MaxEcho-1) + "é" + "zz", strings.Repeat("a", MaxEcho-1) + "…(103 bytes)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Truncate(tt.in); got != tt.want {
				t.Errorf("Truncate = %q, want %q", got, tt.want)
			}
		})
	}
}
