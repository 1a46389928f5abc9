// Package podvalidate checks a defaulted pod with the rules the Kubernetes
// API server and the kubelet apply, where tug implements the field, and
// tug's own (its volumes, devices, probes, resize, capabilities): every
// problem at once, each a *pod.FieldError naming its field path, and the
// fields accepted but ignored on a node as warnings. With the Positions of
// a parsed manifest each error points at the line and column that wrote
// the field; package manifest validates what it parses with it.
package podvalidate

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"

	"tug/internal/fieldpath"
	"tug/internal/pod"
)

// maxAnnotationsSize is Kubernetes' limit on the total size of a pod's
// annotations (keys and values).
const maxAnnotationsSize = 256 << 10

// Validate checks a defaulted pod built in code and returns every
// problem, joined, each a *pod.FieldError with a field path but no file
// position. The name checks use Metadata.ManifestName when set (the name
// as written) and Metadata.Name otherwise.
func Validate(p *pod.Pod) error {
	v := &validator{}
	v.pod(p)
	return errors.Join(v.errs...)
}

// Positions says where a manifest wrote each field path (package
// manifest's decoder records them).
type Positions interface {
	// Find returns the line and column of path's value or, for a value
	// that is not written, of its nearest written ancestor.
	Find(path string) (line, col int)
	// KeyAt returns the position of the mapping key naming path.
	KeyAt(path string) (line, col int, ok bool)
	// Has reports whether the manifest wrote path.
	Has(path string) bool
	// Quiet reports whether decoding failed at path: validation keeps
	// quiet there.
	Quiet(path string) bool
	// FailedUnder reports whether decoding failed somewhere below path.
	FailedUnder(path string) bool
}

// Where is the place of a pod being validated: its file, the path of the
// pod in the document ("" or "items[2]"), and where the document wrote
// each field (nil: no positions).
type Where struct {
	File   string
	Prefix string
	At     Positions
}

// Pod checks the defaulted pod p, parsed at w, and returns its problems
// and its warnings (fields accepted but ignored on a node), each a
// *pod.FieldError.
func Pod(p *pod.Pod, w Where) (errs, warns []error) {
	v := &validator{file: w.File, prefix: w.Prefix, at: w.At}
	v.pod(p)
	return v.errs, v.warns
}

// Metadata checks an object's metadata (its name, namespace, labels and
// annotations), parsed at w, as a pod's.
func Metadata(m *pod.ObjectMeta, w Where) []error {
	v := &validator{file: w.File, prefix: w.Prefix, at: w.At}
	v.metadata(m)
	return v.errs
}

// LabelsAndAnnotations returns the problems of m's labels and annotations
// only, each a *pod.FieldError positioned through w: for the metadata of
// a workload, whose name and namespace its pod's validation checks.
func LabelsAndAnnotations(m *pod.ObjectMeta, w Where) []error {
	v := &validator{file: w.File, prefix: w.Prefix, at: w.At}
	v.labelsAndAnnotations(m)
	return v.errs
}

// validator collects the problems of one pod. With Positions (from a
// parsed manifest) it positions each error at the offending node, and
// keeps quiet where decoding already failed.
type validator struct {
	file   string
	prefix string    // path of the pod in the document: "" or "items[2]"
	at     Positions // nil for Validate
	errs   []error
	warns  []error // *pod.FieldError: accepted, ignored on a node
}

// fail reports a problem with the value at path (relative to the pod).
func (v *validator) fail(p, format string, args ...any) {
	full := fieldpath.Join(v.prefix, p)
	var line, col int
	if v.at != nil {
		if v.at.Quiet(full) {
			return
		}
		line, col = v.at.Find(full)
	}
	v.errs = append(v.errs, &pod.FieldError{File: v.file, Line: line, Col: col, Path: fieldpath.Escape(full), Msg: fmt.Sprintf(format, pod.TruncateArgs(format, args)...)})
}

// failKey reports a problem with key of the map at p, positioned at the key.
func (v *validator) failKey(p, key, format string, args ...any) {
	full := fieldpath.Join(v.prefix, p)
	var line, col int
	if v.at != nil {
		kp := fieldpath.Key(full, key)
		if v.at.Quiet(kp) {
			return
		}
		var ok bool
		if line, col, ok = v.at.KeyAt(kp); !ok {
			line, col = v.at.Find(full)
		}
	}
	v.errs = append(v.errs, &pod.FieldError{File: v.file, Line: line, Col: col, Path: fieldpath.Escape(full), Msg: fmt.Sprintf(format, pod.TruncateArgs(format, args)...)})
}

