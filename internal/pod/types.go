package pod

import (
	"strings"
	"time"
)

// The manifest types mirror Kubernetes Pod v1 (k8s.io/api/core/v1) field for
// field, limited to what tug implements. The yaml tags are the Kubernetes
// field names; the same names are used for JSON output. A field tug does not
// implement is absent here on purpose: package manifest's decoder reports it
// as an error.

// Pod is one decoded, defaulted and validated manifest document.
type Pod struct {
	APIVersion string     `yaml:"apiVersion" json:"apiVersion"`
	Kind       string     `yaml:"kind" json:"kind"`
	Metadata   ObjectMeta `yaml:"metadata" json:"metadata"`
	Spec       PodSpec    `yaml:"spec" json:"spec"`
	// Bound holds the ConfigMaps, Secrets and claims the pod references, as
	// the store found them (nil before binding, or when it references
	// none): bookkeeping beside the manifest, not part of the pod's hash.
	Bound *Bound `yaml:"-" json:"-"`
	// Workload is the kind the pod came from when the file held a
	// Deployment, DaemonSet, StatefulSet, ReplicaSet or Job ("" for a Pod).
	// BackoffLimit is a Job's: how many times a failed container is
	// restarted before the pod is Failed (nil when not a Job).
	Workload     string `yaml:"-" json:"workload,omitempty"`
	BackoffLimit *int32 `yaml:"-" json:"backoffLimit,omitempty"`
	// CronJob is set on the pod of a CronJob's Job template: such a pod is
	// never run itself; the cronjob scheduler runs copies of it (one Job
	// pod per schedule slot). Nil for every other pod.
	CronJob *CronJob `yaml:"-" json:"cronJob,omitempty"`
	// ScheduledTime is the schedule slot a CronJob's run was started for
	// (zero for every other pod).
	ScheduledTime time.Time `yaml:"-" json:"scheduledTime,omitzero"`
	// CronJobUID is the UID of the CronJob template pod a run was started
	// from ("" for every other pod): bookkeeping beside the manifest, not
	// part of the pod's hash. Its containers carry it, so that a lost
	// cronjob state is rebuilt from them.
	CronJobUID string `yaml:"-" json:"-"`
}

// ObjectMeta is the subset of Kubernetes ObjectMeta a manifest may set.
// Name is the static pod name (the manifest's name with "-<hostname>"
// appended); ManifestName keeps the name as written. UID is derived by tug
// and never read from a manifest. Source names the source the pod came
// from (pod.Origin.Source): bookkeeping beside the manifest, never read
// from it, and not part of the pod's hash.
type ObjectMeta struct {
	Name         string            `yaml:"name" json:"name"`
	Namespace    string            `yaml:"namespace" json:"namespace"`
	Labels       map[string]string `yaml:"labels" json:"labels,omitempty"`
	Annotations  map[string]string `yaml:"annotations" json:"annotations,omitempty"`
	UID          string            `yaml:"-" json:"uid"`
	ManifestName string            `yaml:"-" json:"-"`
	Source       string            `yaml:"-" json:"-"`
	// DeletionTimestamp is when tug began to remove the pod (its manifest
	// no longer lists it), and DeletionGracePeriodSeconds the grace period
	// its containers get: set only on the API's view of a pod whose
	// containers are still being stopped, never read from a manifest, and
	// absent from every hash (nil is omitted).
	DeletionTimestamp          *time.Time `yaml:"-" json:"deletionTimestamp,omitempty"`
	DeletionGracePeriodSeconds *int64     `yaml:"-" json:"deletionGracePeriodSeconds,omitempty"`
}

