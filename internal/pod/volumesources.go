package pod

import "strings"

// The volume, env and image-pull fields that read objects beside the pods
// (ConfigMap, Secret, PersistentVolumeClaim) or the pod itself (the
// downward API). Field for field as in Kubernetes Pod v1.

// LocalObjectReference names an object in the pod's namespace.
type LocalObjectReference struct {
	Name string `yaml:"name" json:"name"`
}

// KeyToPath projects one key of a ConfigMap or Secret to a relative path
// in the volume, with its own mode (default: the volume's defaultMode).
type KeyToPath struct {
	Key  string `yaml:"key" json:"key"`
	Path string `yaml:"path" json:"path"`
	Mode *int32 `yaml:"mode" json:"mode,omitempty"`
}

// ConfigMapVolumeSource fills a volume with the keys of a ConfigMap (all of
// them, or Items). Optional: a missing ConfigMap gives an empty volume.
type ConfigMapVolumeSource struct {
	Name        string      `yaml:"name" json:"name"`
	Items       []KeyToPath `yaml:"items" json:"items,omitempty"`
	DefaultMode *int32      `yaml:"defaultMode" json:"defaultMode,omitempty"`
	Optional    *bool       `yaml:"optional" json:"optional,omitempty"`
}

// SecretVolumeSource fills a volume (a tmpfs) with the keys of a Secret.
type SecretVolumeSource struct {
	SecretName  string      `yaml:"secretName" json:"secretName"`
	Items       []KeyToPath `yaml:"items" json:"items,omitempty"`
	DefaultMode *int32      `yaml:"defaultMode" json:"defaultMode,omitempty"`
	Optional    *bool       `yaml:"optional" json:"optional,omitempty"`
}

// ProjectedVolumeSource merges ConfigMaps, Secrets and downward API files
// into one volume.
type ProjectedVolumeSource struct {
	Sources     []VolumeProjection `yaml:"sources" json:"sources"`
	DefaultMode *int32             `yaml:"defaultMode" json:"defaultMode,omitempty"`
}

// VolumeProjection is one source of a projected volume; exactly one is set.
type VolumeProjection struct {
	ConfigMap   *ConfigMapProjection   `yaml:"configMap" json:"configMap,omitempty"`
	Secret      *SecretProjection      `yaml:"secret" json:"secret,omitempty"`
	DownwardAPI *DownwardAPIProjection `yaml:"downwardAPI" json:"downwardAPI,omitempty"`
}

// ConfigMapProjection is a ConfigMap in a projected volume.
type ConfigMapProjection struct {
	Name     string      `yaml:"name" json:"name"`
	Items    []KeyToPath `yaml:"items" json:"items,omitempty"`
	Optional *bool       `yaml:"optional" json:"optional,omitempty"`
}

// SecretProjection is a Secret in a projected volume.
type SecretProjection struct {
	Name     string      `yaml:"name" json:"name"`
	Items    []KeyToPath `yaml:"items" json:"items,omitempty"`
	Optional *bool       `yaml:"optional" json:"optional,omitempty"`
}

// DownwardAPIProjection is downward API files in a projected volume.
type DownwardAPIProjection struct {
	Items []DownwardAPIVolumeFile `yaml:"items" json:"items,omitempty"`
}

// DownwardAPIVolumeSource is a volume of downward API files.
type DownwardAPIVolumeSource struct {
	Items       []DownwardAPIVolumeFile `yaml:"items" json:"items,omitempty"`
	DefaultMode *int32                  `yaml:"defaultMode" json:"defaultMode,omitempty"`
}

// DownwardAPIVolumeFile is one file of pod metadata (FieldRef) or of a
// container's resources (ResourceFieldRef).
type DownwardAPIVolumeFile struct {
	Path             string                 `yaml:"path" json:"path"`
	FieldRef         *ObjectFieldSelector   `yaml:"fieldRef" json:"fieldRef,omitempty"`
	ResourceFieldRef *ResourceFieldSelector `yaml:"resourceFieldRef" json:"resourceFieldRef,omitempty"`
	Mode             *int32                 `yaml:"mode" json:"mode,omitempty"`
}

