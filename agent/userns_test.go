package main

import (
	"testing"

	"tug/internal/config"
	"tug/internal/userns"
)

// TestUserNamespaceRangeRules holds config's check of
// --user-namespace-range to userns.ParseRange: a range config accepts is
// one tug can open, and the other way round.
func TestUserNamespaceRangeRules(t *testing.T) {
	for _, r := range []string{userns.DefaultRange, "131072/65536", "0/65536", "65536/65535", "65536/4294901760", "65536", "x/y"} {
		cfg := config.Default()
		cfg.UserNamespaceRange = r
		_, perr := userns.ParseRange(r)
		cerr := cfg.Validate()
		if (perr == nil) != (cerr == nil) {
			t.Errorf("%q: userns.ParseRange: %v; config.Validate: %v", r, perr, cerr)
		}
	}
	if config.Default().UserNamespaceRange != userns.DefaultRange {
		t.Errorf("config's default range %q, userns.DefaultRange %q", config.Default().UserNamespaceRange, userns.DefaultRange)
	}
}
