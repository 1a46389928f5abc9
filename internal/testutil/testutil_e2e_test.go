//go:build e2e

package testutil

import (
	"os"
	"testing"
)

// TestEnvironment checks the helpers against the real test environment
// (scripts/testenv.sh up): with it they must neither skip nor fail.
func TestEnvironment(t *testing.T) {
	addr := RequireContainerd(t)
	if addr != os.Getenv(EnvContainerd) {
		t.Errorf("RequireContainerd = %q", addr)
	}
	name, archive := TestImage(t)
	if name == "" || archive == "" {
		t.Errorf("TestImage = %q, %q", name, archive)
	}
	if ref := RegistryImage(t); ref == "" {
		t.Error("RegistryImage is empty")
	}
	RequireCommand(t, "ctr")
	Logger(t).Info("environment ok", "containerd", addr, "image", name, "namespace", Namespace(t))
}
