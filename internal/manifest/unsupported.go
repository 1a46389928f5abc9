package manifest

import (
	"reflect"

	"tug/internal/pod"
)

// Messages for Kubernetes fields that tug reads but does not implement.
const (
	msgNotYet        = "not supported by tug yet"
	msgServerIgnored = "ignored: written by the Kubernetes API server, not part of a manifest"
	msgServerSet     = "written by the Kubernetes API server, not part of a manifest; remove it"
	msgUIDDerived    = "tug derives the pod UID from the source and the pod name; remove it"
	msgStatus        = "status is written by tug; remove it"

	// The three kinds of message for a Kubernetes field tug does not run:
	// msgAPIServer (a real error: only a cluster can satisfy it; the
	// message says why and what to do instead), msgNotOnNode (a real error
	// tug could lift one day, with what to do instead) and the warnings of
	// ignoredFields (accepted, with no effect on a node).
	msgAPIServer = "needs an API server (tug has none): "
	msgNotOnNode = "not implemented by tug: "
	msgCloudDisk = msgAPIServer + "a cloud or network disk is attached by the cluster's volume controllers; use a persistentVolumeClaim (a local directory on the node) or a hostPath volume instead"
	msgHostMount = msgNotOnNode + "mount it on the node and use a hostPath volume instead"
)

// ignoredFields lists, per manifest type, the Kubernetes fields tug
// accepts and ignores on a node, with the warning given (once per field
// and file) when a manifest sets one. The table is read-only.
var ignoredFields = map[reflect.Type]map[string]string{
	reflect.TypeFor[pod.ObjectMeta](): {
		"ownerReferences": "ignored on a node: there is no garbage collector to follow owners",
		"finalizers":      "ignored on a node: there is no API server to hold the deletion",
		// Written by the API server (podman kube generate and kubectl get
		// -o yaml copy them): meaningless in a manifest, harmless.
		"creationTimestamp": msgServerIgnored,
		"resourceVersion":   msgServerIgnored,
		"selfLink":          msgServerIgnored,
		"generation":        msgServerIgnored,
		"managedFields":     msgServerIgnored,
	},
	reflect.TypeFor[pod.PodSpec](): {
		"schedulerName":                "ignored on a node: only a scheduler reads it",
		"preemptionPolicy":             "ignored on a node: only a scheduler preempts",
		"topologySpreadConstraints":    "ignored on a node: only a scheduler spreads pods",
		"schedulingGates":              "ignored on a node: only a scheduler waits for gates",
		"nodeName":                     "ignored on a node: the pod runs on this node",
		"serviceAccountName":           "ignored on a node: there are no service accounts and no token is mounted",
		"serviceAccount":               "ignored on a node: there are no service accounts and no token is mounted",
		"automountServiceAccountToken": "ignored on a node: there are no service accounts and no token is mounted",
		"readinessGates":               "ignored on a node: no controller sets the conditions it waits for",
	},
	reflect.TypeFor[pod.Affinity](): {
		"podAffinity":     "ignored on a node: only a scheduler places pods beside others",
		"podAntiAffinity": "ignored on a node: only a scheduler places pods apart",
	},
	reflect.TypeFor[pod.NodeAffinity](): {
		"preferredDuringSchedulingIgnoredDuringExecution": "ignored on a node: a preference only matters to a scheduler (the required terms are checked)",
	},
	reflect.TypeFor[pod.PodSecurityContext](): {
		"seLinuxOptions":      "ignored: tug does not apply SELinux labels (SELinux is off on the nodes it runs on)",
		"seLinuxChangePolicy": "ignored: tug does not apply SELinux labels (SELinux is off on the nodes it runs on)",
		"windowsOptions":      "ignored on a Linux node",
	},
	reflect.TypeFor[pod.SecurityContext](): {
		"seLinuxOptions": "ignored: tug does not apply SELinux labels (SELinux is off on the nodes it runs on)",
		"windowsOptions": "ignored on a Linux node",
	},
}

