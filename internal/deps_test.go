package internal_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestImportRules enforces the package map of STYLE.md with `go list -deps`:
// data flows one way, and the adapters never import each other.
func TestImportRules(t *testing.T) {
	tests := []struct {
		pkg string
		// forbidden lists import path prefixes the package must not depend on.
		forbidden []string
	}{
		{"tug/internal/pod", []string{"tug/", "github.com/", "golang.org/x/"}},
		{"tug/internal/redact", []string{"tug/", "github.com/", "golang.org/x/", "gopkg.in/"}},
		{"tug/internal/clock", []string{"tug/", "github.com/", "golang.org/x/", "gopkg.in/"}},
		{"tug/internal/config", []string{"tug/", "github.com/"}},
		{"tug/internal/podconfig", []string{"tug/internal/source", "tug/internal/reconcile", "tug/internal/podruntime", "tug/internal/network", "tug/internal/config", "github.com/"}},
		{"tug/internal/source", []string{"tug/internal/podconfig", "tug/internal/reconcile", "tug/internal/podruntime", "tug/internal/network", "tug/internal/config", "github.com/"}},
		{"tug/internal/reconcile", []string{"tug/internal/podruntime", "tug/internal/network", "tug/internal/source", "tug/internal/config", "github.com/containerd/", "github.com/vishvananda/"}},
		{"tug/internal/podruntime", []string{"tug/internal/reconcile", "tug/internal/network", "tug/internal/qos", "tug/internal/source", "tug/internal/podconfig", "tug/internal/config", "tug/internal/testutil"}},
		{"tug/internal/api", []string{"tug/", "github.com/", "golang.org/x/"}},
		{"tug/internal/pleg", []string{"tug/", "github.com/", "golang.org/x/"}},
		{"tug/internal/policy", []string{"tug/", "github.com/", "golang.org/x/", "gopkg.in/"}},
		{"tug/internal/qos", []string{"tug/internal/reconcile", "tug/internal/podruntime", "tug/internal/network", "tug/internal/source", "tug/internal/podconfig", "tug/internal/pleg", "tug/internal/probe", "tug/internal/api", "tug/internal/config", "tug/internal/testutil", "github.com/containerd/containerd", "github.com/vishvananda/"}},
		{"tug/internal/network", []string{"tug/internal/reconcile", "tug/internal/podruntime", "tug/internal/qos", "tug/internal/config", "github.com/containerd/", "tug/internal/testutil"}},
	}
	for _, tt := range tests {
		t.Run(tt.pkg, func(t *testing.T) {
			out, err := exec.Command("go", "list", "-deps", "-json=ImportPath,Standard", tt.pkg).Output()
			if err != nil {
				t.Fatalf("go list %s: %v", tt.pkg, err)
			}
			dec := json.NewDecoder(strings.NewReader(string(out)))
			for dec.More() {
				var p struct {
					ImportPath string
					Standard   bool
				}
				if err := dec.Decode(&p); err != nil {
					t.Fatal(err)
				}
				if p.ImportPath == "testing" {
					t.Errorf("%s depends on package testing in production code", tt.pkg)
				}
				if p.ImportPath == tt.pkg || p.Standard {
					continue
				}
				for _, f := range tt.forbidden {
					if strings.HasPrefix(p.ImportPath, f) && !allowed(tt.pkg, p.ImportPath) {
						t.Errorf("%s must not depend on %s", tt.pkg, p.ImportPath)
					}
				}
			}
		})
	}
}

// allowed lists the dependencies a forbidden prefix would otherwise catch.
func allowed(pkg, dep string) bool {
	switch {
	case dep == "tug/internal/pod", dep == "tug/internal/redact", dep == "tug/internal/clock" && pkg != "tug/internal/pod":
		return true
	case pkg == "tug/internal/reconcile" && dep == "tug/internal/podconfig":
		return true
	case dep == "gopkg.in/yaml.v3":
		return true
	case strings.HasPrefix(dep, "golang.org/x/sys/") && pkg != "tug/internal/pod":
		return true
	}
	return false
}