// written reports whether the manifest set the field at p (false without an
// Positions).
func (v *validator) written(p string) bool {
	return v.at != nil && v.at.Has(fieldpath.Join(v.prefix, p))
}

// failedUnder reports whether decoding failed somewhere below p, for checks
// that would only repeat that failure.
func (v *validator) failedUnder(p string) bool {
	return v.at != nil && v.at.FailedUnder(fieldpath.Join(v.prefix, p))
}

func (v *validator) pod(p *pod.Pod) {
	v.metadata(&p.Metadata)
	v.spec(&p.Spec)
}

func (v *validator) metadata(m *pod.ObjectMeta) {
	name := m.ManifestName
	if name == "" {
		name = m.Name
	}
	switch {
	case name == "":
		v.fail("metadata.name", "required")
	case !pod.IsDNS1123Subdomain(name):
		v.fail("metadata.name", "invalid name %q: %s", name, pod.DNS1123SubdomainMsg)
	case len(m.Name) > pod.DNS1123SubdomainMaxLen:
		v.fail("metadata.name", "the name with the hostname appended (%q) is %d characters, more than %d", m.Name, len(m.Name), pod.DNS1123SubdomainMaxLen)
	case !pod.IsDNS1123Subdomain(m.Name):
		v.fail("metadata.name", "the name with the hostname appended (%q) %s", m.Name, pod.DNS1123SubdomainMsg)
	}
	switch {
	case m.Namespace == "":
		v.fail("metadata.namespace", "required")
	case !pod.IsDNS1123Label(m.Namespace):
		v.fail("metadata.namespace", "invalid namespace %q: %s", m.Namespace, pod.DNS1123LabelMsg)
	}
	v.labelsAndAnnotations(m)
}

// labelsAndAnnotations checks the keys and values of m's labels and the
// keys, size and tug's own values of its annotations.
func (v *validator) labelsAndAnnotations(m *pod.ObjectMeta) {
	for _, k := range slices.Sorted(maps.Keys(m.Labels)) {
		if msg := pod.QualifiedNameError(k); msg != "" {
			v.failKey("metadata.labels", k, "invalid key %q: %s", k, msg)
		}
		if msg := pod.LabelValueError(m.Labels[k]); msg != "" {
			v.fail(fieldpath.Key("metadata.labels", k), "invalid value %q: %s", m.Labels[k], msg)
		}
	}
	size := 0
	for _, k := range slices.Sorted(maps.Keys(m.Annotations)) {
		if msg := pod.QualifiedNameError(k); msg != "" {
			v.failKey("metadata.annotations", k, "invalid key %q: %s", k, msg)
		}
		size += len(k) + len(m.Annotations[k])
	}
	if val, ok := m.Annotations[pod.AnnotationRolloutTimeout]; ok {
		if _, err := pod.ParseRolloutTimeout(val); err != nil {
			v.fail(fieldpath.Key("metadata.annotations", pod.AnnotationRolloutTimeout), "invalid value: %v", err)
		}
	}
	if val, ok := m.Annotations[pod.AnnotationRolloutMaxRestarts]; ok {
		if _, err := pod.ParseRolloutMaxRestarts(val); err != nil {
			v.fail(fieldpath.Key("metadata.annotations", pod.AnnotationRolloutMaxRestarts), "invalid value: %v", err)
		}
	}
	if size > maxAnnotationsSize {
		v.fail("metadata.annotations", "annotations are %d bytes in total, more than %d", size, maxAnnotationsSize)
	}
}

func (v *validator) spec(s *pod.PodSpec) {
	switch s.RestartPolicy {
	case pod.RestartAlways, pod.RestartOnFailure, pod.RestartNever:
	case "":
		v.fail("spec.restartPolicy", "required")
	default:
		v.fail("spec.restartPolicy", "unsupported value %q: must be \"Always\", \"OnFailure\" or \"Never\"", s.RestartPolicy)
	}
	if g := s.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		v.fail("spec.terminationGracePeriodSeconds", "must be greater than or equal to 0")
	}

	v.dns(s)
	v.podFields(s)
	v.resize(s)
	volumes := v.volumes(s.Volumes)
	if sc := s.SecurityContext; sc != nil {
		v.runAs("spec.securityContext", sc.RunAsUser, sc.RunAsGroup)
		v.seccompProfile("spec.securityContext.seccompProfile", sc.SeccompProfile)
		v.appArmorProfile("spec.securityContext.appArmorProfile", sc.AppArmorProfile)
	}

	if len(s.Containers) == 0 {
		v.fail("spec.containers", "at least one container is required")
	}
	if n := len(s.InitContainers) + len(s.Containers); n > pod.MaxContainers {
		v.fail("spec.containers", "%d containers (init containers included): tug runs at most %d per pod", n, pod.MaxContainers)
	}
	names := make(map[string]string) // container name -> path of its first use
	for i := range s.InitContainers {
		v.container(fieldpath.Index("spec.initContainers", i), &s.InitContainers[i], true, s.HostNetwork, volumes, names)
	}
	for i := range s.Containers {
		v.container(fieldpath.Index("spec.containers", i), &s.Containers[i], false, s.HostNetwork, volumes, names)
	}
	v.hostPortConflicts(s.Containers)
	v.os(s)
	v.envFiles(s)
}

