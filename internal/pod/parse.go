package pod

// TEMPORARY: a minimal Parse so other packages compile; replaced by the
// strict decoder (decode.go / validate.go).

import (
	"bytes"
	"errors"
	"io"

	"gopkg.in/yaml.v3"
)

// ParseOptions says where the bytes came from and how to name the pods.
type ParseOptions struct {
	Origin   Origin
	Hostname string // appended to each pod name as "-<hostname>"
}

// Parse decodes one file's bytes (YAML or JSON; one Pod per document,
// multi-document YAML and kind: List accepted), applies defaults, validates,
// and names the pods as static pods (name, UID). All problems are returned
// at once, joined, each a *FieldError.
func Parse(data []byte, opts ParseOptions) ([]*Pod, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var pods []*Pod
	for {
		var p Pod
		if err := dec.Decode(&p); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, &FieldError{File: opts.Origin.File, Msg: err.Error()}
		}
		if p.Metadata.Namespace == "" {
			p.Metadata.Namespace = "default"
		}
		if p.Spec.RestartPolicy == "" {
			p.Spec.RestartPolicy = RestartAlways
		}
		p.Metadata.ManifestName = p.Metadata.Name
		if opts.Hostname != "" {
			p.Metadata.Name += "-" + opts.Hostname
		}
		p.Metadata.UID = UID(opts.Origin.Source, p.Metadata.Namespace, p.Metadata.Name)
		pods = append(pods, &p)
	}
	return pods, nil
}