// ObjectFieldSelector selects a field of the pod (metadata.name, ...).
type ObjectFieldSelector struct {
	APIVersion string `yaml:"apiVersion" json:"apiVersion,omitempty"`
	FieldPath  string `yaml:"fieldPath" json:"fieldPath"`
}

// ResourceFieldSelector selects a container's request or limit, in units of
// Divisor (default 1).
type ResourceFieldSelector struct {
	ContainerName string    `yaml:"containerName" json:"containerName,omitempty"`
	Resource      string    `yaml:"resource" json:"resource"`
	Divisor       *Quantity `yaml:"divisor" json:"divisor,omitempty"`
}

// PersistentVolumeClaimVolumeSource mounts the local directory of a claim
// (a PersistentVolumeClaim object beside the pod).
type PersistentVolumeClaimVolumeSource struct {
	ClaimName string `yaml:"claimName" json:"claimName"`
	ReadOnly  bool   `yaml:"readOnly" json:"readOnly,omitempty"`
}

// EnvVarSource is where an environment variable's value comes from;
// exactly one is set.
type EnvVarSource struct {
	FieldRef         *ObjectFieldSelector   `yaml:"fieldRef" json:"fieldRef,omitempty"`
	ResourceFieldRef *ResourceFieldSelector `yaml:"resourceFieldRef" json:"resourceFieldRef,omitempty"`
	ConfigMapKeyRef  *KeySelector           `yaml:"configMapKeyRef" json:"configMapKeyRef,omitempty"`
	SecretKeyRef     *KeySelector           `yaml:"secretKeyRef" json:"secretKeyRef,omitempty"`
	// FileKeyRef reads the variable from an env file (KEY=VALUE lines) in
	// one of the pod's emptyDir volumes, when the container starts
	// (Kubernetes 1.34+).
	FileKeyRef *FileKeySelector `yaml:"fileKeyRef" json:"fileKeyRef,omitempty"`
}

// FileKeySelector selects the key of an env file: the file at Path, relative
// to the emptyDir volume VolumeName. Optional: a missing file or key leaves
// the variable unset instead of failing the container's start.
type FileKeySelector struct {
	VolumeName string `yaml:"volumeName" json:"volumeName"`
	Path       string `yaml:"path" json:"path"`
	Key        string `yaml:"key" json:"key"`
	Optional   *bool  `yaml:"optional" json:"optional,omitempty"`
}

// MaxEnvFileKeyLen is the longest key of an env file Kubernetes allows, and
// MaxEnvFileSize the largest env file.
const (
	MaxEnvFileKeyLen = 128
	MaxEnvFileSize   = 64 << 10
)

// KeySelector selects one key of a ConfigMap or Secret (Kubernetes'
// ConfigMapKeySelector and SecretKeySelector, which are the same shape).
type KeySelector struct {
	Name     string `yaml:"name" json:"name"`
	Key      string `yaml:"key" json:"key"`
	Optional *bool  `yaml:"optional" json:"optional,omitempty"`
}

// EnvFromSource sets one variable per key of a ConfigMap or Secret, each
// name prefixed with Prefix; exactly one of the two refs is set.
type EnvFromSource struct {
	Prefix       string        `yaml:"prefix" json:"prefix,omitempty"`
	ConfigMapRef *ObjectSource `yaml:"configMapRef" json:"configMapRef,omitempty"`
	SecretRef    *ObjectSource `yaml:"secretRef" json:"secretRef,omitempty"`
}

// ObjectSource names a ConfigMap or Secret for envFrom.
type ObjectSource struct {
	Name     string `yaml:"name" json:"name"`
	Optional *bool  `yaml:"optional" json:"optional,omitempty"`
}

// IsObjectVolume reports whether v's files are written by tug from objects
// or the downward API.
func (v *Volume) IsObjectVolume() bool {
	return v.ConfigMap != nil || v.Secret != nil || v.Projected != nil || v.DownwardAPI != nil
}

// Subscript returns the key of a downward API field path field['key'] (a
// non-empty key), or "" and false.
func Subscript(fp, field string) (string, bool) {
	rest, ok := strings.CutPrefix(fp, field+"['")
	if !ok || !strings.HasSuffix(rest, "']") || len(rest) <= 2 {
		return "", false
	}
	return strings.TrimSuffix(rest, "']"), true
}
