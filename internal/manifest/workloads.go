package manifest

import (
	"fmt"
	"reflect"

	"gopkg.in/yaml.v3"

	"tug/internal/fieldpath"
	"tug/internal/pod"
	"tug/internal/podvalidate"
)

// Workload kinds that mean "run this pod here", read as podman kube play
// reads them: the pod template runs as one pod named "<name>-pod" in the
// workload's namespace, whatever the replica count. A Job's template runs to
// completion (its restartPolicy is OnFailure or Never) and its backoffLimit
// bounds the restarts of a failed container (see pod.Pod.BackoffLimit). A
// StatefulSet's volumeClaimTemplates become claims of the file and volumes
// of its pod (claimtemplates.go). The workload's own metadata is checked
// as a pod's: its labels and annotations are strings with valid keys.

// workloadAPIVersions are the apiVersions of the workload kinds.
var workloadAPIVersions = map[string]string{
	"Deployment":  "apps/v1",
	"DaemonSet":   "apps/v1",
	"StatefulSet": "apps/v1",
	"ReplicaSet":  "apps/v1",
	"Job":         "batch/v1",
}

// workloadSpecIgnored are the fields of a workload's spec that only a
// controller reads, with the warning given. selector and template are read.
var workloadSpecIgnored = map[string]string{
	"strategy":                "ignored on a node: the pod is replaced in place when the file changes",
	"updateStrategy":          "ignored on a node: the pod is replaced in place when the file changes",
	"minReadySeconds":         "ignored on a node: no controller waits for it",
	"revisionHistoryLimit":    "ignored on a node: tug keeps one previous spec",
	"progressDeadlineSeconds": "ignored on a node: no controller watches the rollout",
	"paused":                  "ignored on a node: no controller rolls the pod out",
	"serviceName":             "ignored on a node: there are no Services",
	"podManagementPolicy":     "ignored on a node: one pod runs",
	"ordinals":                "ignored on a node: one pod runs",
	"completions":             "ignored on a node: the pod runs once to completion",
	"parallelism":             "ignored on a node: one pod runs",
	"completionMode":          "ignored on a node: one pod runs",
	"activeDeadlineSeconds":   "ignored on a node: not enforced for Jobs",
	"ttlSecondsAfterFinished": "ignored on a node: the finished pod stays until its file is removed",
	"suspend":                 "ignored on a node: remove the file to stop the Job",
	"manualSelector":          "ignored on a node: one pod runs",
	"podFailurePolicy":        "ignored on a node: only backoffLimit is applied",
	"backoffLimitPerIndex":    "ignored on a node: one pod runs",
	"maxFailedIndexes":        "ignored on a node: one pod runs",
	"podReplacementPolicy":    "ignored on a node: one pod runs",
	"successPolicy":           "ignored on a node: the pod runs once to completion",
	"managedBy":               "ignored on a node: tug runs the Job",
}

// isWorkloadKind reports whether kind is one of the workload kinds.
func isWorkloadKind(kind string) bool {
	_, ok := workloadAPIVersions[kind]
	return ok
}

// workload decodes a Deployment, DaemonSet, StatefulSet, ReplicaSet or Job
// into the pod of its template. Field paths keep the workload's shape
// ("spec.template.spec.containers[0].image"), so errors point at the file.
func (p *parser) workload(d *decoder, root *yaml.Node, kind string) {
	name, namespace, spec := p.workloadHead(d, root, kind, workloadAPIVersions[kind], "spec.template")
	if spec != nil {
		p.jobSpec(d, spec, "spec", kind, name, namespace)
	}
}

// workloadHead decodes what every workload kind has at its top: apiVersion
// (which must be want), kind, metadata (checked as an ObjectMeta), spec and
// an empty status. It returns the name and namespace nodes (namespace may
// be nil) and the spec, or a nil spec when the object has no name or no
// spec, whose absence is reported naming needs, what the spec must hold.
func (p *parser) workloadHead(d *decoder, root *yaml.Node, kind, want, needs string) (name, namespace, spec *yaml.Node) {
	var apiVersion, meta *yaml.Node
	d.pairs(root, "", func(k, v *yaml.Node, field string) {
		d.index.values[field] = posOf(v)
		switch field {
		case "apiVersion":
			apiVersion = v
		case "kind":
		case "metadata":
			meta = v
		case "spec":
			spec = v
		case "status":
			if !isEmpty(v) {
				d.fail(k, field, msgStatus)
			}
		default:
			d.report(k, field, "unknown field %q", field)
		}
	})
	if apiVersion == nil || apiVersion.Kind != yaml.ScalarNode || apiVersion.Value != want {
		got, n := "", root
		if apiVersion != nil {
			got, n = apiVersion.Value, apiVersion
		}
		d.fail(n, "apiVersion", "unsupported apiVersion %q for kind %s: must be %q", got, kind, want)
	}
	if meta != nil {
		if meta.Kind == yaml.MappingNode {
			name, namespace = scalarField(meta, "name"), scalarField(meta, "namespace")
		}
		p.workloadMeta(d, meta)
	}
	if name == nil {
		d.fail(root, "metadata.name", "required")
		return nil, nil, nil
	}
	if spec == nil || spec.Kind != yaml.MappingNode {
		d.fail(root, "spec", "required: a %s needs %s", kind, needs)
		return name, namespace, nil
	}
	return name, namespace, spec
}

