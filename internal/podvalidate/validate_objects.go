package podvalidate

import (
	"path"
	"strings"

	"tug/internal/fieldpath"
	"tug/internal/pod"
)

// The checks of the fields that read objects or the downward API.

// volumeSources names the sources set on vol, in the manifest's field order.
func volumeSources(vol *pod.Volume) []string {
	var set []string
	for _, s := range []struct {
		name string
		ok   bool
	}{
		{"hostPath", vol.HostPath != nil}, {"emptyDir", vol.EmptyDir != nil},
		{"configMap", vol.ConfigMap != nil}, {"secret", vol.Secret != nil},
		{"projected", vol.Projected != nil}, {"downwardAPI", vol.DownwardAPI != nil},
		{"persistentVolumeClaim", vol.PersistentVolumeClaim != nil}, {"image", vol.Image != nil},
	} {
		if s.ok {
			set = append(set, s.name)
		}
	}
	return set
}

// objectVolume checks a configMap, secret, projected, downwardAPI or
// persistentVolumeClaim volume at p.
func (v *validator) objectVolume(p string, vol *pod.Volume) {
	if s := vol.ConfigMap; s != nil {
		v.objectName(p+".configMap.name", s.Name)
		v.items(p+".configMap.items", s.Items)
		v.mode(p+".configMap.defaultMode", s.DefaultMode)
	}
	if s := vol.Secret; s != nil {
		v.objectName(p+".secret.secretName", s.SecretName)
		v.items(p+".secret.items", s.Items)
		v.mode(p+".secret.defaultMode", s.DefaultMode)
	}
	if s := vol.DownwardAPI; s != nil {
		v.downwardFiles(p+".downwardAPI.items", s.Items)
		v.mode(p+".downwardAPI.defaultMode", s.DefaultMode)
	}
	if s := vol.PersistentVolumeClaim; s != nil {
		v.objectName(p+".persistentVolumeClaim.claimName", s.ClaimName)
	}
	if s := vol.Projected; s != nil {
		v.mode(p+".projected.defaultMode", s.DefaultMode)
		paths := map[string]bool{}
		for i, src := range s.Sources {
			sp := fieldpath.Index(p+".projected.sources", i)
			n := 0
			if c := src.ConfigMap; c != nil {
				n++
				v.objectName(sp+".configMap.name", c.Name)
				v.items(sp+".configMap.items", c.Items)
			}
			if c := src.Secret; c != nil {
				n++
				v.objectName(sp+".secret.name", c.Name)
				v.items(sp+".secret.items", c.Items)
			}
			if c := src.DownwardAPI; c != nil {
				n++
				v.downwardFiles(sp+".downwardAPI.items", c.Items)
				for j, f := range c.Items {
					if paths[f.Path] {
						v.fail(fieldpath.Index(sp+".downwardAPI.items", j)+".path", "duplicate path %q in the projected volume", f.Path)
					}
					paths[f.Path] = true
				}
			}
			if n != 1 && !v.failedUnder(sp) {
				v.fail(sp, "exactly one of configMap, secret or downwardAPI must be set")
			}
		}
	}
}

// objectName checks the name of a referenced object.
func (v *validator) objectName(p, name string) {
	switch {
	case name == "":
		v.fail(p, "required")
	case !pod.IsDNS1123Subdomain(name):
		v.fail(p, "invalid name %q: %s", name, pod.DNS1123SubdomainMsg)
	}
}

// mode checks a file mode (0 to 0777).
func (v *validator) mode(p string, m *int32) {
	if m != nil && (*m < 0 || *m > 0o777) {
		v.fail(p, "invalid mode %d: must be between 0 and 0777 (511)", *m)
	}
}

// relPath checks a file path inside a volume.
func (v *validator) relPath(p, file string) {
	switch {
	case file == "":
		v.fail(p, "required")
	case path.IsAbs(file):
		v.fail(p, "must be a relative path")
	case hasDotDot(file):
		v.fail(p, "must not contain '..'")
	case strings.HasPrefix(file, ".."):
		v.fail(p, "must not start with '..'")
	}
}