// PodSpec is the subset of Kubernetes PodSpec tug implements.
type PodSpec struct {
	InitContainers                []Container   `yaml:"initContainers" json:"initContainers,omitempty"`
	Containers                    []Container   `yaml:"containers" json:"containers"`
	RestartPolicy                 RestartPolicy `yaml:"restartPolicy" json:"restartPolicy"`
	TerminationGracePeriodSeconds *int64        `yaml:"terminationGracePeriodSeconds" json:"terminationGracePeriodSeconds"`
	HostNetwork                   bool          `yaml:"hostNetwork" json:"hostNetwork,omitempty"`
	DNSPolicy                     DNSPolicy     `yaml:"dnsPolicy" json:"dnsPolicy"`
	DNSConfig                     *DNSConfig    `yaml:"dnsConfig" json:"dnsConfig,omitempty"`
	Volumes                       []Volume      `yaml:"volumes" json:"volumes,omitempty"`
	// SecurityContext holds the pod-level defaults of its containers'
	// security settings; a container's own securityContext overrides them.
	SecurityContext *PodSecurityContext `yaml:"securityContext" json:"securityContext,omitempty"`
	// ImagePullSecrets name Secrets of type kubernetes.io/dockerconfigjson
	// in the pod's namespace whose credentials pull its images.
	ImagePullSecrets []LocalObjectReference `yaml:"imagePullSecrets" json:"imagePullSecrets,omitempty"`

	// HostPID and HostIPC run the pod in the node's PID and IPC namespaces
	// (allowed by the privileged policy only). ShareProcessNamespace gives
	// the pod's containers one PID namespace.
	HostPID               bool  `yaml:"hostPID" json:"hostPID,omitempty"`
	HostIPC               bool  `yaml:"hostIPC" json:"hostIPC,omitempty"`
	ShareProcessNamespace *bool `yaml:"shareProcessNamespace" json:"shareProcessNamespace,omitempty"`
	// HostUsers false runs the pod in a user namespace of its own: its
	// container IDs 0-65535 are a block of host IDs given to the pod alone
	// (see UserNamespace). Unset or true: the node's user namespace.
	HostUsers *bool `yaml:"hostUsers" json:"hostUsers,omitempty"`
	// HostAliases are extra /etc/hosts entries.
	HostAliases []HostAlias `yaml:"hostAliases" json:"hostAliases,omitempty"`
	// Hostname, Subdomain and SetHostnameAsFQDN name the pod's host as
	// Kubernetes does: hostname (default: the pod name), and with a
	// subdomain the FQDN <hostname>.<subdomain>.<namespace>.svc.<domain>
	// in /etc/hosts (and as the hostname itself with setHostnameAsFQDN).
	Hostname          string `yaml:"hostname" json:"hostname,omitempty"`
	Subdomain         string `yaml:"subdomain" json:"subdomain,omitempty"`
	SetHostnameAsFQDN *bool  `yaml:"setHostnameAsFQDN" json:"setHostnameAsFQDN,omitempty"`
	// HostnameOverride is the pod's hostname as written, over hostname and
	// subdomain (Kubernetes 1.34+): a DNS subdomain of at most 64
	// characters; the pod has no FQDN then.
	HostnameOverride *string `yaml:"hostnameOverride" json:"hostnameOverride,omitempty"`
	// EnableServiceLinks is accepted: a node has no Services, so there are
	// no service environment variables to add either way.
	EnableServiceLinks *bool `yaml:"enableServiceLinks" json:"enableServiceLinks,omitempty"`

	// NodeSelector, Affinity (its required node affinity) and Tolerations
	// are checked against the node's labels and taints when the pod is
	// admitted, as the kubelet's admission does for static pods.
	NodeSelector map[string]string `yaml:"nodeSelector" json:"nodeSelector,omitempty"`
	Affinity     *Affinity         `yaml:"affinity" json:"affinity,omitempty"`
	Tolerations  []Toleration      `yaml:"tolerations" json:"tolerations,omitempty"`
	// PriorityClassName and Priority order pods for eviction: the two
	// system classes have their Kubernetes priorities (see PodPriority).
	PriorityClassName string `yaml:"priorityClassName" json:"priorityClassName,omitempty"`
	// ServiceAccountName is kept for the downward API only (a node has no
	// service accounts); warned about as ignored. Empty reads as "default".
	ServiceAccountName string `yaml:"serviceAccountName" json:"serviceAccountName,omitempty"`
	Priority           *int32 `yaml:"priority" json:"priority,omitempty"`
	// OS names the operating system the pod is for: linux (this node's),
	// or windows, which tug refuses. Kubernetes requires it for a
	// container's lifecycle.stopSignal.
	OS *PodOS `yaml:"os" json:"os,omitempty"`
	// Resources are the pod-level requests and limits of cpu and memory
	// (Kubernetes 1.34+): the pod cgroup's values and the pod's QoS class
	// come from them; its containers share them.
	Resources *Resources `yaml:"resources" json:"resources,omitempty"`
	// RuntimeClassName names the node's runtime class the pod's containers
	// run with (the node maps it to a containerd runtime and, for the runc
	// shim, a runtime binary: --runtime-class); unset: runc. A class the
	// node does not declare refuses the pod at admission.
	RuntimeClassName *string `yaml:"runtimeClassName" json:"runtimeClassName,omitempty"`
}

