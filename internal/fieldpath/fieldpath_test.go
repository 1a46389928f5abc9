package fieldpath

import "testing"

func TestPaths(t *testing.T) {
	tests := []struct{ got, want string }{
		{Join("", "spec"), "spec"},
		{Join("spec", "containers"), "spec.containers"},
		{Index("spec.containers", 2), "spec.containers[2]"},
		{Key("metadata.labels", "app"), "metadata.labels[app]"},
		{Parent("spec.containers[2]"), "spec.containers"},
		{Parent("spec.containers"), "spec"},
		{Parent("spec"), ""},
		{Parent("metadata.labels[a.b]"), "metadata.labels"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
