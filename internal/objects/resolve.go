package objects

import (
	"cmp"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"tug/internal/pod"
)

// Resolving a pod's references into plain values: env variables and the
// files of configMap, secret, projected and downwardAPI volumes. Pure
// functions of the pod, its bound objects (pod.Pod.Bound, from pod.Bind)
// and the node; a missing object or key that is not optional is an error
// wrapping pod.ErrCreateContainerConfig that names it, as the kubelet's
// CreateContainerConfigError does.

// NodeInfo is what the downward API reads of the node and the sandbox.
type NodeInfo struct {
	NodeName string
	PodIP    string
	HostIP   string
	// CPUMillis and MemoryBytes are the node's capacity: a limit the
	// container does not set reads as these (as in Kubernetes).
	CPUMillis   int64
	MemoryBytes int64
}

// MissingError says which object or key a pod needs and the store does not
// have. It wraps pod.ErrCreateContainerConfig.
type MissingError struct {
	Key   pod.ObjectKey
	Field string // the key of the object, "" for the whole object
}

func (e *MissingError) Error() string {
	kind := strings.ToLower(e.Key.Kind) // as the kubelet says it: configmap "x" not found
	if e.Field != "" {
		return fmt.Sprintf("couldn't find key %s in %s %s/%s", e.Field, kind, e.Key.Namespace, e.Key.Name)
	}
	return fmt.Sprintf("%s %q not found", kind, e.Key.Name)
}

// Unwrap makes errors.Is(err, pod.ErrCreateContainerConfig) true.
func (e *MissingError) Unwrap() error { return pod.ErrCreateContainerConfig }

// optional reads an optional flag of a reference (unset is false).
func optional(b *bool) bool { return b != nil && *b }

// objectOf returns the bound object kind/name, or a *MissingError unless
// optional (then nil, nil).
func objectOf(p *pod.Pod, kind, name string, opt bool) (*pod.Object, error) {
	if o := p.Object(kind, name); o != nil {
		return o, nil
	}
	if opt {
		return nil, nil
	}
	return nil, &MissingError{Key: pod.ObjectKey{Kind: kind, Namespace: p.Metadata.Namespace, Name: name}}
}

// Claim returns the key of the PersistentVolumeClaim name that p uses,
// the key that names its directory (claims belong to the source that
// defines them), or a *MissingError when p's source does not define it.
func Claim(p *pod.Pod, name string) (pod.ClaimKey, error) {
	if _, err := objectOf(p, pod.KindClaim, name, false); err != nil {
		return pod.ClaimKey{}, err
	}
	return pod.ClaimKey{Source: p.Metadata.Source, Namespace: p.Metadata.Namespace, Name: name}, nil
}

// Env returns c's environment as literal variables, in the order the
// container sees them: the envFrom sources first (each key, prefixed, in
// key order; keys that are not valid variable names are skipped, as by the
// kubelet), then env, each valueFrom read now (an env file through files).
// A change of an object or file later does not change a running
// container's environment.
func Env(p *pod.Pod, c *pod.Container, node NodeInfo, files EnvFiles) ([]pod.EnvVar, error) {
	var out []pod.EnvVar
	for _, ef := range c.EnvFrom {
		var o *pod.Object
		var err error
		switch {
		case ef.ConfigMapRef != nil:
			o, err = objectOf(p, pod.KindConfigMap, ef.ConfigMapRef.Name, optional(ef.ConfigMapRef.Optional))
		case ef.SecretRef != nil:
			o, err = objectOf(p, pod.KindSecret, ef.SecretRef.Name, optional(ef.SecretRef.Optional))
		}
		if err != nil {
			return nil, err
		}
		if o == nil {
			continue
		}
		for _, k := range o.SortedKeys() {
			if name := ef.Prefix + k; pod.IsEnvVarName(name) {
				out = append(out, pod.EnvVar{Name: name, Value: string(o.Data[k])})
			}
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			out = append(out, pod.EnvVar{Name: e.Name, Value: e.Value})
			continue
		}
		v, ok, err := envValue(p, c, e.ValueFrom, node, files)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		if ok {
			out = append(out, pod.EnvVar{Name: e.Name, Value: v})
		}
	}
	return out, nil
}