// RuntimeClass returns the pod's runtime class name, "" when unset.
func (s *PodSpec) RuntimeClass() string {
	if s.RuntimeClassName == nil {
		return ""
	}
	return *s.RuntimeClassName
}

// OSName is linux or windows.
type OSName string

const (
	OSLinux   OSName = "linux"
	OSWindows OSName = "windows"
)

// PodOS is the operating system a pod is for.
type PodOS struct {
	Name OSName `yaml:"name" json:"name"`
}

// HostAlias is one /etc/hosts line: IP and its names.
type HostAlias struct {
	IP        string   `yaml:"ip" json:"ip"`
	Hostnames []string `yaml:"hostnames" json:"hostnames,omitempty"`
}

// Affinity holds the node affinity tug checks; pod affinity and
// anti-affinity, and preferred terms, are for a scheduler and are accepted
// with a warning.
type Affinity struct {
	NodeAffinity *NodeAffinity `yaml:"nodeAffinity" json:"nodeAffinity,omitempty"`
}

// NodeAffinity is the required part of a pod's node affinity.
type NodeAffinity struct {
	Required *NodeSelector `yaml:"requiredDuringSchedulingIgnoredDuringExecution" json:"requiredDuringSchedulingIgnoredDuringExecution,omitempty"`
}

// NodeSelector matches a node when any of its terms does.
type NodeSelector struct {
	NodeSelectorTerms []NodeSelectorTerm `yaml:"nodeSelectorTerms" json:"nodeSelectorTerms"`
}

// NodeSelectorTerm matches when all its requirements do. matchFields can
// only name metadata.name, the node's name.
type NodeSelectorTerm struct {
	MatchExpressions []NodeSelectorRequirement `yaml:"matchExpressions" json:"matchExpressions,omitempty"`
	MatchFields      []NodeSelectorRequirement `yaml:"matchFields" json:"matchFields,omitempty"`
}

// NodeSelectorRequirement is key, operator (In, NotIn, Exists,
// DoesNotExist, Gt, Lt) and values.
type NodeSelectorRequirement struct {
	Key      string   `yaml:"key" json:"key"`
	Operator string   `yaml:"operator" json:"operator"`
	Values   []string `yaml:"values" json:"values,omitempty"`
}

// Toleration lets a pod run on a node with a matching taint.
type Toleration struct {
	Key               string `yaml:"key" json:"key,omitempty"`
	Operator          string `yaml:"operator" json:"operator,omitempty"` // Equal (default) or Exists
	Value             string `yaml:"value" json:"value,omitempty"`
	Effect            string `yaml:"effect" json:"effect,omitempty"` // "" matches every effect
	TolerationSeconds *int64 `yaml:"tolerationSeconds" json:"tolerationSeconds,omitempty"`
}

// Sysctl is one namespaced kernel parameter set in the pod's namespaces.
type Sysctl struct {
	Name  string `yaml:"name" json:"name"`
	Value string `yaml:"value" json:"value"`
}

// PodSecurityContext is the subset of the Kubernetes pod-level security
// context tug implements: each field is the default of the same field of
// every container's securityContext.
type PodSecurityContext struct {
	RunAsUser      *int64          `yaml:"runAsUser" json:"runAsUser,omitempty"`
	RunAsGroup     *int64          `yaml:"runAsGroup" json:"runAsGroup,omitempty"`
	RunAsNonRoot   *bool           `yaml:"runAsNonRoot" json:"runAsNonRoot,omitempty"`
	SeccompProfile *SeccompProfile `yaml:"seccompProfile" json:"seccompProfile,omitempty"`
	// FSGroup is added to every container's supplementary groups, and
	// emptyDir volumes are made group-owned and writable by it.
	// FSGroupChangePolicy (OnRootMismatch or Always) is accepted.
	FSGroup             *int64  `yaml:"fsGroup" json:"fsGroup,omitempty"`
	FSGroupChangePolicy *string `yaml:"fsGroupChangePolicy" json:"fsGroupChangePolicy,omitempty"`
	// SupplementalGroups are added to every container's groups.
	SupplementalGroups []int64 `yaml:"supplementalGroups" json:"supplementalGroups,omitempty"`
	// SupplementalGroupsPolicy is Merge (nil: the groups of the image's
	// /etc/group for the container's user, plus fsGroup and
	// supplementalGroups) or Strict (only the primary group, fsGroup and
	// supplementalGroups).
	SupplementalGroupsPolicy *SupplementalGroupsPolicy `yaml:"supplementalGroupsPolicy" json:"supplementalGroupsPolicy,omitempty"`
	// Sysctls are set in the pod's namespaces; names outside the safe set
	// need the privileged policy.
	Sysctls []Sysctl `yaml:"sysctls" json:"sysctls,omitempty"`
	// AppArmorProfile is the default of every container's.
	AppArmorProfile *AppArmorProfile `yaml:"appArmorProfile" json:"appArmorProfile,omitempty"`
}

