package pod

import (
	"strconv"
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
