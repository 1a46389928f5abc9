package manifest

import (
	"strconv"
	"strings"

	"tug/internal/pod"
)

// apiServerKinds are the kinds of Kubernetes' own API groups that a file
// may carry beside its pods and that mean nothing on a node: they are
// skipped with a warning. A kind of another group (a custom resource) is
// skipped too; any other kind is an error, with the nearest known kind.
var apiServerKinds = []string{
	"APIService", "CSIDriver", "CSINode", "CSIStorageCapacity", "CertificateSigningRequest",
	"ClusterRole", "ClusterRoleBinding", "ControllerRevision", "CustomResourceDefinition",
	"Endpoints", "EndpointSlice", "Event", "FlowSchema", "HorizontalPodAutoscaler", "Ingress",
	"IngressClass", "Lease", "LimitRange", "MutatingWebhookConfiguration", "Namespace",
	"NetworkPolicy", "Node", "PersistentVolume", "PodDisruptionBudget", "PodTemplate",
	"PriorityClass", "PriorityLevelConfiguration", "ReplicationController", "ResourceQuota", "Role",
	"RoleBinding", "RuntimeClass", "Service", "ServiceAccount", "StorageClass",
	"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ValidatingWebhookConfiguration",
	"VolumeAttachment",
}

// tugKinds are the kinds tug reads, in the order its messages name them.
var tugKinds = []string{"Pod", "List", "Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job", "CronJob",
	pod.KindConfigMap, pod.KindSecret, pod.KindClaim}

// kindNames is every kind a suggestion may name.
var kindNames = &structInfo{names: append(append([]string{"PodList"}, tugKinds...), apiServerKinds...)}

// skippedKind reports whether a document of kind and apiVersion is skipped
// with a warning: a Kubernetes kind that needs an API server, or a kind of
// a group that is not Kubernetes' own (a custom resource).
func skippedKind(kind, apiVersion string) bool {
	for _, k := range apiServerKinds {
		if k == kind {
			return true
		}
	}
	group, _, ok := strings.Cut(apiVersion, "/")
	return ok && strings.Contains(group, ".") && !strings.HasSuffix(group, ".k8s.io")
}

// skippedKindWarning is the warning of a skipped kind.
func skippedKindWarning(kind string) string {
	return "kind " + strconv.Quote(pod.Truncate(kind)) + " skipped: tug runs Pods (and the pod template of a Deployment, DaemonSet, StatefulSet, Job or CronJob) on this node; a " + pod.Truncate(kind) + " needs an API server"
}

// unknownKindMessage is the error of a kind that is neither tug's nor one
// it skips, with the nearest kind when one is close.
func unknownKindMessage(kind string) string {
	msg := "unknown kind " + strconv.Quote(pod.Truncate(kind)) + ": "
	if s := kindNames.suggest(kind); s != "" {
		msg += "did you mean " + strconv.Quote(s) + "? "
	}
	return msg + "tug runs " + strings.Join(tugKinds[:len(tugKinds)-1], ", ") + " and " + tugKinds[len(tugKinds)-1]
}
