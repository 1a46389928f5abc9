package pod

import (
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Caps on what one pod may hold: far above what a real pod needs, low
// enough that a manifest cannot make tug build huge OCI specs or status
// documents (Kubernetes has no such caps: its API server bounds an object
// to 1.5 MB instead).
const (
	// MaxContainers is the most containers, init and app together, a pod
	// may have.
	MaxContainers = 64
	// MaxEnv is the most env entries a container may have.
	MaxEnv = 1024
)

// MaxEcho is how many bytes of a value from a manifest an error message
// quotes; the rest is cut (Truncate). A manifest may hold a 1 MB label value;
// its error must not.
const MaxEcho = 100

// Truncate returns s if it is at most MaxEcho bytes long, else its first
// MaxEcho bytes (cut at a rune boundary) followed by "…" and the full
// length, e.g. "aaaa…(1048576 bytes)". Every error that quotes a value a
// manifest gave goes through it.
func Truncate(s string) string {
	return truncateTo(s, MaxEcho)
}

func truncateTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// TruncateArgs returns args with every value that format quotes (%q), as
// manifest values are, passed through pod.Truncate if it is a string (or
// string-kinded, such as a Protocol). tug's own texts, printed with %s,
// stay whole.
func TruncateArgs(format string, args []any) []any {
	var out []any
	n := 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		for i < len(format) && strings.IndexByte("+-# 0123456789.", format[i]) >= 0 {
			i++
		}
		if i >= len(format) || format[i] == '%' {
			continue
		}
		if format[i] == 'q' && n < len(args) && args[n] != nil {
			if v := reflect.ValueOf(args[n]); v.Kind() == reflect.String && len(v.String()) > MaxEcho {
				if out == nil {
					out = append([]any(nil), args...)
				}
				out[n] = Truncate(v.String())
			}
		}
		n++
	}
	if out == nil {
		return args
	}
	return out
}
