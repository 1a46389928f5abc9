package pod

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"sort"
	"strconv"
)

// The objects a manifest may carry beside its pods, as podman's kube play
// takes them: ConfigMap, Secret and PersistentVolumeClaim. They are
// namespaced like pods, never renamed with the hostname, and feed the pods
// of the same namespace that name them.

// Object kinds.
const (
	KindConfigMap = "ConfigMap"
	KindSecret    = "Secret"
	KindClaim     = "PersistentVolumeClaim"
)

// Secret types tug understands.
const (
	SecretOpaque           = "Opaque"
	SecretDockerConfigJSON = "kubernetes.io/dockerconfigjson"
	SecretTLS              = "kubernetes.io/tls"
	SecretBasicAuth        = "kubernetes.io/basic-auth"
	SecretSSHAuth          = "kubernetes.io/ssh-auth"
)

// ConfigMap is the manifest form of a Kubernetes ConfigMap.
type ConfigMap struct {
	APIVersion string            `yaml:"apiVersion"`
	Kind       string            `yaml:"kind"`
	Metadata   ObjectMeta        `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
	BinaryData map[string]string `yaml:"binaryData"` // base64
	Immutable  *bool             `yaml:"immutable"`
}

// Secret is the manifest form of a Kubernetes Secret.
type Secret struct {
	APIVersion string            `yaml:"apiVersion"`
	Kind       string            `yaml:"kind"`
	Metadata   ObjectMeta        `yaml:"metadata"`
	Type       string            `yaml:"type"`
	Data       map[string]string `yaml:"data"` // base64
	StringData map[string]string `yaml:"stringData"`
	Immutable  *bool             `yaml:"immutable"`
}

// PersistentVolumeClaim is the manifest form of a Kubernetes claim: tug
// backs it with a local directory of its own (see objects.Claim).
type PersistentVolumeClaim struct {
	APIVersion string                    `yaml:"apiVersion"`
	Kind       string                    `yaml:"kind"`
	Metadata   ObjectMeta                `yaml:"metadata"`
	Spec       PersistentVolumeClaimSpec `yaml:"spec"`
}

// PersistentVolumeClaimSpec is the subset of a claim's spec a node can
// honour: access modes (accepted: one node), the storage request
// (validated), a storage class (ignored with a warning).
type PersistentVolumeClaimSpec struct {
	AccessModes      []string                   `yaml:"accessModes"`
	Resources        VolumeResourceRequirements `yaml:"resources"`
	StorageClassName *string                    `yaml:"storageClassName"`
	VolumeMode       string                     `yaml:"volumeMode"`
	VolumeName       string                     `yaml:"volumeName"`
	Selector         *LabelSelectorAccepted     `yaml:"selector"`
}

// LabelSelectorAccepted is a claim's selector: accepted and ignored (there
// are no PersistentVolumes to select on a node).
type LabelSelectorAccepted struct {
	MatchLabels      map[string]string          `yaml:"matchLabels"`
	MatchExpressions []LabelSelectorRequirement `yaml:"matchExpressions"`
}

// LabelSelectorRequirement is one matchExpressions entry.
type LabelSelectorRequirement struct {
	Key      string   `yaml:"key"`
	Operator string   `yaml:"operator"`
	Values   []string `yaml:"values"`
}

// VolumeResourceRequirements is a claim's storage request and limit.
type VolumeResourceRequirements struct {
	Requests ResourceList `yaml:"requests"`
	Limits   ResourceList `yaml:"limits"`
}

// Object is a decoded ConfigMap, Secret or claim, in the one shape the
// rest of tug reads. Data holds the decoded bytes of every key (a
// ConfigMap's data and binaryData; a Secret's data and stringData, the
// latter winning as in Kubernetes). An Object is immutable once parsed and
// may be shared; its String never shows Data.
type Object struct {
	Kind      string
	Namespace string
	Name      string
	Type      string            // a Secret's type
	Data      map[string][]byte // nil for a claim
	Origin    Origin            // where it was read
	Line      int               // of its document
	// StorageRequest is a claim's spec.resources.requests.storage (nil if
	// none).
	StorageRequest *Quantity
	// Warnings are what tug accepted but ignores (a storage class).
	Warnings []string
	// Retain keeps a claim's directory once no source defines the claim
	// and no pod uses it, until it is removed by hand: the claim of a
	// StatefulSet's volumeClaimTemplates whose
	// persistentVolumeClaimRetentionPolicy.whenDeleted is Retain (the
	// default), which outlives the StatefulSet as on a cluster.
	Retain bool
}

// ObjectKey names an object: kind, namespace and name.
type ObjectKey struct {
	Kind, Namespace, Name string
}

// String is "Kind namespace/name".
func (k ObjectKey) String() string { return k.Kind + " " + k.Namespace + "/" + k.Name }

// ClaimKey names the directory of a PersistentVolumeClaim: claims belong
// to the source that defines them, so two sources defining the same
// namespace and name have two directories.
type ClaimKey struct {
	Source, Namespace, Name string
}

// Key returns o's key.
func (o *Object) Key() ObjectKey { return ObjectKey{o.Kind, o.Namespace, o.Name} }

// String names the object, never its data.
func (o *Object) String() string { return o.Key().String() }

// digest hashes the object's content (kind, name, type, data), for the
// bound objects' hash.
func (o *Object) digest(h interface{ Write([]byte) (int, error) }) {
	write := func(s string) { h.Write([]byte(s)); h.Write([]byte{0}) }
	write(o.Kind)
	write(o.Namespace)
	write(o.Name)
	write(o.Type)
	if o.Retain {
		write("retain")
	}
	keys := make([]string, 0, len(o.Data))
	for k := range o.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		write(k)
		write(string(o.Data[k]))
	}
}

// Ref is one reference of a pod to an object of its namespace.
type Ref struct {
	Key      ObjectKey
	Optional bool
	Path     string // the field that names it, e.g. spec.volumes[0].configMap.name
}

func optional(b *bool) bool { return b != nil && *b }

// refIndex is the field path of element i of the list at path.
func refIndex(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// Refs returns every reference of p to a ConfigMap, Secret or claim, in
// the order of the manifest. A name referenced twice appears twice.
func (p *Pod) Refs() []Ref {
	ns := p.Metadata.Namespace
	var refs []Ref
	add := func(kind, name string, opt bool, path string) {
		if name != "" {
			refs = append(refs, Ref{Key: ObjectKey{kind, ns, name}, Optional: opt, Path: path})
		}
	}
	for i, v := range p.Spec.Volumes {
		vp := refIndex("spec.volumes", i)
		if s := v.ConfigMap; s != nil {
			add(KindConfigMap, s.Name, optional(s.Optional), vp+".configMap.name")
		}
		if s := v.Secret; s != nil {
			add(KindSecret, s.SecretName, optional(s.Optional), vp+".secret.secretName")
		}
		if s := v.PersistentVolumeClaim; s != nil {
			add(KindClaim, s.ClaimName, false, vp+".persistentVolumeClaim.claimName")
		}
		if s := v.Projected; s != nil {
			for j, src := range s.Sources {
				sp := refIndex(vp+".projected.sources", j)
				if c := src.ConfigMap; c != nil {
					add(KindConfigMap, c.Name, optional(c.Optional), sp+".configMap.name")
				}
				if c := src.Secret; c != nil {
					add(KindSecret, c.Name, optional(c.Optional), sp+".secret.name")
				}
			}
		}
	}
	for i, s := range p.Spec.ImagePullSecrets {
		// A missing pull secret does not stop the pod (the kubelet pulls
		// without it and warns).
		add(KindSecret, s.Name, true, refIndex("spec.imagePullSecrets", i)+".name")
	}
	for _, list := range []struct {
		path string
		cs   []Container
	}{{"spec.initContainers", p.Spec.InitContainers}, {"spec.containers", p.Spec.Containers}} {
		for i, c := range list.cs {
			cp := refIndex(list.path, i)
			for j, e := range c.Env {
				if e.ValueFrom == nil {
					continue
				}
				ep := refIndex(cp+".env", j) + ".valueFrom"
				if s := e.ValueFrom.ConfigMapKeyRef; s != nil {
					add(KindConfigMap, s.Name, optional(s.Optional), ep+".configMapKeyRef.name")
				}
				if s := e.ValueFrom.SecretKeyRef; s != nil {
					add(KindSecret, s.Name, optional(s.Optional), ep+".secretKeyRef.name")
				}
			}
			for j, e := range c.EnvFrom {
				ep := refIndex(cp+".envFrom", j)
				if s := e.ConfigMapRef; s != nil {
					add(KindConfigMap, s.Name, optional(s.Optional), ep+".configMapRef.name")
				}
				if s := e.SecretRef; s != nil {
					add(KindSecret, s.Name, optional(s.Optional), ep+".secretRef.name")
				}
			}
		}
	}
	return refs
}

// Bound is what the store found for a pod's references: the objects (by
// key) and the keys that are missing and not optional. It is shared and
// read-only.
type Bound struct {
	Objects map[ObjectKey]*Object
	Missing []Ref // sorted by key; each key once
}

// Object returns the bound object of kind and name in the pod's namespace,
// or nil.
func (p *Pod) Object(kind, name string) *Object {
	if p.Bound == nil {
		return nil
	}
	return p.Bound.Objects[ObjectKey{kind, p.Metadata.Namespace, name}]
}

// Bind returns p with the objects it references bound from lookup, and a
// digest of them ("" when p references none): the store adds it to the
// pod's hash, so a change of an object the pod uses is an update of the
// pod (its containers' spec hashes do not change: nothing restarts). p
// itself is not changed; the result is a shallow copy when p references
// anything.
func Bind(p *Pod, lookup func(ObjectKey) *Object) (*Pod, string) {
	refs := p.Refs()
	if len(refs) == 0 {
		return p, ""
	}
	b := &Bound{Objects: map[ObjectKey]*Object{}}
	missing := map[ObjectKey]Ref{}
	for _, r := range refs {
		if o := lookup(r.Key); o != nil {
			b.Objects[r.Key] = o
			continue
		}
		if m, ok := missing[r.Key]; !r.Optional && (!ok || m.Optional) {
			missing[r.Key] = r
		}
	}
	for _, r := range missing {
		b.Missing = append(b.Missing, r)
	}
	slices.SortFunc(b.Missing, func(a, c Ref) int { return cmp.Compare(a.Key.String(), c.Key.String()) })
	h := sha256.New()
	keys := make([]ObjectKey, 0, len(b.Objects))
	for k := range b.Objects {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, c ObjectKey) int { return cmp.Compare(a.String(), c.String()) })
	for _, k := range keys {
		b.Objects[k].digest(h)
	}
	for _, r := range b.Missing {
		h.Write([]byte("missing " + r.Key.String() + "\x00"))
	}
	cp := *p
	cp.Bound = b
	return &cp, hex.EncodeToString(h.Sum(nil))
}

// SortedKeys returns the keys of o.Data, sorted. The slice is the caller's.
func (o *Object) SortedKeys() []string {
	keys := make([]string, 0, len(o.Data))
	for k := range o.Data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Equal reports whether a and b have the same kind, name, type, retention
// and data.
func (o *Object) Equal(b *Object) bool {
	if o.Key() != b.Key() || o.Type != b.Type || o.Retain != b.Retain || len(o.Data) != len(b.Data) {
		return false
	}
	for k, v := range o.Data {
		if w, ok := b.Data[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}