// os checks spec.os and the stop signals that depend on it, as
// Kubernetes' validateOS and validateStopSignal do: a stop signal needs
// spec.os.name, and must be a signal of that system. A windows pod is
// refused: this node runs Linux (the kubelet's admission refuses it too).
func (v *validator) os(s *pod.PodSpec) {
	if o := s.OS; o != nil {
		switch o.Name {
		case pod.OSLinux:
		case "":
			v.fail("spec.os.name", "required")
		case pod.OSWindows:
			v.fail("spec.os.name", "a windows pod does not run on this node, which runs Linux")
		default:
			v.fail("spec.os.name", "unsupported value %q: must be \"linux\" or \"windows\"", o.Name)
		}
	}
	for _, list := range []struct {
		path string
		ctrs []pod.Container
	}{{"spec.initContainers", s.InitContainers}, {"spec.containers", s.Containers}} {
		for i := range list.ctrs {
			l := list.ctrs[i].Lifecycle
			if l == nil || l.StopSignal == nil {
				continue
			}
			p := fieldpath.Index(list.path, i) + ".lifecycle.stopSignal"
			switch {
			case s.OS == nil:
				v.fail(p, "may not be set for containers with empty `spec.os.name`")
			case s.OS.Name == pod.OSLinux && !pod.IsLinuxStopSignal(*l.StopSignal):
				v.fail(p, "unsupported value %q: must be a Linux signal name: \"SIGTERM\", \"SIGQUIT\", \"SIGUSR1\", \"SIGRTMIN+3\", \"SIGRTMAX-2\"...", *l.StopSignal)
			}
		}
	}
}

// volumes checks the pod's volumes and returns them by name.
func (v *validator) volumes(vols []pod.Volume) map[string]*pod.Volume {
	names := make(map[string]*pod.Volume, len(vols))
	for i := range vols {
		vol := &vols[i]
		p := fieldpath.Index("spec.volumes", i)
		switch {
		case vol.Name == "":
			v.fail(p+".name", "required")
		case !pod.IsDNS1123Label(vol.Name):
			v.fail(p+".name", "invalid name %q: %s", vol.Name, pod.DNS1123LabelMsg)
		case names[vol.Name] != nil:
			v.fail(p+".name", "duplicate volume name %q", vol.Name)
		}
		if names[vol.Name] == nil {
			names[vol.Name] = vol
		}

		switch set := volumeSources(vol); {
		case len(set) > 1:
			v.fail(p, "only one volume source may be set, got %s", strings.Join(set, " and "))
		case len(set) == 0 && !v.failedUnder(p):
			v.fail(p, "a volume source is required (hostPath, emptyDir, configMap, secret, projected, downwardAPI, persistentVolumeClaim or image)")
		}
		v.objectVolume(p, vol)
		v.imageVolume(p, vol.Image)
		if hp := vol.HostPath; hp != nil {
			switch {
			case hp.Path == "":
				v.fail(p+".hostPath.path", "required")
			case !path.IsAbs(hp.Path):
				v.fail(p+".hostPath.path", "must be an absolute path")
			case hasDotDot(hp.Path):
				v.fail(p+".hostPath.path", "must not contain '..'")
			}
			switch hp.Type {
			case pod.HostPathUnset, pod.HostPathDirectoryOrCreate, pod.HostPathDirectory, pod.HostPathFileOrCreate,
				pod.HostPathFile, pod.HostPathSocket, pod.HostPathCharDev, pod.HostPathBlockDev:
			default:
				v.fail(p+".hostPath.type", "unsupported value %q: must be \"\", \"DirectoryOrCreate\", \"Directory\", \"FileOrCreate\", \"File\", \"Socket\", \"CharDevice\" or \"BlockDevice\"", hp.Type)
			}
		}
		if ed := vol.EmptyDir; ed != nil {
			switch {
			case ed.Medium == pod.StorageMediumDefault || ed.Medium == pod.StorageMediumMemory:
			case strings.HasPrefix(string(ed.Medium), "HugePages"):
				v.fail(p+".emptyDir.medium", "medium %q is not supported by tug yet", ed.Medium)
			default:
				v.fail(p+".emptyDir.medium", "unsupported value %q: must be \"\" or \"Memory\"", ed.Medium)
			}
			if ed.SizeLimit != nil && ed.SizeLimit.MilliValue() < 0 {
				v.fail(p+".emptyDir.sizeLimit", "must not be negative")
			}
			if ed.Mode != nil && (*ed.Mode < 0 || *ed.Mode > pod.EmptyDirMaxMode) {
				v.fail(p+".emptyDir.mode", "invalid mode %s: must be between 0 and 01777 (octal): the permission bits and the sticky bit", octal(*ed.Mode))
			}
		}
	}
	return names
}

