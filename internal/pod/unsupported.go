package pod

import "reflect"

// Messages for Kubernetes fields that tug reads but does not implement.
const (
	msgNotYet     = "not supported by tug yet"
	msgServerSet  = "written by the Kubernetes API server, not part of a manifest; remove it"
	msgUIDDerived = "tug derives the pod UID from the source and the pod name; remove it"
	msgStatus     = "status is written by tug; remove it"
	msgAPIServer  = "needs an API server (tug has none): "
)

// notImplemented lists, per manifest type, the Kubernetes Pod v1 fields tug
// does not implement, with the message reported when a manifest sets one. A
// field that is in neither the type nor this table is reported as unknown.
// The table is read-only.
var notImplemented = map[reflect.Type]map[string]string{
	reflect.TypeFor[ObjectMeta](): {
		"generateName":               msgNotYet,
		"uid":                        msgUIDDerived,
		"ownerReferences":            msgNotYet,
		"finalizers":                 msgNotYet,
		"selfLink":                   msgServerSet,
		"resourceVersion":            msgServerSet,
		"generation":                 msgServerSet,
		"creationTimestamp":          msgServerSet,
		"deletionTimestamp":          msgServerSet,
		"deletionGracePeriodSeconds": msgServerSet,
		"managedFields":              msgServerSet,
	},
	reflect.TypeFor[PodSpec](): {
		"ephemeralContainers":          msgNotYet,
		"activeDeadlineSeconds":        msgNotYet,
		"nodeSelector":                 msgNotYet,
		"nodeName":                     msgNotYet,
		"affinity":                     msgNotYet,
		"tolerations":                  msgNotYet,
		"schedulerName":                msgNotYet,
		"schedulingGates":              msgNotYet,
		"topologySpreadConstraints":    msgNotYet,
		"priorityClassName":            msgNotYet,
		"priority":                     msgNotYet,
		"preemptionPolicy":             msgNotYet,
		"serviceAccountName":           msgNotYet,
		"serviceAccount":               msgNotYet,
		"automountServiceAccountToken": msgNotYet,
		"hostPID":                      msgNotYet,
		"hostIPC":                      msgNotYet,
		"hostUsers":                    msgNotYet,
		"shareProcessNamespace":        msgNotYet,
		"hostname":                     msgNotYet,
		"subdomain":                    msgNotYet,
		"setHostnameAsFQDN":            msgNotYet,
		"hostAliases":                  msgNotYet,
		"readinessGates":               msgNotYet,
		"runtimeClassName":             msgNotYet,
		"enableServiceLinks":           msgNotYet,
		"overhead":                     msgNotYet,
		"os":                           msgNotYet,
		"resourceClaims":               msgNotYet,
		"resources":                    msgNotYet,
	},
	reflect.TypeFor[Resources](): {
		"claims": msgNotYet,
	},
	reflect.TypeFor[Container](): {
		"resizePolicy":             msgNotYet,
		"restartPolicy":            msgNotYet + " on a container (sidecar containers)",
		"livenessProbe":            msgNotYet,
		"readinessProbe":           msgNotYet,
		"startupProbe":             msgNotYet,
		"lifecycle":                msgNotYet,
		"volumeDevices":            msgNotYet,
		"terminationMessagePath":   msgNotYet,
		"terminationMessagePolicy": msgNotYet,
		"stdin":                    msgNotYet,
		"stdinOnce":                msgNotYet,
		"tty":                      msgNotYet,
	},
	reflect.TypeFor[VolumeMount](): {
		"mountPropagation":  msgNotYet,
		"recursiveReadOnly": msgNotYet,
		"subPathExpr":       msgNotYet,
	},
	reflect.TypeFor[PodSecurityContext](): {
		"fsGroup":                  msgNotYet,
		"fsGroupChangePolicy":      msgNotYet,
		"supplementalGroups":       msgNotYet,
		"supplementalGroupsPolicy": msgNotYet,
		"sysctls":                  msgNotYet,
		"seLinuxOptions":           msgNotYet,
		"seLinuxChangePolicy":      msgNotYet,
		"appArmorProfile":          msgNotYet,
		"windowsOptions":           msgNotYet,
	},
	reflect.TypeFor[SecurityContext](): {
		"procMount":       msgNotYet,
		"seLinuxOptions":  msgNotYet,
		"appArmorProfile": msgNotYet,
		"windowsOptions":  msgNotYet,
	},
	reflect.TypeFor[Volume](): {
		"awsElasticBlockStore": msgNotYet,
		"azureDisk":            msgNotYet,
		"azureFile":            msgNotYet,
		"cephfs":               msgNotYet,
		"cinder":               msgNotYet,
		"csi":                  msgNotYet,
		"ephemeral":            msgNotYet,
		"fc":                   msgNotYet,
		"flexVolume":           msgNotYet,
		"flocker":              msgNotYet,
		"gcePersistentDisk":    msgNotYet,
		"gitRepo":              msgNotYet,
		"glusterfs":            msgNotYet,
		"image":                msgNotYet,
		"iscsi":                msgNotYet,
		"nfs":                  msgNotYet,
		"photonPersistentDisk": msgNotYet,
		"portworxVolume":       msgNotYet,
		"quobyte":              msgNotYet,
		"rbd":                  msgNotYet,
		"scaleIO":              msgNotYet,
		"storageos":            msgNotYet,
		"vsphereVolume":        msgNotYet,
	},
	reflect.TypeFor[VolumeProjection](): {
		"serviceAccountToken": msgAPIServer + "a service account token is issued by the API server; mount a Secret with the token instead",
		"clusterTrustBundle":  msgAPIServer + "ClusterTrustBundles are cluster objects; put the bundle in a ConfigMap instead",
		"podCertificate":      msgAPIServer + "pod certificates are signed through the API server; put the certificate in a Secret instead",
	},
	reflect.TypeFor[PersistentVolumeClaimSpec](): {
		"dataSource":                msgAPIServer + "a claim's data source is a cluster object; tug's claims start empty",
		"dataSourceRef":             msgAPIServer + "a claim's data source is a cluster object; tug's claims start empty",
		"volumeAttributesClassName": msgAPIServer + "volume attribute classes are cluster objects",
	},
}