// items checks the key-to-path list of a configMap or secret source.
func (v *validator) items(p string, items []pod.KeyToPath) {
	for i, it := range items {
		ip := fieldpath.Index(p, i)
		if it.Key == "" {
			v.fail(ip+".key", "required")
		}
		v.relPath(ip+".path", it.Path)
		v.mode(ip+".mode", it.Mode)
	}
}

// downwardFiles checks the files of a downwardAPI volume or projection.
func (v *validator) downwardFiles(p string, files []pod.DownwardAPIVolumeFile) {
	for i, f := range files {
		fp := fieldpath.Index(p, i)
		v.relPath(fp+".path", f.Path)
		v.mode(fp+".mode", f.Mode)
		switch {
		case f.FieldRef != nil && f.ResourceFieldRef != nil:
			v.fail(fp, "only one of fieldRef or resourceFieldRef may be set")
		case f.FieldRef != nil:
			v.fieldRef(fp+".fieldRef", f.FieldRef, true)
		case f.ResourceFieldRef != nil:
			if f.ResourceFieldRef.ContainerName == "" {
				v.fail(fp+".resourceFieldRef.containerName", "required in a volume")
			}
			v.resourceFieldRef(fp+".resourceFieldRef", f.ResourceFieldRef)
		case !v.failedUnder(fp):
			v.fail(fp, "one of fieldRef or resourceFieldRef is required")
		}
	}
}

// fieldRef checks a downward API field path; volume says where (volumes
// take metadata only, as in Kubernetes).
func (v *validator) fieldRef(p string, f *pod.ObjectFieldSelector, volume bool) {
	if f.APIVersion != "" && f.APIVersion != "v1" {
		v.fail(p+".apiVersion", "unsupported apiVersion %q: must be \"v1\"", f.APIVersion)
	}
	fp := f.FieldPath
	switch {
	case fp == "":
		v.fail(p+".fieldPath", "required")
	case fp == "metadata.name", fp == "metadata.namespace", fp == "metadata.uid",
		fp == "metadata.labels", fp == "metadata.annotations":
	case isSubscript(fp, "metadata.labels"), isSubscript(fp, "metadata.annotations"):
	case !volume && (fp == "spec.nodeName" || fp == "spec.serviceAccountName" || fp == "status.podIP" ||
		fp == "status.podIPs" || fp == "status.hostIP" || fp == "status.hostIPs"):
	case volume:
		v.fail(p+".fieldPath", "unsupported field %q in a volume: must be metadata.name, metadata.namespace, metadata.uid, metadata.labels, metadata.annotations or metadata.labels['key'] or metadata.annotations['key']", fp)
	default:
		v.fail(p+".fieldPath", "unsupported field %q: must be metadata.name, metadata.namespace, metadata.uid, metadata.labels['key'], metadata.annotations['key'], spec.nodeName, spec.serviceAccountName, status.podIP, status.podIPs, status.hostIP or status.hostIPs", fp)
	}
}

// isSubscript reports whether fp is field['key'] with a non-empty key.
func isSubscript(fp, field string) bool {
	_, ok := pod.Subscript(fp, field)
	return ok
}

// resourceFieldRef checks a downward API resource selector.
func (v *validator) resourceFieldRef(p string, r *pod.ResourceFieldSelector) {
	switch r.Resource {
	case "limits.cpu", "limits.memory", "limits.ephemeral-storage",
		"requests.cpu", "requests.memory", "requests.ephemeral-storage":
	case "":
		v.fail(p+".resource", "required")
	default:
		v.fail(p+".resource", "unsupported resource %q: must be limits.cpu, limits.memory, limits.ephemeral-storage, requests.cpu, requests.memory or requests.ephemeral-storage", r.Resource)
	}
	if r.Divisor != nil && r.Divisor.MilliValue() <= 0 {
		v.fail(p+".divisor", "must be positive")
	}
}

