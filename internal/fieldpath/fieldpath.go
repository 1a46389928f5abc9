// Package fieldpath writes the field paths of a manifest's values as
// Kubernetes does in its errors: "spec.containers[0].image",
// "metadata.labels[app]". The decoder records where each path is written
// and validation names the path it refuses.
package fieldpath

import (
	"strconv"
	"strings"
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

// Join appends a field name to a path.
func Join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// Index appends a list index to a path.
func Index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// Key appends a map key to a path, as Kubernetes does: labels[app].
func Key(path, key string) string { return path + "[" + key + "]" }