// envValue reads one valueFrom; ok is false for an optional key or object
// that is missing (the variable is then not set).
func envValue(p *pod.Pod, c *pod.Container, vf *pod.EnvVarSource, node NodeInfo, files EnvFiles) (string, bool, error) {
	switch {
	case vf.FileKeyRef != nil:
		return fileValue(p, vf.FileKeyRef, files)
	case vf.FieldRef != nil:
		v, err := FieldValue(p, vf.FieldRef.FieldPath, node)
		return v, err == nil, err
	case vf.ResourceFieldRef != nil:
		v, err := ResourceValue(p, c, vf.ResourceFieldRef, node)
		return v, err == nil, err
	}
	kind, ks := pod.KindConfigMap, vf.ConfigMapKeyRef
	if ks == nil {
		kind, ks = pod.KindSecret, vf.SecretKeyRef
	}
	if ks == nil {
		return "", false, fmt.Errorf("%w: empty valueFrom", pod.ErrCreateContainerConfig)
	}
	o, err := objectOf(p, kind, ks.Name, optional(ks.Optional))
	if err != nil || o == nil {
		return "", false, err
	}
	v, ok := o.Data[ks.Key]
	if !ok {
		if optional(ks.Optional) {
			return "", false, nil
		}
		return "", false, &MissingError{Key: o.Key(), Field: ks.Key}
	}
	return string(v), true, nil
}

// FieldValue is the downward API's value of a pod field path.
func FieldValue(p *pod.Pod, fp string, node NodeInfo) (string, error) {
	m := &p.Metadata
	switch fp {
	case "metadata.name":
		return m.Name, nil
	case "metadata.namespace":
		return m.Namespace, nil
	case "metadata.uid":
		return m.UID, nil
	case "metadata.labels":
		return formatMap(m.Labels), nil
	case "metadata.annotations":
		return formatMap(m.Annotations), nil
	case "spec.nodeName":
		return node.NodeName, nil
	case "spec.serviceAccountName":
		return cmp.Or(p.Spec.ServiceAccountName, "default"), nil // Kubernetes' default
	case "status.podIP", "status.podIPs":
		return node.PodIP, nil
	case "status.hostIP", "status.hostIPs":
		return node.HostIP, nil
	}
	if k, ok := pod.Subscript(fp, "metadata.labels"); ok {
		return m.Labels[k], nil
	}
	if k, ok := pod.Subscript(fp, "metadata.annotations"); ok {
		return m.Annotations[k], nil
	}
	return "", fmt.Errorf("%w: unsupported fieldPath %q", pod.ErrCreateContainerConfig, fp)
}

// formatMap writes labels or annotations as the kubelet does: one
// key="value" per line, sorted, values quoted as Go strings.
func formatMap(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(k + "=" + strconv.Quote(m[k]))
	}
	return b.String()
}

// ResourceValue is the downward API's value of a container's request or
// limit, divided by the divisor and rounded up (as the kubelet does). A
// limit that is not set reads as the node's capacity. In env, an empty
// containerName means the container itself (def).
func ResourceValue(p *pod.Pod, def *pod.Container, sel *pod.ResourceFieldSelector, node NodeInfo) (string, error) {
	c := def
	if sel.ContainerName != "" {
		c = nil
		for _, list := range [][]pod.Container{p.Spec.InitContainers, p.Spec.Containers} {
			if i := slices.IndexFunc(list, func(x pod.Container) bool { return x.Name == sel.ContainerName }); i >= 0 {
				c = &list[i]
			}
		}
	}
	if c == nil {
		return "", fmt.Errorf("%w: resourceFieldRef: no container %q", pod.ErrCreateContainerConfig, sel.ContainerName)
	}
	kind, res, _ := strings.Cut(sel.Resource, ".")
	list := c.Resources.Requests
	if kind == "limits" {
		list = c.Resources.Limits
	}
	var milli int64
	if q, ok := list[pod.ResourceName(res)]; ok {
		milli = q.MilliValue()
	} else if kind == "limits" {
		switch pod.ResourceName(res) {
		case pod.ResourceCPU:
			milli = node.CPUMillis
		case pod.ResourceMemory:
			milli = node.MemoryBytes * 1000
		}
	}
	div := int64(1000)
	if sel.Divisor != nil && sel.Divisor.MilliValue() > 0 {
		div = sel.Divisor.MilliValue()
	}
	v := (milli + div - 1) / div
	if pod.ResourceName(res) == pod.ResourceCPU && milli > 0 && v == 0 {
		v = 1
	}
	return strconv.FormatInt(v, 10), nil
}