// container checks one init or app container at path p. names maps the
// container names seen so far to their paths.
func (v *validator) container(p string, c *pod.Container, init, hostNetwork bool, volumes map[string]*pod.Volume, names map[string]string) {
	switch {
	case c.Name == "":
		v.fail(p+".name", "required")
	case !pod.IsDNS1123Label(c.Name):
		v.fail(p+".name", "invalid name %q: %s", c.Name, pod.DNS1123LabelMsg)
	case names[c.Name] != "":
		v.fail(p+".name", "duplicate container name %q (also %s)", c.Name, names[c.Name])
	default:
		names[c.Name] = fieldpath.Join(v.prefix, p)
	}

	v.image(p+".image", c.Image)
	switch c.ImagePullPolicy {
	case pod.PullAlways, pod.PullIfNotPresent, pod.PullNever:
	case "":
		v.fail(p+".imagePullPolicy", "required")
	default:
		v.fail(p+".imagePullPolicy", "unsupported value %q: must be \"Always\", \"IfNotPresent\" or \"Never\"", c.ImagePullPolicy)
	}
	if c.WorkingDir != "" && !path.IsAbs(c.WorkingDir) {
		v.fail(p+".workingDir", "must be an absolute path")
	}
	if len(c.Env) > pod.MaxEnv {
		v.fail(p+".env", "%d entries: tug takes at most %d per container", len(c.Env), pod.MaxEnv)
	}
	for i, e := range c.Env {
		ep := fieldpath.Index(p+".env", i)
		switch {
		case e.Name == "":
			v.fail(ep+".name", "required")
		case !pod.IsEnvVarName(e.Name):
			v.fail(ep+".name", "invalid name %q: %s", e.Name, pod.EnvVarNameMsg)
		}
	}
	v.envSources(p, c)
	v.ports(p, c.Ports, init, hostNetwork)
	v.resources(p+".resources", &c.Resources)
	v.volumeMounts(p, c, volumes)
	v.containerFields(p, c, init)
	v.probes(p, c, init)
	if sc := c.SecurityContext; sc != nil {
		v.securityContext(p+".securityContext", sc)
	}
}

func (v *validator) ports(p string, ports []pod.ContainerPort, init, hostNetwork bool) {
	names := make(map[string]int)
	seen := make(map[string]int) // containerPort/protocol -> index
	for i, port := range ports {
		pp := fieldpath.Index(p+".ports", i)
		if port.Name != "" {
			if !pod.IsIANASvcName(port.Name) {
				v.fail(pp+".name", "invalid name %q: %s", port.Name, pod.IANASvcNameMsg)
			} else if j, dup := names[port.Name]; dup {
				v.fail(pp+".name", "duplicate port name %q (also ports[%d])", port.Name, j)
			} else {
				names[port.Name] = i
			}
		}
		switch {
		case port.ContainerPort == 0 && !v.written(pp+".containerPort"):
			v.fail(pp+".containerPort", "required")
		case port.ContainerPort < 1 || port.ContainerPort > math.MaxUint16:
			v.fail(pp+".containerPort", "must be between 1 and 65535, inclusive")
		}
		switch port.Protocol {
		case pod.ProtocolTCP, pod.ProtocolUDP:
		case "SCTP":
			v.fail(pp+".protocol", "SCTP is not supported by tug yet")
		case "":
			v.fail(pp+".protocol", "required")
		default:
			v.fail(pp+".protocol", "unsupported value %q: must be \"TCP\" or \"UDP\"", port.Protocol)
		}
		if port.HostPort != 0 {
			switch {
			case port.HostPort == port.ContainerPort && (port.HostPort < 1 || port.HostPort > math.MaxUint16):
				// reported for containerPort (hostNetwork copied it here)
			case port.HostPort < 1 || port.HostPort > math.MaxUint16:
				v.fail(pp+".hostPort", "must be between 1 and 65535, inclusive")
			case init:
				v.fail(pp+".hostPort", "init containers cannot publish a hostPort")
			case hostNetwork && port.HostPort != port.ContainerPort:
				v.fail(pp+".hostPort", "must equal containerPort (%d) when hostNetwork is true", port.ContainerPort)
			}
		}
		if port.HostIP != "" {
			if _, err := netip.ParseAddr(port.HostIP); err != nil {
				v.fail(pp+".hostIP", "invalid IP address %q", port.HostIP)
			}
		}
		key := strconv.Itoa(int(port.ContainerPort)) + "/" + string(port.Protocol)
		if j, dup := seen[key]; dup && port.ContainerPort != 0 {
			v.fail(pp, "duplicate port %s (also ports[%d])", key, j)
		} else if !dup {
			seen[key] = i
		}
	}
}

