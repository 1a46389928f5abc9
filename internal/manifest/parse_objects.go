package manifest

import (
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"tug/internal/fieldpath"
	"tug/internal/pod"
	"tug/internal/podvalidate"
)

// Parsed is what one file holds: its pods and the objects beside them.
type Parsed struct {
	Pods    []*pod.Pod
	Objects []*pod.Object
	where   []podWhere // of each pod, for Position
}

// podWhere is where a pod's fields are in its file: the index of its
// document and the path of the pod in it ("spec.template" in a workload).
type podWhere struct {
	index  *nodeIndex
	prefix string
}

// Position returns where field path of the i-th pod (a path as the pod
// has it: "spec.containers[0].image") is written in the file, or its
// nearest written ancestor for a field the file does not have, with the
// path as the file has it (a workload's pod is under spec.template).
func (pf Parsed) Position(i int, path string) (filePath string, line, col int) {
	if i < 0 || i >= len(pf.where) {
		return path, 0, 0
	}
	w := pf.where[i]
	filePath = fieldpath.Join(w.prefix, path)
	pos := w.index.find(filePath)
	return filePath, pos.line, pos.col
}

// ParseFile is Parse that also returns the ConfigMaps, Secrets and
// PersistentVolumeClaims of the file (decoded strictly, validated, data
// decoded from base64). A file's pods may reference objects of another
// file of the same source: binding is the store's job (pod.Bind). On error
// nothing is returned.
func ParseFile(data []byte, opts ParseOptions) (Parsed, error) {
	p, err := parse(data, opts)
	if err != nil {
		return Parsed{}, err
	}
	return Parsed{Pods: p.pods, Objects: p.objects, where: p.where}, nil
}

// isObjectKind reports whether kind is an object tug takes beside pods.
func isObjectKind(kind string) bool {
	return kind == pod.KindConfigMap || kind == pod.KindSecret || kind == pod.KindClaim
}

// configMapKey is the Kubernetes rule for ConfigMap and Secret keys.
var configMapKey = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)

// maxObjectData bounds the data of one ConfigMap or Secret (Kubernetes'
// 1 MiB).
const maxObjectData = 1 << 20

// object decodes and validates a ConfigMap, Secret or claim in mapping n,
// whose field paths start with prefix ("" or "items[2]").
func (p *parser) object(d *decoder, n *yaml.Node, kind, prefix string) {
	o := &pod.Object{Kind: kind, Origin: pod.Origin{Source: p.source, File: p.file}, Line: n.Line}
	var meta *pod.ObjectMeta
	var apiVersion string
	check := func(key string, ok bool, format string, args ...any) {
		if !ok {
			d.errs = append(d.errs, d.errorAt(fieldpath.Join(prefix, key), fmt.Sprintf(format, args...)))
		}
	}
	dataKeys := func(field string, m map[string]string, b64 bool) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			kp := fieldpath.Key(field, k)
			if !configMapKey.MatchString(k) || k == "." || k == ".." || strings.HasPrefix(k, "..") {
				check(kp, false, "invalid key %q: must consist of alphanumeric characters, '-', '_' or '.', and not start with '..'", pod.Truncate(k))
				continue
			}
			if _, dup := o.Data[k]; dup {
				if kind == pod.KindConfigMap {
					check(kp, false, "key %q is also in data", pod.Truncate(k))
					continue
				}
			}
			v := []byte(m[k])
			if b64 {
				dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(m[k]))
				if err != nil {
					check(kp, false, "invalid base64: %v", err)
					continue
				}
				v = dec
			}
			o.Data[k] = v
		}
	}
	switch kind {
	case pod.KindConfigMap:
		cm := new(pod.ConfigMap)
		d.decode(n, reflect.ValueOf(cm).Elem(), prefix)
		meta, apiVersion = &cm.Metadata, cm.APIVersion
		o.Data = map[string][]byte{}
		dataKeys("data", cm.Data, false)
		dataKeys("binaryData", cm.BinaryData, true)
	case pod.KindSecret:
		s := new(pod.Secret)
		before := len(d.errs)
		d.decode(n, reflect.ValueOf(s).Elem(), prefix)
		hideSecretValues(d.errs[before:], prefix)
		meta, apiVersion = &s.Metadata, s.APIVersion
		o.Data = map[string][]byte{}
		dataKeys("data", s.Data, true)
		dataKeys("stringData", s.StringData, false) // stringData wins
		o.Type = s.Type
		if o.Type == "" {
			o.Type = pod.SecretOpaque
		}
		switch o.Type {
		case pod.SecretOpaque, pod.SecretBasicAuth, pod.SecretSSHAuth:
		case pod.SecretDockerConfigJSON:
			check("type", o.Data[".dockerconfigjson"] != nil, "a secret of type %s needs the key .dockerconfigjson", o.Type)
		case pod.SecretTLS:
			check("type", o.Data["tls.crt"] != nil && o.Data["tls.key"] != nil, "a secret of type %s needs the keys tls.crt and tls.key", o.Type)
		case "kubernetes.io/service-account-token":
			check("type", false, msgAPIServer+"a service account token is issued by the API server; use an Opaque secret with the token instead")
		default:
			check("type", false, "unsupported value %q: must be %q, %q, %q, %q or %q", pod.Truncate(o.Type), pod.SecretOpaque, pod.SecretDockerConfigJSON, pod.SecretTLS, pod.SecretBasicAuth, pod.SecretSSHAuth)
		}
	case pod.KindClaim:
		c := new(pod.PersistentVolumeClaim)
		d.decode(n, reflect.ValueOf(c).Elem(), prefix)
		meta, apiVersion = &c.Metadata, c.APIVersion
		p.claim(d, o, &c.Spec, prefix, check)
	}
	p.checkAPIVersion(d, prefix, apiVersion)
	if meta.Namespace == "" {
		meta.Namespace = "default"
	}
	o.Namespace, o.Name = meta.Namespace, meta.Name
	size := 0
	for _, v := range o.Data {
		size += len(v)
	}
	check("data", size <= maxObjectData, "%d bytes of data, more than %d", size, maxObjectData)
	if d.exhausted() {
		return
	}
	meta.ManifestName = meta.Name
	d.errs = append(d.errs, podvalidate.Metadata(meta, podvalidate.Where{File: p.file, Prefix: prefix, At: d.index})...)
	if o.Name != "" {
		key := o.Key()
		if line, dup := p.seenObj[key]; dup {
			d.errs = append(d.errs, d.errorAt(fieldpath.Join(prefix, "metadata.name"), fmt.Sprintf("%s %q is already defined at line %d", kind, pod.Truncate(o.Namespace+"/"+o.Name), line)))
		} else {
			p.seenObj[key] = d.index.find(fieldpath.Join(prefix, "metadata.name")).line
		}
	}
	p.objects = append(p.objects, o)
}

