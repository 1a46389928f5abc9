package main

import (
	"slices"
	"testing"

	"tug/internal/config"
	"tug/internal/policy"
	"tug/internal/registry"
	"tug/internal/source"
)

// TestLimitOCISources: each OCI source's pods get the URL source's device
// list (none by default, never every device) and user namespace rule.
func TestLimitOCISources(t *testing.T) {
	tests := []struct {
		name    string
		devices []string
		userns  string
	}{
		{"defaults", nil, "allowed"},
		{"devices and user namespaces", []string{"example.com/dongle"}, "required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.URLAllowedDevices, cfg.URLUserNamespaces = tt.devices, tt.userns
			o, err := source.NewOCI(source.OCIConfig{Ref: "r.example/k:1", Resolver: registry.New(registry.Config{}).Resolver(t.Context(), nil, nil)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			pl := &policy.Policy{}
			limitOCISources(pl, cfg, []*source.OCI{o})
			got, limited := pl.AllowedDevices[o.Name()]
			if !limited || !slices.Equal(got, tt.devices) {
				t.Errorf("AllowedDevices[%s] = %v (%v), want %v, limited", o.Name(), got, limited, tt.devices)
			}
			if _, required := pl.RequireUserNamespaces[o.Name()]; required != (tt.userns == "required") {
				t.Errorf("RequireUserNamespaces = %v with %s", pl.RequireUserNamespaces, tt.userns)
			}
		})
	}
}
