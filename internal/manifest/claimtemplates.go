package manifest

import (
	"fmt"
	"reflect"
	"slices"

	"gopkg.in/yaml.v3"

	"tug/internal/fieldpath"
	"tug/internal/pod"
	"tug/internal/podvalidate"
)

// A StatefulSet's volumeClaimTemplates, read as its controller reads them
// for the one pod that runs here (ordinal 0): each template is a claim
// named "<template>-<StatefulSet>-0" in the StatefulSet's namespace, the
// same local directory a PersistentVolumeClaim object in the file gives,
// and the pod gets a persistentVolumeClaim volume named as the template.

// claimTemplate is one decoded entry of spec.volumeClaimTemplates.
type claimTemplate struct {
	volume string      // the template's metadata.name: the pod's volume
	path   string      // "spec.volumeClaimTemplates[0]"
	claim  *pod.Object // the claim, named <template>-<set>-0
}

// retentionPolicy reads spec.persistentVolumeClaimRetentionPolicy and
// reports whether the claims outlive the StatefulSet (whenDeleted Retain,
// the default). whenScaled is accepted: one pod runs, never scaled down.
func (p *parser) retentionPolicy(d *decoder, n *yaml.Node) bool {
	const path = "spec.persistentVolumeClaimRetentionPolicy"
	retain := true
	if n == nil {
		return retain
	}
	n, ok := d.resolve(n, path)
	if !ok || isNull(n) {
		return retain
	}
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "expected a mapping, got %s", describe(n))
		return retain
	}
	d.pairs(n, path, func(k, v *yaml.Node, field string) {
		fp := fieldpath.Join(path, field)
		d.index.values[fp] = posOf(v)
		switch field {
		case "whenDeleted", "whenScaled":
		default:
			d.report(k, fp, "unknown field %q", field)
			return
		}
		v, ok := d.resolve(v, fp)
		if !ok {
			return
		}
		s, ok := d.str(v, fp)
		if !ok {
			return
		}
		switch s {
		case "Retain":
		case "Delete":
			if field == "whenDeleted" {
				retain = false
			} else {
				d.warn(k, fp, "ignored on a node: one pod runs and is never scaled down")
			}
		default:
			d.fail(v, fp, "unsupported value %q: must be \"Retain\" or \"Delete\"", s)
		}
	})
	return retain
}