// AppArmorProfileType is RuntimeDefault, Unconfined or Localhost.
type AppArmorProfileType string

const (
	// AppArmorRuntimeDefault is the runtime's default profile (tug's
	// "tug-default", containerd's template).
	AppArmorRuntimeDefault AppArmorProfileType = "RuntimeDefault"
	// AppArmorUnconfined runs the container without a profile.
	AppArmorUnconfined AppArmorProfileType = "Unconfined"
	// AppArmorLocalhost applies LocalhostProfile, a profile loaded on the
	// node.
	AppArmorLocalhost AppArmorProfileType = "Localhost"
)

// AppArmorProfile selects a container's AppArmor profile. LocalhostProfile
// is set exactly when Type is Localhost: the name of a profile loaded on
// the node. On a node whose kernel has AppArmor off, a Localhost profile
// keeps the pod from running and the others have no effect.
type AppArmorProfile struct {
	Type             AppArmorProfileType `yaml:"type" json:"type"`
	LocalhostProfile *string             `yaml:"localhostProfile" json:"localhostProfile,omitempty"`
}

// SupplementalGroupsPolicy says where a container's supplementary groups
// come from: Merge or Strict.
type SupplementalGroupsPolicy string

const (
	// SupplementalGroupsMerge adds the image's /etc/group memberships of
	// the container's user (Kubernetes' default).
	SupplementalGroupsMerge SupplementalGroupsPolicy = "Merge"
	// SupplementalGroupsStrict leaves them out.
	SupplementalGroupsStrict SupplementalGroupsPolicy = "Strict"
)

// SeccompProfileType is RuntimeDefault, Unconfined or Localhost.
type SeccompProfileType string

const (
	// SeccompRuntimeDefault is containerd's default profile (tug's default
	// for every container that is not privileged).
	SeccompRuntimeDefault SeccompProfileType = "RuntimeDefault"
	// SeccompUnconfined runs the container without a seccomp filter.
	SeccompUnconfined SeccompProfileType = "Unconfined"
	// SeccompLocalhost loads LocalhostProfile from the node's profile
	// directory (--seccomp-profile-root).
	SeccompLocalhost SeccompProfileType = "Localhost"
)

// SeccompProfile selects a container's seccomp filter. LocalhostProfile is
// set exactly when Type is Localhost: a path relative to the node's profile
// directory, with no ".." element.
type SeccompProfile struct {
	Type             SeccompProfileType `yaml:"type" json:"type"`
	LocalhostProfile *string            `yaml:"localhostProfile" json:"localhostProfile,omitempty"`
}

// DNSPolicy says where a pod's /etc/resolv.conf comes from. tug has no
// cluster DNS, so ClusterFirst and ClusterFirstWithHostNet act as Default,
// as on a kubelet started without --cluster-dns.
type DNSPolicy string

const (
	DNSClusterFirst            DNSPolicy = "ClusterFirst"
	DNSClusterFirstWithHostNet DNSPolicy = "ClusterFirstWithHostNet"
	DNSDefault                 DNSPolicy = "Default"
	DNSNone                    DNSPolicy = "None"
)

// DNSConfig adds to (or, with dnsPolicy None, makes up) the pod's
// resolv.conf.
type DNSConfig struct {
	Nameservers []string          `yaml:"nameservers" json:"nameservers,omitempty"`
	Searches    []string          `yaml:"searches" json:"searches,omitempty"`
	Options     []DNSConfigOption `yaml:"options" json:"options,omitempty"`
}

// DNSConfigOption is one resolv.conf option ("ndots", "2").
type DNSConfigOption struct {
	Name  string  `yaml:"name" json:"name"`
	Value *string `yaml:"value" json:"value,omitempty"`
}

// RestartPolicy is Always, OnFailure or Never.
type RestartPolicy string