// hostPortConflicts reports two app containers publishing the same host
// port and protocol. (Within one container, the duplicate port check
// already reports it.)
func (v *validator) hostPortConflicts(containers []pod.Container) {
	type owner struct{ container, port int }
	seen := make(map[string]owner)
	for ci := range containers {
		for pi, port := range containers[ci].Ports {
			if port.HostPort == 0 {
				continue
			}
			key := strconv.Itoa(int(port.HostPort)) + "/" + string(port.Protocol)
			first, dup := seen[key]
			switch {
			case !dup:
				seen[key] = owner{ci, pi}
			case first.container != ci:
				v.fail(fieldpath.Index(fieldpath.Index("spec.containers", ci)+".ports", pi)+".hostPort",
					"host port %s is also published by spec.containers[%d].ports[%d]", key, first.container, first.port)
			}
		}
	}
}

// imageVolume checks an image volume at p as Kubernetes does: a reference
// (a container's image rules, image) and a known pullPolicy. Its mounts need no
// check of their own: they are read-only whatever readOnly says, and a
// subPath is allowed (Kubernetes 1.33).
func (v *validator) imageVolume(p string, img *pod.ImageVolumeSource) {
	if img == nil {
		return
	}
	v.image(p+".image.reference", img.Reference)
	switch img.PullPolicy {
	case "", pod.PullAlways, pod.PullIfNotPresent, pod.PullNever:
	default:
		v.fail(p+".image.pullPolicy", "unsupported value %q: must be \"Always\", \"IfNotPresent\" or \"Never\"", img.PullPolicy)
	}
}

func (v *validator) volumeMounts(p string, c *pod.Container, volumes map[string]*pod.Volume) {
	paths := make(map[string]int)
	for i, m := range c.VolumeMounts {
		mp := fieldpath.Index(p+".volumeMounts", i)
		switch {
		case m.Name == "":
			v.fail(mp+".name", "required")
		case volumes[m.Name] == nil:
			v.fail(mp+".name", "volume %q is not defined in spec.volumes", m.Name)
		}
		v.mountPropagation(mp+".mountPropagation", &m, c, volumes[m.Name])
		switch {
		case m.MountPath == "":
			v.fail(mp+".mountPath", "required")
		case !path.IsAbs(m.MountPath):
			v.fail(mp+".mountPath", "must be an absolute path")
		default:
			clean := path.Clean(m.MountPath)
			if j, dup := paths[clean]; dup {
				v.fail(mp+".mountPath", "duplicate mountPath %q (also volumeMounts[%d])", m.MountPath, j)
			} else {
				paths[clean] = i
			}
		}
		if m.SubPath != "" {
			switch {
			case path.IsAbs(m.SubPath):
				v.fail(mp+".subPath", "must be a relative path")
			case hasDotDot(m.SubPath):
				v.fail(mp+".subPath", "must not contain '..'")
			}
		}
	}
}

