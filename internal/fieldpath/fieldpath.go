// Package fieldpath writes the field paths of a manifest's values as
// Kubernetes does in its errors: "spec.containers[0].image",
// "metadata.labels[app]". The decoder records where each path is written
// and validation names the path it refuses.
//
// A field name or map key in a path comes from the manifest, and so from
// whoever wrote the file, the URL or the registry artifact: Join and Key
// write it through Escape, so that no path carries a byte a terminal acts
// on, whichever command, log, event or status document prints it. It
// imports only the standard library.
package fieldpath

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Parent strips the last element of a field path: "a.b[2]" -> "a.b",
// "a.b" -> "a", "a" -> "".
func Parent(path string) string {
	if strings.HasSuffix(path, "]") {
		if i := strings.LastIndexByte(path, '['); i >= 0 {
			return path[:i]
		}
	}
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[:i]
	}
	return ""
}

// Join appends a field name to a path. The name is escaped (Escape).
func Join(path, name string) string {
	name = Escape(name)
	if path == "" {
		return name
	}
	return path + "." + name
}

// Index appends a list index to a path.
func Index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// Key appends a map key to a path, as Kubernetes does: labels[app]. The
// key is escaped (Escape).
func Key(path, key string) string { return path + "[" + Escape(key) + "]" }

// Escape returns s with every rune that is not printable (strconv.IsPrint:
// the C0 and C1 controls such as ESC, BEL and CSI, DEL, format characters,
// invalid UTF-8) written as a Go escape, the way %q writes it but without
// the quotes: "\x1b]0;t\a" for ESC ] 0 ; t BEL, "\u009b" for CSI, "\xff"
// for a byte that is not UTF-8. Printable text, spaces and backslashes
// included, is kept as it is, so Kubernetes' paths read the same
// ("metadata.labels[app]") and Escape(Escape(s)) == Escape(s): a path
// built from escaped parts is not escaped twice. Two keys may escape to one
// path (a key holding ESC and one spelling "\x1b" with a backslash); a path
// names a place to a person, and both keys are refused anyway.
func Escape(s string) string {
	i := 0
	for i < len(s) {
		if c := s[i]; c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n <= 1) || !strconv.IsPrint(r) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case strconv.IsPrint(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}