// jobSpec decodes the spec of a workload (or of a CronJob's jobTemplate,
// sp "spec.jobTemplate.spec") into the pod of its template, named
// "<name>-pod" after the workload's name node, and returns it (nil when it
// does not decode).
func (p *parser) jobSpec(d *decoder, spec *yaml.Node, sp, kind string, name, namespace *yaml.Node) *pod.Pod {
	tp := fieldpath.Join(sp, "template")
	var template, claims, retention *yaml.Node
	backoff := int32(-1)
	d.pairs(spec, sp, func(k, v *yaml.Node, field string) {
		path := fieldpath.Join(sp, field)
		switch field {
		case "template":
			template = v
		case "selector":
			// Matches the template's labels on a cluster; one pod here.
		case "replicas":
			if v.Kind == yaml.ScalarNode && v.Value != "1" && v.Value != "0" {
				d.warn(k, path, fmt.Sprintf("ignored on a node: one replica runs (the file asks for %s)", pod.Truncate(v.Value)))
			}
		case "volumeClaimTemplates", "persistentVolumeClaimRetentionPolicy":
			if kind != "StatefulSet" {
				d.report(k, path, "unknown field %q", field)
				return
			}
			if field == "volumeClaimTemplates" {
				claims = v
			} else {
				retention = v
			}
		case "backoffLimit":
			if kind != "Job" {
				d.report(k, path, "unknown field %q", field)
				return
			}
			if b, ok := d.integer(v, path, 32); ok {
				if b < 0 {
					d.fail(v, path, "must be greater than or equal to 0")
					return
				}
				backoff = int32(b)
			}
		default:
			if msg, ok := workloadSpecIgnored[field]; ok {
				d.warn(k, path, msg)
				return
			}
			d.report(k, path, "unknown field %q", field)
		}
	})
	if template == nil || template.Kind != yaml.MappingNode {
		d.fail(spec, tp, "required: the pod template to run")
		return nil
	}
	// The template's metadata, with the pod's name and namespace added
	// (positioned at the workload's own name), as a Pod's.
	tmeta := &yaml.Node{Kind: yaml.MappingNode, Line: template.Line, Column: template.Column}
	var tspec *yaml.Node
	d.pairs(template, tp, func(k, v *yaml.Node, field string) {
		switch field {
		case "metadata":
			if v.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(v.Content); i += 2 {
					if key := v.Content[i].Value; key == "name" || key == "namespace" {
						continue // the workload's own are used
					}
					tmeta.Content = append(tmeta.Content, v.Content[i], v.Content[i+1])
				}
			}
		case "spec":
			tspec = v
		default:
			d.report(k, fieldpath.Join(tp, field), "unknown field %q", field)
		}
	})
	podName := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: name.Value + "-pod", Line: name.Line, Column: name.Column}
	tmeta.Content = append(tmeta.Content, scalarNode("name", name), podName)
	if namespace != nil {
		tmeta.Content = append(tmeta.Content, scalarNode("namespace", namespace), namespace)
	}
	podNode := &yaml.Node{Kind: yaml.MappingNode, Line: template.Line, Column: template.Column, Content: []*yaml.Node{
		scalarNode("apiVersion", template), scalarNode("v1", template),
		scalarNode("kind", template), scalarNode("Pod", template),
		scalarNode("metadata", template), tmeta,
	}}
	if tspec != nil {
		podNode.Content = append(podNode.Content, scalarNode("spec", tspec), tspec)
	}
	ns := "default"
	if namespace != nil {
		ns = namespace.Value
	}
	retain := p.retentionPolicy(d, retention)
	tmpls := p.claimTemplates(d, claims, name.Value, ns, retain)
	before := len(p.pods)
	p.pod(d, podNode, tp, func(pd *pod.Pod) { mountClaimTemplates(d, pd, tmpls) })
	if len(p.pods) == before {
		return nil
	}
	for _, t := range tmpls {
		p.templateClaims = append(p.templateClaims, t.claim)
	}
	pd := p.pods[len(p.pods)-1]
	pd.Workload = kind
	if kind == "Job" {
		if backoff < 0 {
			backoff = 6 // Kubernetes' default
		}
		pd.BackoffLimit = &backoff
		if rp := fieldpath.Join(tp, "spec.restartPolicy"); pd.Spec.RestartPolicy == pod.RestartAlways && !d.index.quiet(rp) {
			d.errs = append(d.errs, d.errorAt(rp, `a Job's pod must have restartPolicy "OnFailure" or "Never"`))
		}
	}
	return pd
}

// scalarNode returns a plain string scalar positioned at at.
func scalarNode(value string, at *yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value, Line: at.Line, Column: at.Column}
}

// workloadMeta decodes and checks a workload's own metadata as a pod's:
// its fields, and its labels and annotations (string values, valid keys),
// which the API server checks on every object. The name and namespace are
// checked as the pod's, which takes them.
func (p *parser) workloadMeta(d *decoder, meta *yaml.Node) {
	var m pod.ObjectMeta
	d.decode(meta, reflect.ValueOf(&m).Elem(), "metadata")
	d.errs = append(d.errs, podvalidate.LabelsAndAnnotations(&m, podvalidate.Where{File: p.file, At: d.index})...)
}