// mountPropagation checks a volume mount's propagation at p, as
// Kubernetes' validateMountPropagation does (Bidirectional for privileged
// containers only), and refuses propagation on a volume that is not a
// hostPath (vol, nil when undefined): tug propagates mounts of the host's
// directories only.
func (v *validator) mountPropagation(p string, m *pod.VolumeMount, c *pod.Container, vol *pod.Volume) {
	if m.MountPropagation == nil {
		return
	}
	switch mode := *m.MountPropagation; mode {
	case pod.MountPropagationNone:
	case pod.MountPropagationHostToContainer, pod.MountPropagationBidirectional:
		if mode == pod.MountPropagationBidirectional && !c.Privileged() {
			v.fail(p, "Bidirectional mount propagation is available only to privileged containers")
		}
		if vol != nil && vol.HostPath == nil {
			v.fail(p, "%s propagation applies to hostPath volumes only on tug (volume %q is not one): remove it or set None", mode, m.Name)
		}
	default:
		v.fail(p, "unsupported value %q: must be \"Bidirectional\", \"HostToContainer\" or \"None\"", mode)
	}
}

func (v *validator) securityContext(p string, sc *pod.SecurityContext) {
	v.runAs(p, sc.RunAsUser, sc.RunAsGroup)
	v.seccompProfile(p+".seccompProfile", sc.SeccompProfile)
	v.appArmorProfile(p+".appArmorProfile", sc.AppArmorProfile)
	if sc.Privileged != nil && *sc.Privileged && sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		v.fail(p+".allowPrivilegeEscalation", "cannot set allowPrivilegeEscalation to false and privileged to true")
	}
	if c := sc.Capabilities; c != nil {
		for i, name := range c.Add {
			if msg := capabilityError(name); msg != "" {
				v.fail(fieldpath.Index(p+".capabilities.add", i), "invalid capability %q: %s", name, msg)
			}
		}
		for i, name := range c.Drop {
			if msg := capabilityError(name); msg != "" {
				v.fail(fieldpath.Index(p+".capabilities.drop", i), "invalid capability %q: %s", name, msg)
			}
		}
	}
}

// runAs checks runAsUser and runAsGroup of the security context at p.
func (v *validator) runAs(p string, user, group *int64) {
	if u := user; u != nil && (*u < 0 || *u > math.MaxInt32) {
		v.fail(p+".runAsUser", "must be between 0 and 2147483647, inclusive")
	}
	if g := group; g != nil && (*g < 0 || *g > math.MaxInt32) {
		v.fail(p+".runAsGroup", "must be between 0 and 2147483647, inclusive")
	}
}

// seccompProfile checks a seccomp profile as Kubernetes does: a known type,
// and a localhostProfile exactly when the type is Localhost, relative and
// without "..". (The runtime still opens it without leaving its directory.)
func (v *validator) seccompProfile(p string, sp *pod.SeccompProfile) {
	if sp == nil {
		return
	}
	switch sp.Type {
	case pod.SeccompRuntimeDefault, pod.SeccompUnconfined:
		if sp.LocalhostProfile != nil {
			v.fail(p+".localhostProfile", "can only be set when seccomp type is Localhost")
		}
	case pod.SeccompLocalhost:
		switch lp := sp.LocalhostProfile; {
		case lp == nil || *lp == "":
			v.fail(p+".localhostProfile", "must be set when seccomp type is Localhost")
		case path.IsAbs(*lp):
			v.fail(p+".localhostProfile", "must be a relative path")
		case hasDotDot(*lp):
			v.fail(p+".localhostProfile", "must not contain '..'")
		case strings.ContainsRune(*lp, 0):
			v.fail(p+".localhostProfile", "must not contain a NUL byte")
		}
	case "":
		v.fail(p+".type", "required")
	default:
		v.fail(p+".type", "unsupported value %q: must be \"RuntimeDefault\", \"Unconfined\" or \"Localhost\"", sp.Type)
	}
}

// hasDotDot reports whether a slash-separated path has a ".." element.
func hasDotDot(p string) bool {
	for elem := range strings.SplitSeq(p, "/") {
		if elem == ".." {
			return true
		}
	}
	return false
}

// resourceNames are the resources a container may request or limit.
var resourceNames = []pod.ResourceName{pod.ResourceCPU, pod.ResourceMemory, pod.ResourceEphemeralStorage}

