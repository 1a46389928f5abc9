package specopts

import (
	"slices"
	"testing"

	"tug/internal/pod"
)

func TestExpandVars(t *testing.T) {
	vars := map[string]string{"A": "1", "B": "two", "EMPTY": ""}
	tests := map[string]string{
		"":               "",
		"plain":          "plain",
		"$(A)":           "1",
		"x$(A)y$(B)z":    "x1ytwoz",
		"$(EMPTY)!":      "!",
		"$(MISSING)":     "$(MISSING)",
		"$$(A)":          "$(A)",
		"$$":             "$",
		"$A":             "$A",
		"$":              "$",
		"a$":             "a$",
		"$(A":            "$(A",
		"$()":            "$()",
		"$($(A))":        "$($(A))",
		"cost: $$5":      "cost: $5",
		"$(A)$(A)$$$(B)": "11$two",
	}
	for in, want := range tests {
		if got := expandVars(in, vars); got != want {
			t.Errorf("expandVars(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestExpandEnvOrder(t *testing.T) {
	env, vars := expandEnv([]pod.EnvVar{
		{Name: "LATER_REF", Value: "$(B)"}, // B is not defined yet
		{Name: "A", Value: "a"},
		{Name: "B", Value: "$(A)b"},
	})
	want := []string{"LATER_REF=$(B)", "A=a", "B=ab"}
	if !slices.Equal(env, want) {
		t.Errorf("env = %q, want %q", env, want)
	}
	if vars["B"] != "ab" {
		t.Errorf("vars[B] = %q", vars["B"])
	}
}