// VolumeFile is one file of a configMap, secret, projected or downwardAPI
// volume: its data and mode (the volume's defaultMode, or the item's).
type VolumeFile struct {
	Data []byte
	Mode fs.FileMode
}

// Default file modes: 0644 as in Kubernetes, and 0600 for files that hold
// a Secret's data (tug's rule: secrets are readable by the owner only
// unless the manifest sets a mode).
const (
	DefaultFileMode   = 0o644
	DefaultSecretMode = 0o600
)

// VolumeFiles returns the files of a configMap, secret, projected or
// downwardAPI volume by relative path, and whether the volume holds secret
// data (it is then kept in memory only). A missing object or item key that
// is not optional is a *MissingError.
func VolumeFiles(p *pod.Pod, v *pod.Volume, node NodeInfo) (map[string]VolumeFile, bool, error) {
	files := map[string]VolumeFile{}
	secret := false
	mode := func(m *int32, def fs.FileMode) fs.FileMode {
		if m != nil {
			return fs.FileMode(*m) & fs.ModePerm
		}
		return def
	}
	project := func(kind, name string, items []pod.KeyToPath, opt bool, def fs.FileMode) error {
		o, err := objectOf(p, kind, name, opt)
		if err != nil || o == nil {
			return err
		}
		if len(items) == 0 {
			for _, k := range o.SortedKeys() {
				files[k] = VolumeFile{Data: o.Data[k], Mode: def}
			}
			return nil
		}
		for _, it := range items {
			d, ok := o.Data[it.Key]
			if !ok {
				if opt {
					continue
				}
				return &MissingError{Key: o.Key(), Field: it.Key}
			}
			files[path.Clean(it.Path)] = VolumeFile{Data: d, Mode: mode(it.Mode, def)}
		}
		return nil
	}
	downward := func(items []pod.DownwardAPIVolumeFile, def fs.FileMode) error {
		for _, it := range items {
			var val string
			var err error
			switch {
			case it.FieldRef != nil:
				val, err = FieldValue(p, it.FieldRef.FieldPath, node)
			case it.ResourceFieldRef != nil:
				val, err = ResourceValue(p, nil, it.ResourceFieldRef, node)
			}
			if err != nil {
				return err
			}
			files[path.Clean(it.Path)] = VolumeFile{Data: []byte(val), Mode: mode(it.Mode, def)}
		}
		return nil
	}
	var err error
	switch {
	case v.ConfigMap != nil:
		s := v.ConfigMap
		err = project(pod.KindConfigMap, s.Name, s.Items, optional(s.Optional), mode(s.DefaultMode, DefaultFileMode))
	case v.Secret != nil:
		s := v.Secret
		secret = true
		err = project(pod.KindSecret, s.SecretName, s.Items, optional(s.Optional), mode(s.DefaultMode, DefaultSecretMode))
	case v.DownwardAPI != nil:
		err = downward(v.DownwardAPI.Items, mode(v.DownwardAPI.DefaultMode, DefaultFileMode))
	case v.Projected != nil:
		for _, src := range v.Projected.Sources {
			switch {
			case src.ConfigMap != nil:
				s := src.ConfigMap
				err = project(pod.KindConfigMap, s.Name, s.Items, optional(s.Optional), mode(v.Projected.DefaultMode, DefaultFileMode))
			case src.Secret != nil:
				s := src.Secret
				secret = true
				err = project(pod.KindSecret, s.Name, s.Items, optional(s.Optional), mode(v.Projected.DefaultMode, DefaultSecretMode))
			case src.DownwardAPI != nil:
				err = downward(src.DownwardAPI.Items, mode(v.Projected.DefaultMode, DefaultFileMode))
			}
			if err != nil {
				return nil, secret, err
			}
		}
	default:
		return nil, false, fmt.Errorf("volume %q: not an object volume", v.Name)
	}
	if err != nil {
		return nil, secret, err
	}
	return files, secret, nil
}