// resources checks a container's requests and limits as Kubernetes does:
// known names, no negative values, and no request above its limit.
func (v *validator) resources(p string, r *pod.Resources) {
	for _, list := range []struct {
		path string
		rl   pod.ResourceList
	}{{p + ".limits", r.Limits}, {p + ".requests", r.Requests}} {
		for _, name := range sortedResourceNames(list.rl) {
			q := list.rl[name]
			switch {
			case !slices.Contains(resourceNames, name) && strings.Contains(string(name), "/"):
				v.extendedResource(p, list.path, name, q, r)
			case !slices.Contains(resourceNames, name):
				v.failKey(list.path, string(name), "unsupported resource %q: must be \"cpu\", \"memory\" or \"ephemeral-storage\"", name)
			case q.MilliValue() < 0:
				v.fail(fieldpath.Key(list.path, string(name)), "must be greater than or equal to 0")
			case name != pod.ResourceCPU && q.MilliValue()%1000 != 0:
				v.fail(fieldpath.Key(list.path, string(name)), "must be a whole number of bytes, not %s", q)
			}
		}
	}
	for _, name := range sortedResourceNames(r.Requests) {
		req := r.Requests[name]
		limit, ok := r.Limits[name]
		if extendedName(name) {
			continue // checked by extendedResource
		}
		if ok && req.MilliValue() > limit.MilliValue() && limit.MilliValue() >= 0 {
			v.fail(fieldpath.Key(p+".requests", string(name)), "must be less than or equal to %s limit of %s", name, limit)
		}
	}
}

// extendedName reports whether name is an extended resource's: a "/" and
// not one of the names tug knows.
func extendedName(name pod.ResourceName) bool {
	return !slices.Contains(resourceNames, name) && strings.Contains(string(name), "/")
}

// extendedResource checks an extended resource of a container's limits
// or requests (at listPath) as Kubernetes does: a name outside the
// kubernetes.io domain, a whole number, a limit, and a request equal to
// it. A valid one gets a warning, once, on the field the file has: the
// node must declare it (--device-resource), or the pod is refused.
func (v *validator) extendedResource(p, listPath string, name pod.ResourceName, q pod.Quantity, r *pod.Resources) {
	isRequest := listPath == p+".requests"
	if isRequest && !v.written(fieldpath.Key(listPath, string(name))) && v.at != nil {
		return // a limit defaults the request: reported on the limit
	}
	domain, _, _ := strings.Cut(string(name), "/")
	limit, hasLimit := r.Limits[name]
	switch {
	case domain == "" || domain == "kubernetes.io" || strings.HasSuffix(domain, ".kubernetes.io"):
		v.failKey(listPath, string(name), "unsupported resource %q: must be \"cpu\", \"memory\", \"ephemeral-storage\" or an extended resource outside the kubernetes.io domain", name)
	case pod.QualifiedNameError(string(name)) != "":
		// Kubernetes' rule for a resource name; admission, the device
		// refusal (OutOf<name>) and events then carry a printable name.
		v.failKey(listPath, string(name), "invalid resource name %q: %s", name, pod.QualifiedNameError(string(name)))
	case q.MilliValue() < 0 || q.MilliValue()%1000 != 0:
		v.fail(fieldpath.Key(listPath, string(name)), "must be a whole number of devices, not %s", q)
	case isRequest && !hasLimit:
		v.fail(fieldpath.Key(listPath, string(name)), "a limit must be set as well: an extended resource cannot be overcommitted")
	case isRequest && limit.MilliValue() != q.MilliValue():
		v.fail(fieldpath.Key(listPath, string(name)), "must be equal to %s limit of %s", name, limit)
	case isRequest && v.written(fieldpath.Key(p+".limits", string(name))):
		// Reported on the limit.
	default:
		v.warnAt(fieldpath.Key(listPath, string(name)), fmt.Sprintf("extended resource %q: the node must declare it (tug run --device-resource), or the pod is refused with status OutOf%s", name, name))
	}
}

