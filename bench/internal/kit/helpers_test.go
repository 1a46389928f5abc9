package kit

import "testing"

// TestIsShim: a shim is known by its executable, its containerd's socket
// and the namespace after -namespace.
func TestIsShim(t *testing.T) {
	shim := []string{"/usr/bin/containerd-shim-runc-v2", "-namespace", "bench-idle", "-id", "x", "-address", "/run/c.sock"}
	tests := []struct {
		name      string
		exe       string
		args      []string
		namespace string
		want      bool
	}{
		{"the benchmark's shim", "containerd-shim-runc-v2", shim, "bench-idle", true},
		{"another namespace", "containerd-shim-runc-v2", shim, "bench-logs", false},
		{"another containerd", "containerd-shim-runc-v2", shim[:5], "bench-idle", false},
		{"not a shim", "sleep", shim, "bench-idle", false},
		{"-namespace last", "containerd-shim-runc-v2", []string{"/run/c.sock", "-namespace"}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsShim(tt.exe, tt.args, "/run/c.sock", tt.namespace); got != tt.want {
				t.Errorf("IsShim(%q, %q, %q) = %v, want %v", tt.exe, tt.args, tt.namespace, got, tt.want)
			}
		})
	}
}