// notImplemented lists, per manifest type, the Kubernetes Pod v1 fields tug
// does not implement, with the message reported when a manifest sets one. A
// field that is in neither the type nor this table is reported as unknown.
// The table is read-only.
var notImplemented = map[reflect.Type]map[string]string{
	reflect.TypeFor[pod.ObjectMeta](): {
		"generateName":               msgAPIServer + "the API server generates names; set metadata.name",
		"uid":                        msgUIDDerived,
		"deletionTimestamp":          msgServerSet,
		"deletionGracePeriodSeconds": msgServerSet,
	},
	reflect.TypeFor[pod.PodSpec](): {
		"ephemeralContainers":   msgNotYet,
		"activeDeadlineSeconds": msgNotYet,
		"hostUsers":             msgNotYet,
		"runtimeClassName":      msgNotYet,
		"overhead":              msgNotYet,
		"os":                    msgNotYet,
		"resourceClaims":        msgNotYet,
		"resources":             msgNotYet,
	},
	reflect.TypeFor[pod.Resources](): {
		"claims": msgNotYet,
	},
	reflect.TypeFor[pod.Container](): {
		"resizePolicy":  msgNotYet,
		"volumeDevices": msgNotYet,
	},
	reflect.TypeFor[pod.Lifecycle](): {
		"stopSignal": msgNotYet,
	},
	reflect.TypeFor[pod.VolumeMount](): {
		"mountPropagation":  msgNotYet,
		"recursiveReadOnly": msgNotYet,
		"subPathExpr":       msgNotYet,
	},
	reflect.TypeFor[pod.PodSecurityContext](): {
		"supplementalGroupsPolicy": msgNotYet,
		"appArmorProfile":          msgNotYet,
	},
	reflect.TypeFor[pod.SecurityContext](): {
		"appArmorProfile": msgNotYet,
	},
	reflect.TypeFor[pod.Volume](): {
		"awsElasticBlockStore": msgCloudDisk,
		"azureDisk":            msgCloudDisk,
		"azureFile":            msgCloudDisk,
		"cephfs":               msgHostMount,
		"cinder":               msgCloudDisk,
		"csi":                  msgCloudDisk,
		"ephemeral":            msgAPIServer + "an ephemeral volume is a claim the API server creates; use an emptyDir instead",
		"fc":                   msgHostMount,
		"flexVolume":           msgHostMount,
		"flocker":              msgCloudDisk,
		"gcePersistentDisk":    msgCloudDisk,
		"gitRepo":              msgNotOnNode + "gitRepo is deprecated in Kubernetes; clone into an emptyDir from an init container instead",
		"glusterfs":            msgHostMount,
		"image":                msgNotYet,
		"iscsi":                msgHostMount,
		"nfs":                  msgHostMount,
		"photonPersistentDisk": msgCloudDisk,
		"portworxVolume":       msgCloudDisk,
		"quobyte":              msgCloudDisk,
		"rbd":                  msgHostMount,
		"scaleIO":              msgCloudDisk,
		"storageos":            msgCloudDisk,
		"vsphereVolume":        msgCloudDisk,
	},
	reflect.TypeFor[pod.VolumeProjection](): {
		"serviceAccountToken": msgAPIServer + "a service account token is issued by the API server; mount a Secret with the token instead",
		"clusterTrustBundle":  msgAPIServer + "ClusterTrustBundles are cluster objects; put the bundle in a ConfigMap instead",
		"podCertificate":      msgAPIServer + "pod certificates are signed through the API server; put the certificate in a Secret instead",
	},
	reflect.TypeFor[pod.PersistentVolumeClaimSpec](): {
		"dataSource":                msgAPIServer + "a claim's data source is a cluster object; tug's claims start empty",
		"dataSourceRef":             msgAPIServer + "a claim's data source is a cluster object; tug's claims start empty",
		"volumeAttributesClassName": msgAPIServer + "volume attribute classes are cluster objects",
	},
}
