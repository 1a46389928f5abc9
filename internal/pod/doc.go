// Package pod owns tug's manifest types (a Kubernetes Pod v1 subset), their
// strict decoding with file:line:col errors, defaults, validation, static pod
// naming, the deterministic pod UID and per-container spec hashes, and the
// observed-state types the runtime reports.
//
// Parse is the entry point for manifest bytes: it decodes YAML or JSON
// through yaml.Node with a reflection-based decoder of its own (decode.go),
// so that every problem in a file is reported at once as a *FieldError
// ("web.yaml:12:7: spec.containers[0].image: required"), then applies
// SetDefaults (defaults.go), names the pods (parse.go) and runs the checks of
// Validate (validate.go). A Kubernetes field tug does not implement is an
// error of its own ("not supported by tug yet", unsupported.go), never
// silently ignored.
//
// It imports only the standard library and gopkg.in/yaml.v3; every other
// internal package may import it. It has no mutable package state: every
// function is safe for concurrent use, and the pods it returns belong to the
// caller.
package pod