// hideSecretValues rewrites the decode errors of a Secret's data and
// stringData values, whose messages may quote the value ("expected a
// string, got ..."): a secret never reaches an error, hence a log.
func hideSecretValues(errs []error, prefix string) {
	for _, err := range errs {
		var fe *pod.FieldError
		if !errors.As(err, &fe) {
			continue
		}
		if rel := strings.TrimPrefix(strings.TrimPrefix(fe.Path, prefix), "."); strings.HasPrefix(rel, "data[") || strings.HasPrefix(rel, "stringData[") {
			fe.Msg = "invalid value (not shown: secret data); write it as a string"
		}
	}
}

// claim validates a claim's spec into o.
func (p *parser) claim(d *decoder, o *pod.Object, s *pod.PersistentVolumeClaimSpec, prefix string, check func(string, bool, string, ...any)) {
	for i, m := range s.AccessModes {
		switch m {
		case "ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod":
		default:
			check(fieldpath.Index("spec.accessModes", i), false, "unsupported value %q: must be \"ReadWriteOnce\", \"ReadOnlyMany\", \"ReadWriteMany\" or \"ReadWriteOncePod\"", pod.Truncate(m))
		}
	}
	switch s.VolumeMode {
	case "", "Filesystem":
	case "Block":
		check("spec.volumeMode", false, "%s: a block device claim needs a PersistentVolume; use Filesystem (tug backs a claim with a local directory)", strings.TrimSuffix(msgAPIServer, ": "))
	default:
		check("spec.volumeMode", false, "unsupported value %q: must be \"Filesystem\" or \"Block\"", pod.Truncate(s.VolumeMode))
	}
	check("spec.volumeName", s.VolumeName == "", "%sbinding a claim to a named PersistentVolume needs the API server; remove volumeName (tug backs a claim with a local directory)", msgAPIServer)
	for name, q := range s.Resources.Requests {
		path := fieldpath.Key("spec.resources.requests", string(name))
		if name != "storage" {
			check(path, false, "unsupported resource %q: a claim requests \"storage\"", pod.Truncate(string(name)))
			continue
		}
		check(path, q.MilliValue() > 0, "must be positive")
		q := q
		o.StorageRequest = &q
	}
	for name, q := range s.Resources.Limits {
		path := fieldpath.Key("spec.resources.limits", string(name))
		check(path, name == "storage", "unsupported resource %q: a claim limits \"storage\"", pod.Truncate(string(name)))
		if r := o.StorageRequest; name == "storage" && r != nil {
			check(path, q.MilliValue() >= r.MilliValue(), "must not be less than the request")
		}
	}
	if sc := s.StorageClassName; sc != nil && *sc != "" {
		path := fieldpath.Join(prefix, "spec.storageClassName")
		o.Warnings = append(o.Warnings, fmt.Sprintf("%s:%d: %s: storage class %q ignored: tug backs every claim with a local directory", p.file, d.index.find(path).line, path, pod.Truncate(*sc)))
	}
	if s.Selector != nil {
		path := fieldpath.Join(prefix, "spec.selector")
		o.Warnings = append(o.Warnings, fmt.Sprintf("%s:%d: %s: ignored: there are no PersistentVolumes to select on a node", p.file, d.index.find(path).line, path))
	}
}