const (
	RestartAlways    RestartPolicy = "Always"
	RestartOnFailure RestartPolicy = "OnFailure"
	RestartNever     RestartPolicy = "Never"
)

// PullPolicy is Always, IfNotPresent or Never.
type PullPolicy string

const (
	PullAlways       PullPolicy = "Always"
	PullIfNotPresent PullPolicy = "IfNotPresent"
	PullNever        PullPolicy = "Never"
)

// Container is one init or app container.
type Container struct {
	Name            string           `yaml:"name" json:"name"`
	Image           string           `yaml:"image" json:"image"`
	ImagePullPolicy PullPolicy       `yaml:"imagePullPolicy" json:"imagePullPolicy"`
	Command         []string         `yaml:"command" json:"command,omitempty"`
	Args            []string         `yaml:"args" json:"args,omitempty"`
	WorkingDir      string           `yaml:"workingDir" json:"workingDir,omitempty"`
	Env             []EnvVar         `yaml:"env" json:"env,omitempty"`
	EnvFrom         []EnvFromSource  `yaml:"envFrom" json:"envFrom,omitempty"`
	Ports           []ContainerPort  `yaml:"ports" json:"ports,omitempty"`
	VolumeMounts    []VolumeMount    `yaml:"volumeMounts" json:"volumeMounts,omitempty"`
	SecurityContext *SecurityContext `yaml:"securityContext" json:"securityContext,omitempty"`
	Resources       Resources        `yaml:"resources" json:"resources,omitzero"`
	// ResizePolicy says, per resource (cpu, memory), whether a change of
	// the container's resources is applied to the running container
	// (NotRequired, the default) or restarts it (RestartContainer).
	ResizePolicy []ContainerResizePolicy `yaml:"resizePolicy" json:"resizePolicy,omitempty"`
	// LivenessProbe, ReadinessProbe and StartupProbe are run by tug's
	// prober (internal/prober); Lifecycle holds the postStart and preStop
	// hooks. Init containers have them only as sidecars.
	LivenessProbe  *Probe     `yaml:"livenessProbe" json:"livenessProbe,omitempty"`
	ReadinessProbe *Probe     `yaml:"readinessProbe" json:"readinessProbe,omitempty"`
	StartupProbe   *Probe     `yaml:"startupProbe" json:"startupProbe,omitempty"`
	Lifecycle      *Lifecycle `yaml:"lifecycle" json:"lifecycle,omitempty"`
	// RestartPolicy on an init container is Always: a sidecar, started in
	// order with the init containers, kept running beside the app
	// containers and stopped after them. On an app container it overrides
	// the pod's restartPolicy for that container (Kubernetes 1.34+), and
	// RestartPolicyRules, checked in order on each exit, may restart it
	// whatever the policy says.
	RestartPolicy      *RestartPolicy         `yaml:"restartPolicy" json:"restartPolicy,omitempty"`
	RestartPolicyRules []ContainerRestartRule `yaml:"restartPolicyRules" json:"restartPolicyRules,omitempty"`
	// TerminationMessagePath is the file, in the container, whose content
	// becomes the message of its terminated state; with
	// TerminationMessagePolicy FallbackToLogsOnError the tail of its log
	// is used when the file is empty and the container failed.
	TerminationMessagePath   string `yaml:"terminationMessagePath" json:"terminationMessagePath,omitempty"`
	TerminationMessagePolicy string `yaml:"terminationMessagePolicy" json:"terminationMessagePolicy,omitempty"`
	// Stdin, StdinOnce and TTY are accepted: a node agent attaches no
	// terminal or input stream; output goes to the log either way.
	Stdin     bool `yaml:"stdin" json:"stdin,omitempty"`
	StdinOnce bool `yaml:"stdinOnce" json:"stdinOnce,omitempty"`
	TTY       bool `yaml:"tty" json:"tty,omitempty"`
}

// ContainerRestartRule is one rule of a container's restartPolicyRules:
// when ExitCodes matches the exit, Action (Restart) is taken.
type ContainerRestartRule struct {
	Action    string                           `yaml:"action" json:"action"`
	ExitCodes *ContainerRestartRuleOnExitCodes `yaml:"exitCodes" json:"exitCodes,omitempty"`
}

// RestartRuleRestart is the action of a restart rule that restarts the
// container.
const RestartRuleRestart = "Restart"

