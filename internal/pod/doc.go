// Package pod owns tug's manifest types (a Kubernetes Pod v1 subset), their
// strict decoding with file:line:col errors, defaults, validation, static pod
// naming, the deterministic pod UID and per-container spec hashes, and the
// observed-state types the runtime reports.
//
// It imports only the standard library and gopkg.in/yaml.v3; every other
// internal package may import it.
package pod