// claimTemplates decodes and validates spec.volumeClaimTemplates of the
// StatefulSet set in namespace ns: each entry as a PersistentVolumeClaim
// object (the same rules and warnings), its metadata.name required and a
// valid name, unique among the templates.
func (p *parser) claimTemplates(d *decoder, n *yaml.Node, set, ns string, retain bool) []claimTemplate {
	const path = "spec.volumeClaimTemplates"
	if n == nil {
		return nil
	}
	n, ok := d.resolve(n, path)
	if !ok || isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.fail(n, path, "expected a list, got %s", describe(n))
		return nil
	}
	var out []claimTemplate
	for i, item := range n.Content {
		prefix := fieldpath.Index(path, i)
		c := new(pod.PersistentVolumeClaim)
		d.decode(item, reflect.ValueOf(c).Elem(), prefix)
		check := func(key string, ok bool, format string, args ...any) {
			if !ok {
				d.errs = append(d.errs, d.errorAt(fieldpath.Join(prefix, key), fmt.Sprintf(format, pod.TruncateArgs(format, args)...)))
			}
		}
		// An embedded object: apiVersion and kind may be left out.
		check("apiVersion", c.APIVersion == "" || c.APIVersion == "v1" || d.index.quiet(fieldpath.Join(prefix, "apiVersion")), "unsupported apiVersion %q: must be \"v1\"", c.APIVersion)
		check("kind", c.Kind == "" || c.Kind == pod.KindClaim || d.index.quiet(fieldpath.Join(prefix, "kind")), "unsupported kind %q: a claim template is a %s", c.Kind, pod.KindClaim)
		o := &pod.Object{Kind: pod.KindClaim, Namespace: ns, Origin: pod.Origin{Source: p.source, File: p.file}, Line: item.Line, Retain: retain}
		p.claim(d, o, &c.Spec, prefix, check)
		if d.exhausted() {
			return out
		}
		meta := c.Metadata
		if meta.Namespace != "" && meta.Namespace != ns {
			at := d.index.find(fieldpath.Join(prefix, "metadata.namespace"))
			d.warns = append(d.warns, &pod.FieldError{File: d.file, Line: at.line, Col: at.col, Path: fieldpath.Join(prefix, "metadata.namespace"),
				Msg: "ignored: the claim is in the StatefulSet's namespace (" + pod.Truncate(ns) + ")"})
		}
		if meta.Namespace == "" {
			meta.Namespace = ns
		}
		meta.ManifestName = meta.Name
		errs := podvalidate.Metadata(&meta, podvalidate.Where{File: p.file, Prefix: prefix, At: d.index})
		d.errs = append(d.errs, errs...)
		if meta.Name == "" || !pod.IsDNS1123Subdomain(meta.Name) {
			continue // reported
		}
		o.Name = meta.Name + "-" + set + "-0"
		namePath := fieldpath.Join(prefix, "metadata.name")
		if len(o.Name) > pod.DNS1123SubdomainMaxLen || !pod.IsDNS1123Subdomain(o.Name) {
			check("metadata.name", false, "the claim's name %q (<template>-<StatefulSet>-0) is not a valid name: %s", o.Name, pod.DNS1123SubdomainMsg)
			continue
		}
		if j := slices.IndexFunc(out, func(t claimTemplate) bool { return t.volume == meta.Name }); j >= 0 {
			d.errs = append(d.errs, d.errorAt(namePath, fmt.Sprintf("duplicate name %q: also the name of %s", pod.Truncate(meta.Name), out[j].path)))
			continue
		}
		out = append(out, claimTemplate{volume: meta.Name, path: prefix, claim: o})
	}
	return out
}

// mountClaimTemplates adds to pd, the pod of a StatefulSet, a
// persistentVolumeClaim volume named as each claim template, as the
// StatefulSet controller does. A volume of the pod template with the name
// of a claim template is replaced by the claim, as the controller replaces
// it on a cluster, with a warning: the file then runs as it runs there.
func mountClaimTemplates(d *decoder, pd *pod.Pod, tmpls []claimTemplate) {
	for _, t := range tmpls {
		v := pod.Volume{Name: t.volume, PersistentVolumeClaim: &pod.PersistentVolumeClaimVolumeSource{ClaimName: t.claim.Name}}
		if i := slices.IndexFunc(pd.Spec.Volumes, func(v pod.Volume) bool { return v.Name == t.volume }); i >= 0 {
			path := fieldpath.Join(fieldpath.Index("spec.template.spec.volumes", i), "name")
			w := d.errorAt(path, fmt.Sprintf("replaced by the claim %s of the claim template %s, as the StatefulSet controller replaces it", pod.Truncate(t.claim.Name), t.path)).(*pod.FieldError)
			d.warns = append(d.warns, w)
			pd.Spec.Volumes[i] = v
			continue
		}
		pd.Spec.Volumes = append(pd.Spec.Volumes, v)
	}
}

// addTemplateClaims adds the claims of the file's claim templates to its
// objects. A PersistentVolumeClaim object of the file with the same
// namespace and name is used instead, as the StatefulSet controller uses a
// claim that exists; of two templates giving one name, the first is kept.
func (p *parser) addTemplateClaims() {
	for _, o := range p.templateClaims {
		if _, dup := p.seenObj[o.Key()]; dup {
			continue
		}
		p.seenObj[o.Key()] = o.Line
		p.objects = append(p.objects, o)
	}
}
