// Package manifest reads tug's manifests: it decodes YAML or JSON strictly
// into the types of package pod, reporting every problem of a file at once
// as a *pod.FieldError positioned at file:line:col
// ("web.yaml:12:7: spec.containers[0].image: required"), turns the kinds
// tug takes (Pod, List, the workload kinds whose template is a pod,
// ConfigMap, Secret, PersistentVolumeClaim) into pods and objects, applies
// pod.SetDefaults, names the pods as static pods and validates them
// (package podvalidate, with the positions the decoder recorded).
//
// A Kubernetes field tug does not run is never silently dropped: it is an
// error that says why ("needs an API server (tug has none)", "not
// implemented by tug", "not supported by tug yet"), or, when it has no
// effect on a node, a warning ("ignored on a node").
//
// Parse and ParseFile are the entry points for manifest bytes;
// podvalidate.Validate checks a pod built in code.
//
// One job per file:
//
//	parse.go               Parse, ParseOptions: documents, kinds, lists, naming the pods
//	parse_objects.go       ParseFile, Parsed: ConfigMaps, Secrets and claims beside the pods
//	workloads.go           Deployment, Job and the other workload kinds: their pod template
//	decode.go              the strict yaml.Node decoder
//	decode_fields.go       field tables of the decoder, "did you mean" hints
//	unsupported.go         Kubernetes fields tug rejects or ignores, and why
//	podfields.go           the table of those fields, one answer each
//	kinds.go               the kinds tug reads, skips or refuses
//
// The golden files of its tests are under testdata: good (pods and their
// JSON), bad (files and their errors), warn (files and their warnings) and
// fuzz (the corpus of FuzzParse).
//
// It imports packages pod, podvalidate, fieldpath, suggest, gopkg.in/yaml.v3
// and the standard library. It has no mutable package state: every
// function is safe for concurrent use, and the pods and objects it returns
// belong to the caller.
package manifest
