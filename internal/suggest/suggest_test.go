package suggest

import (
	"strings"
	"testing"
)

func TestDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"pod", "pod", 0},
		{"Pdo", "Pod", 2},
		{"imagee", "image", 1},
		{"eviction-hardd", "eviction-hard", 1},
		{"", "abc", 3},
		{"kitten", "sitting", 3},
		{strings.Repeat("a", 65), "a", 65},
	}
	for _, tt := range tests {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
