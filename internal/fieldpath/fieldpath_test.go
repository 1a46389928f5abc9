package fieldpath

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

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
		{Join("spec", "\x1b]0;pwned\x07x"), `spec.\x1b]0;pwned\ax`},
		{Key("metadata.labels", "\x1b[31mred"), `metadata.labels[\x1b[31mred]`},
		{Join("", "\x1b"), `\x1b`},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestEscape(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"printable ASCII", `app.kubernetes.io/name`, `app.kubernetes.io/name`},
		{"space and backslash kept", `a b\c`, `a b\c`},
		{"printable UTF-8 kept", "café…名前", "café…名前"},
		{"OSC title", "\x1b]0;pwned\x07x", `\x1b]0;pwned\ax`},
		{"CSI colour", "\x1b[31mred", `\x1b[31mred`},
		{"C1 CSI as UTF-8", "a\u009b31mb", `a\u009b31mb`},
		{"C1 as a raw byte", "a\x9bb", `a\x9bb`},
		{"invalid UTF-8", "a\xffb", `a\xffb`},
		{"newline and tab", "a\nb\tc", `a\nb\tc`},
		{"DEL", "a\x7f", `a\x7f`},
		{"zero-width space", "a\u200bb", `a\u200bb`},
		{"bidi override", "a\u202eb", `a\u202eb`},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Escape(tt.in)
			if got != tt.want {
				t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if again := Escape(got); again != got {
				t.Errorf("Escape is not idempotent: Escape(%q) = %q", got, again)
			}
			if !printable(got) {
				t.Errorf("Escape(%q) = %q holds a byte that is not printable", tt.in, got)
			}
		})
	}
}

// printable reports whether s is valid UTF-8 made of printable runes only.
func printable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' })
}

func FuzzEscape(f *testing.F) {
	f.Add("\x1b]0;pwned\x07x")
	f.Add("a\x9b\xff\u009b")
	f.Fuzz(func(t *testing.T, s string) {
		got := Escape(s)
		if !printable(got) {
			t.Fatalf("Escape(%q) = %q holds a byte that is not printable", s, got)
		}
		if Escape(got) != got {
			t.Fatalf("Escape is not idempotent on %q", s)
		}
	})
}