// ContainerRestartRuleOnExitCodes matches an exit code that is In (or
// NotIn) Values.
type ContainerRestartRuleOnExitCodes struct {
	Operator string  `yaml:"operator" json:"operator"`
	Values   []int32 `yaml:"values" json:"values,omitempty"`
}

// Matches reports whether the exit code matches.
func (e *ContainerRestartRuleOnExitCodes) Matches(code int) bool {
	in := false
	for _, v := range e.Values {
		if int(v) == code {
			in = true
			break
		}
	}
	return in == (e.Operator == "In")
}

// RestartsAfter reports whether app container c of a pod with restart
// policy podPolicy is started again after it exited with code: the first
// of its restartPolicyRules that matches says Restart; if none matches,
// its own restartPolicy, or else the pod's, decides.
func (c *Container) RestartsAfter(podPolicy RestartPolicy, code int) bool {
	for _, r := range c.RestartPolicyRules {
		if r.ExitCodes != nil && r.ExitCodes.Matches(code) {
			return r.Action == RestartRuleRestart
		}
	}
	policy := podPolicy
	if c.RestartPolicy != nil {
		policy = *c.RestartPolicy
	}
	switch policy {
	case RestartAlways:
		return true
	case RestartOnFailure:
		return code != 0
	}
	return false
}

// IsSidecar reports whether c is a sidecar init container
// (restartPolicy: Always).
func (c *Container) IsSidecar() bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == RestartAlways
}

// ResourceName names a compute resource.
type ResourceName string

const (
	ResourceCPU              ResourceName = "cpu"
	ResourceMemory           ResourceName = "memory"
	ResourceEphemeralStorage ResourceName = "ephemeral-storage"
)

// ResourceList maps resource names to quantities.
type ResourceList map[ResourceName]Quantity

// Resources are a container's requests and limits. A limit without a
// request sets the request (Kubernetes' defaulting), so after SetDefaults a
// request is present wherever a limit is.
type Resources struct {
	Limits   ResourceList `yaml:"limits" json:"limits,omitempty"`
	Requests ResourceList `yaml:"requests" json:"requests,omitempty"`
}

// ResizeRestartPolicy is NotRequired or RestartContainer.
type ResizeRestartPolicy string

const (
	// ResizeNotRequired applies a resize to the running container.
	ResizeNotRequired ResizeRestartPolicy = "NotRequired"
	// ResizeRestartContainer restarts the container to apply a resize.
	ResizeRestartContainer ResizeRestartPolicy = "RestartContainer"
)

// ContainerResizePolicy is how a change of one resource is applied.
type ContainerResizePolicy struct {
	ResourceName  ResourceName        `yaml:"resourceName" json:"resourceName"`
	RestartPolicy ResizeRestartPolicy `yaml:"restartPolicy" json:"restartPolicy"`
}

// ResizePolicyFor returns c's resize restart policy for resource name:
// NotRequired unless its resizePolicy says otherwise.
func (c *Container) ResizePolicyFor(name ResourceName) ResizeRestartPolicy {
	for _, r := range c.ResizePolicy {
		if r.ResourceName == name && r.RestartPolicy != "" {
			return r.RestartPolicy
		}
	}
	return ResizeNotRequired
}

// EnvVar is an environment variable: a literal Value, or ValueFrom a
// ConfigMap or Secret key or the downward API, resolved when the container
// starts.
type EnvVar struct {
	Name      string        `yaml:"name" json:"name"`
	Value     string        `yaml:"value" json:"value"`
	ValueFrom *EnvVarSource `yaml:"valueFrom" json:"valueFrom,omitempty"`
}

// Protocol is TCP or UDP.
type Protocol string

const (
	ProtocolTCP Protocol = "TCP"
	ProtocolUDP Protocol = "UDP"
)

// ContainerPort documents a port. A hostPort publishes it on the node: with
// hostNetwork the container listens there itself (hostPort must equal
// containerPort); otherwise tug forwards hostIP:hostPort (hostIP empty:
// every node address) to the pod's IP and containerPort.
type ContainerPort struct {
	Name          string   `yaml:"name" json:"name,omitempty"`
	ContainerPort int32    `yaml:"containerPort" json:"containerPort"`
	HostPort      int32    `yaml:"hostPort" json:"hostPort,omitempty"`
	HostIP        string   `yaml:"hostIP" json:"hostIP,omitempty"`
	Protocol      Protocol `yaml:"protocol" json:"protocol"`
}