// envSources checks a container's env valueFrom and envFrom.
func (v *validator) envSources(p string, c *pod.Container) {
	for i, e := range c.Env {
		if e.ValueFrom == nil {
			continue
		}
		ep := fieldpath.Index(p+".env", i)
		if e.Value != "" {
			v.fail(ep+".valueFrom", "may not be set with value")
		}
		vf := e.ValueFrom
		n := 0
		if vf.FieldRef != nil {
			n++
			v.fieldRef(ep+".valueFrom.fieldRef", vf.FieldRef, false)
		}
		if vf.ResourceFieldRef != nil {
			n++
			v.resourceFieldRef(ep+".valueFrom.resourceFieldRef", vf.ResourceFieldRef)
		}
		for _, s := range []struct {
			name string
			ks   *pod.KeySelector
		}{{"configMapKeyRef", vf.ConfigMapKeyRef}, {"secretKeyRef", vf.SecretKeyRef}} {
			if s.ks == nil {
				continue
			}
			n++
			kp := ep + ".valueFrom." + s.name
			v.objectName(kp+".name", s.ks.Name)
			if s.ks.Key == "" {
				v.fail(kp+".key", "required")
			}
		}
		if fk := vf.FileKeyRef; fk != nil {
			n++
			v.fileKeyRef(ep+".valueFrom.fileKeyRef", fk)
		}
		if n != 1 && !v.failedUnder(ep+".valueFrom") {
			v.fail(ep+".valueFrom", "exactly one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef or fileKeyRef must be set")
		}
	}
	for i, e := range c.EnvFrom {
		ep := fieldpath.Index(p+".envFrom", i)
		switch {
		case e.ConfigMapRef != nil && e.SecretRef != nil:
			v.fail(ep, "only one of configMapRef or secretRef may be set")
		case e.ConfigMapRef != nil:
			v.objectName(ep+".configMapRef.name", e.ConfigMapRef.Name)
		case e.SecretRef != nil:
			v.objectName(ep+".secretRef.name", e.SecretRef.Name)
		case !v.failedUnder(ep):
			v.fail(ep, "one of configMapRef or secretRef is required")
		}
		if e.Prefix != "" && !pod.IsEnvVarName(e.Prefix) {
			v.fail(ep+".prefix", "invalid prefix %q: %s", e.Prefix, pod.EnvVarNameMsg)
		}
	}
}

// fileKeyRef checks an env valueFrom.fileKeyRef at path p, as Kubernetes
// does; that volumeName names an emptyDir volume is checked by envFiles.
func (v *validator) fileKeyRef(p string, fk *pod.FileKeySelector) {
	if fk.VolumeName == "" {
		v.fail(p+".volumeName", "required")
	}
	switch {
	case fk.Path == "":
		v.fail(p+".path", "required")
	case path.IsAbs(fk.Path):
		v.fail(p+".path", "must be a relative path")
	case hasDotDot(fk.Path):
		v.fail(p+".path", "must not contain '..'")
	}
	switch {
	case fk.Key == "":
		v.fail(p+".key", "required")
	case len(fk.Key) > pod.MaxEnvFileKeyLen:
		v.fail(p+".key", "must be no more than %d characters, got %d", pod.MaxEnvFileKeyLen, len(fk.Key))
	case !pod.IsEnvVarName(fk.Key):
		v.fail(p+".key", "invalid key %q: %s", fk.Key, pod.EnvVarNameMsg)
	}
}

// envFiles checks that each env fileKeyRef names an emptyDir volume of
// the pod: the only volume an env file is read from.
func (v *validator) envFiles(s *pod.PodSpec) {
	emptyDirs := make(map[string]bool)
	for _, vol := range s.Volumes {
		if vol.EmptyDir != nil {
			emptyDirs[vol.Name] = true
		}
	}
	for _, list := range []struct {
		path string
		ctrs []pod.Container
	}{{"spec.initContainers", s.InitContainers}, {"spec.containers", s.Containers}} {
		for i, c := range list.ctrs {
			for j, e := range c.Env {
				if e.ValueFrom == nil || e.ValueFrom.FileKeyRef == nil {
					continue
				}
				name := e.ValueFrom.FileKeyRef.VolumeName
				if name != "" && !emptyDirs[name] {
					v.fail(fieldpath.Index(fieldpath.Index(list.path, i)+".env", j)+".valueFrom.fileKeyRef.volumeName",
						"%q is not an emptyDir volume of the pod: an env file is read from an emptyDir", name)
				}
			}
		}
	}
}