func sortedResourceNames(rl pod.ResourceList) []pod.ResourceName {
	names := make([]pod.ResourceName, 0, len(rl))
	for n := range rl {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Limits of a pod's DNS configuration, as in Kubernetes.
const (
	maxDNSNameservers  = 3
	maxDNSSearches     = 32
	maxDNSSearchLength = 2048
)

// dns checks dnsPolicy and dnsConfig: policy None needs at least one
// nameserver, nameservers are IP addresses, searches are domain names.
func (v *validator) dns(s *pod.PodSpec) {
	switch s.DNSPolicy {
	case pod.DNSClusterFirst, pod.DNSClusterFirstWithHostNet, pod.DNSDefault, pod.DNSNone:
	case "":
		v.fail("spec.dnsPolicy", "required")
	default:
		v.fail("spec.dnsPolicy", "unsupported value %q: must be \"ClusterFirst\", \"ClusterFirstWithHostNet\", \"Default\" or \"None\"", s.DNSPolicy)
	}
	c := s.DNSConfig
	if c == nil {
		if s.DNSPolicy == pod.DNSNone {
			v.fail("spec.dnsConfig", "required when dnsPolicy is None")
		}
		return
	}
	if s.DNSPolicy == pod.DNSNone && len(c.Nameservers) == 0 {
		v.fail("spec.dnsConfig.nameservers", "must have at least one nameserver when dnsPolicy is None")
	}
	if len(c.Nameservers) > maxDNSNameservers {
		v.fail("spec.dnsConfig.nameservers", "must not have more than %d nameservers", maxDNSNameservers)
	}
	for i, ns := range c.Nameservers {
		if !isPlainIP(ns) {
			v.fail(fieldpath.Index("spec.dnsConfig.nameservers", i), "invalid IP address %q: %s", ns, plainIPMsg)
		}
	}
	if len(c.Searches) > maxDNSSearches {
		v.fail("spec.dnsConfig.searches", "must not have more than %d search paths", maxDNSSearches)
	}
	total := 0
	for i, d := range c.Searches {
		total += len(d) + 1
		if !pod.IsDNS1123Subdomain(strings.TrimSuffix(d, ".")) {
			v.fail(fieldpath.Index("spec.dnsConfig.searches", i), "invalid search domain %q: %s", d, pod.DNS1123SubdomainMsg)
		}
	}
	if total > maxDNSSearchLength {
		v.fail("spec.dnsConfig.searches", "must not be longer than %d characters in total", maxDNSSearchLength)
	}
	for i, o := range c.Options {
		p := fieldpath.Index("spec.dnsConfig.options", i)
		switch {
		case o.Name == "":
			v.fail(p+".name", "required")
		case !isResolvWord(o.Name) || strings.Contains(o.Name, ":"):
			v.fail(p+".name", "invalid option name %q: %s, and no ':'", o.Name, resolvWordMsg)
		}
		if o.Value != nil && !isResolvWord(*o.Value) {
			v.fail(p+".value", "invalid option value %q: %s", *o.Value, resolvWordMsg)
		}
	}
}

// plainIPMsg says what isPlainIP accepts.
const plainIPMsg = "must be an IPv4 or IPv6 address without a zone"

// isPlainIP reports whether s is an IP address as the API server's
// validation parses one (net.ParseIP): IPv4 or IPv6, no zone. A zone is
// free text ("fe80::1%eth0"), and every byte of it would reach the pod's
// /etc/hosts or /etc/resolv.conf.
func isPlainIP(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Zone() == ""
}

// resolvWordMsg says what isResolvWord accepts.
const resolvWordMsg = "must be printable characters without spaces"

// isResolvWord reports whether s can stand as one word of a resolv.conf
// line: printable ASCII, no space, tab or newline (each would start
// another word or another line).
func isResolvWord(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// octal writes a mode as a manifest would: 0750 (and its decimal value,
// as a JSON manifest writes it).
func octal(m int32) string {
	if m < 0 {
		return strconv.Itoa(int(m))
	}
	return fmt.Sprintf("%#o (%d)", m, m)
}

// maxAppArmorProfileLen is the longest localhostProfile, as in Kubernetes
// (PATH_MAX - 1).
const maxAppArmorProfileLen = 4095

// appArmorProfile checks an appArmorProfile as Kubernetes'
// validateAppArmorProfileField does. Whether the node can apply it is
// node admission's question (policy.Node).
func (v *validator) appArmorProfile(p string, ap *pod.AppArmorProfile) {
	if ap == nil {
		return
	}
	switch ap.Type {
	case pod.AppArmorRuntimeDefault, pod.AppArmorUnconfined:
		if ap.LocalhostProfile != nil {
			v.fail(p+".localhostProfile", "can only be set when AppArmor type is Localhost")
		}
	case pod.AppArmorLocalhost:
		switch lp := ap.LocalhostProfile; {
		case lp == nil || *lp == "":
			v.fail(p+".localhostProfile", "must be set when AppArmor type is Localhost")
		case strings.TrimSpace(*lp) != *lp:
			v.fail(p+".localhostProfile", "must not be padded with whitespace")
		case len(*lp) > maxAppArmorProfileLen:
			v.fail(p+".localhostProfile", "must be no more than %d characters", maxAppArmorProfileLen)
		case strings.ContainsRune(*lp, 0):
			v.fail(p+".localhostProfile", "must not contain a NUL byte")
		}
	case "":
		v.fail(p+".type", "required")
	default:
		v.fail(p+".type", "unsupported value %q: must be \"RuntimeDefault\", \"Unconfined\" or \"Localhost\"", ap.Type)
	}
}

// NotYet is said of a Kubernetes field tug reads but does not implement
// yet.
const NotYet = "not supported by tug yet"