// VolumeMount mounts a pod volume into a container.
type VolumeMount struct {
	Name      string `yaml:"name" json:"name"`
	MountPath string `yaml:"mountPath" json:"mountPath"`
	ReadOnly  bool   `yaml:"readOnly" json:"readOnly,omitempty"`
	SubPath   string `yaml:"subPath" json:"subPath,omitempty"`
	// MountPropagation is how mounts made below the volume later reach
	// the other side: None (unset: private), HostToContainer (the host's
	// reach the container, rslave) or Bidirectional (both ways, rshared;
	// privileged containers only). tug applies it to hostPath volumes.
	MountPropagation *MountPropagationMode `yaml:"mountPropagation" json:"mountPropagation,omitempty"`
}

// MountPropagationMode is a volume mount's propagation, as Kubernetes
// names it.
type MountPropagationMode string

const (
	MountPropagationNone            MountPropagationMode = "None"
	MountPropagationHostToContainer MountPropagationMode = "HostToContainer"
	MountPropagationBidirectional   MountPropagationMode = "Bidirectional"
)

// Propagation returns m's propagation, None when unset.
func (m *VolumeMount) Propagation() MountPropagationMode {
	if m.MountPropagation == nil {
		return MountPropagationNone
	}
	return *m.MountPropagation
}

// SecurityContext is the container-level security context tug implements.
// RunAsUser, RunAsGroup, RunAsNonRoot and SeccompProfile default to the
// pod's (see Pod.ContainerSecurity).
type SecurityContext struct {
	Privileged               *bool           `yaml:"privileged" json:"privileged,omitempty"`
	RunAsUser                *int64          `yaml:"runAsUser" json:"runAsUser,omitempty"`
	RunAsGroup               *int64          `yaml:"runAsGroup" json:"runAsGroup,omitempty"`
	ReadOnlyRootFilesystem   *bool           `yaml:"readOnlyRootFilesystem" json:"readOnlyRootFilesystem,omitempty"`
	Capabilities             *Capabilities   `yaml:"capabilities" json:"capabilities,omitempty"`
	RunAsNonRoot             *bool           `yaml:"runAsNonRoot" json:"runAsNonRoot,omitempty"`
	AllowPrivilegeEscalation *bool           `yaml:"allowPrivilegeEscalation" json:"allowPrivilegeEscalation,omitempty"`
	SeccompProfile           *SeccompProfile `yaml:"seccompProfile" json:"seccompProfile,omitempty"`
	// ProcMount is Default or Unmasked (the latter needs the privileged
	// policy and leaves /proc unmasked).
	ProcMount *string `yaml:"procMount" json:"procMount,omitempty"`
	// AppArmorProfile defaults to the pod's.
	AppArmorProfile *AppArmorProfile `yaml:"appArmorProfile" json:"appArmorProfile,omitempty"`
}

// ContainerSecurity returns c's security context with the pod-level
// defaults filled in where the container sets nothing (runAsUser,
// runAsGroup, runAsNonRoot, seccompProfile, appArmorProfile), as the
// kubelet merges them. The
// result shares no pointer with the pod that the caller could change.
func (p *Pod) ContainerSecurity(c *Container) SecurityContext {
	var sc SecurityContext
	if c.SecurityContext != nil {
		sc = *c.SecurityContext
	}
	if ps := p.Spec.SecurityContext; ps != nil {
		if sc.RunAsUser == nil {
			sc.RunAsUser = ps.RunAsUser
		}
		if sc.RunAsGroup == nil {
			sc.RunAsGroup = ps.RunAsGroup
		}
		if sc.RunAsNonRoot == nil {
			sc.RunAsNonRoot = ps.RunAsNonRoot
		}
		if sc.SeccompProfile == nil {
			sc.SeccompProfile = ps.SeccompProfile
		}
		if sc.AppArmorProfile == nil {
			sc.AppArmorProfile = ps.AppArmorProfile
		}
	}
	return sc
}

// Capabilities adds to or drops from the default capability set. Names are
// written without the CAP_ prefix, as in Kubernetes ("NET_ADMIN", or "ALL"
// in drop).
type Capabilities struct {
	Add  []string `yaml:"add" json:"add,omitempty"`
	Drop []string `yaml:"drop" json:"drop,omitempty"`
}

// Volume is a named pod volume; exactly one source is set.
type Volume struct {
	Name     string                `yaml:"name" json:"name"`
	HostPath *HostPathVolumeSource `yaml:"hostPath" json:"hostPath,omitempty"`
	EmptyDir *EmptyDirVolumeSource `yaml:"emptyDir" json:"emptyDir,omitempty"`

	ConfigMap             *ConfigMapVolumeSource             `yaml:"configMap" json:"configMap,omitempty"`
	Secret                *SecretVolumeSource                `yaml:"secret" json:"secret,omitempty"`
	Projected             *ProjectedVolumeSource             `yaml:"projected" json:"projected,omitempty"`
	DownwardAPI           *DownwardAPIVolumeSource           `yaml:"downwardAPI" json:"downwardAPI,omitempty"`
	PersistentVolumeClaim *PersistentVolumeClaimVolumeSource `yaml:"persistentVolumeClaim" json:"persistentVolumeClaim,omitempty"`
	Image                 *ImageVolumeSource                 `yaml:"image" json:"image,omitempty"`
}

// ImageVolumeSource mounts the files of an OCI image or artifact,
// read-only: the layers of Reference merged as for a container's image.
type ImageVolumeSource struct {
	// Reference names the image or artifact as a container's image does.
	Reference string `yaml:"reference" json:"reference"`
	// PullPolicy is Always, IfNotPresent or Never; its default is a
	// container's (DefaultPullPolicy).
	PullPolicy PullPolicy `yaml:"pullPolicy" json:"pullPolicy,omitempty"`
}

// HostPathType is the Kubernetes hostPath type check ("" means no check).
type HostPathType string

const (
	HostPathUnset             HostPathType = ""
	HostPathDirectoryOrCreate HostPathType = "DirectoryOrCreate"
	HostPathDirectory         HostPathType = "Directory"
	HostPathFileOrCreate      HostPathType = "FileOrCreate"
	HostPathFile              HostPathType = "File"
	HostPathSocket            HostPathType = "Socket"
	HostPathCharDev           HostPathType = "CharDevice"
	HostPathBlockDev          HostPathType = "BlockDevice"
)

// HostPathVolumeSource bind-mounts a host path.
type HostPathVolumeSource struct {
	Path string       `yaml:"path" json:"path"`
	Type HostPathType `yaml:"type" json:"type,omitempty"`
}

// StorageMedium is "" (node disk) or "Memory" (tmpfs).
type StorageMedium string

const (
	StorageMediumDefault StorageMedium = ""
	StorageMediumMemory  StorageMedium = "Memory"
)

// EmptyDirVolumeSource is a scratch directory that lives as long as the pod.
// Mode is the directory's permission bits (0 to 01777: the sticky bit
// allowed; nil: 0777), set when it is created; fsGroup adds its bits after.
type EmptyDirVolumeSource struct {
	Medium    StorageMedium `yaml:"medium" json:"medium,omitempty"`
	SizeLimit *Quantity     `yaml:"sizeLimit" json:"sizeLimit,omitempty"`
	Mode      *int32        `yaml:"mode" json:"mode,omitempty"`
}

// EmptyDirDefaultMode is the mode of an emptyDir that sets none, as in
// Kubernetes.
const EmptyDirDefaultMode = 0o777

// EmptyDirMaxMode is the largest emptyDir mode: every permission bit and
// the sticky bit.
const EmptyDirMaxMode = 0o1777

// DirMode returns the emptyDir's directory mode: Mode, or 0777.
func (s *EmptyDirVolumeSource) DirMode() uint32 {
	if s.Mode == nil {
		return EmptyDirDefaultMode
	}
	return uint32(*s.Mode)
}

// SysctlDotted returns a sysctl name in the dotted form: Kubernetes also
// accepts slashes as separators, and then a dot is part of a name
// ("net/ipv4/conf/eth0.100/forwarding" is
// "net.ipv4.conf.eth0/100.forwarding" dotted, as /proc/sys sees it).
func SysctlDotted(name string) string {
	if !strings.Contains(name, "/") {
		return name
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '/':
			return '.'
		case '.':
			return '/'
		}
		return r
	}, name)
}

// IsEnvVarName reports whether s may name an environment variable, as
// Kubernetes checks it: [-._a-zA-Z][-._a-zA-Z0-9]*. Validation rejects
// other env names; envFrom skips the keys that are not such names.
func IsEnvVarName(s string) bool {
	if s == "" || '0' <= s[0] && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// Privileged reports whether c's securityContext sets privileged: true.
func (c *Container) Privileged() bool {
	sc := c.SecurityContext
	return sc != nil && sc.Privileged != nil && *sc.Privileged
}
