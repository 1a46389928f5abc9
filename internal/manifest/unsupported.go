package manifest

import (
	"maps"
	"reflect"
	"slices"

	"tug/internal/pod"
	"tug/internal/podvalidate"
)

// Messages for Kubernetes fields that tug reads but does not implement.
const (
	msgNotYet        = podvalidate.NotYet
	msgServerIgnored = "ignored: written by the Kubernetes API server, not part of a manifest"
	msgServerSet     = "written by the Kubernetes API server, not part of a manifest; remove it"
	msgUIDDerived    = "tug derives the pod UID from the source and the pod name; remove it"
	msgStatus        = "status is written by tug; remove it"

	// The three kinds of message for a Kubernetes field tug does not run:
	// msgAPIServer (a real error: only a cluster can satisfy it; the
	// message says why and what to do instead), msgNotOnNode (a real error
	// tug could lift one day, with what to do instead) and the warnings of
	// ignoredFields (accepted, with no effect on a node).
	msgAPIServer         = "needs an API server (tug has none): "
	msgNotOnNode         = "not implemented by tug: "
	msgCloudDisk         = msgAPIServer + "a cloud or network disk is attached by the cluster's volume controllers; use a persistentVolumeClaim (a local directory on the node) or a hostPath volume instead"
	msgHostMount         = msgNotOnNode + "mount it on the node and use a hostPath volume instead"
	msgSELinux           = "ignored: tug does not apply SELinux labels (SELinux is off on the nodes it runs on)"
	msgNoServiceAccounts = "ignored on a node: there are no service accounts and no token is mounted"
)

// ignoredFields lists, per manifest type, the Kubernetes fields tug
// accepts and ignores on a node, with the warning given (once per field
// and file) when a manifest sets one: the ignored entries of podFields.
// The table is read-only.
var ignoredFields = fieldMessages(ignored)

// notImplemented lists, per manifest type, the Kubernetes fields tug
// does not implement, with the message reported when a manifest sets one:
// the refused entries of podFields, and those of the other kinds. A field
// that is in neither the type nor this table is reported as unknown. The
// table is read-only.
var notImplemented = addMessages(fieldMessages(apiServer, refused), map[reflect.Type]map[string]string{
	reflect.TypeFor[pod.PersistentVolumeClaimSpec](): {
		"dataSource":                msgAPIServer + "a claim's data source is a cluster object; tug's claims start empty",
		"dataSourceRef":             msgAPIServer + "a claim's data source is a cluster object; tug's claims start empty",
		"volumeAttributesClassName": msgAPIServer + "volume attribute classes are cluster objects",
	},
})

// fieldMessages returns the reasons of the podFields entries with one of
// the answers, per manifest type.
func fieldMessages(answers ...answer) map[reflect.Type]map[string]string {
	m := make(map[reflect.Type]map[string]string)
	for _, f := range podFields {
		if !slices.Contains(answers, f.Answer) {
			continue
		}
		t := podTypes[f.Type]
		if m[t] == nil {
			m[t] = make(map[string]string)
		}
		m[t][f.Field] = f.Reason
	}
	return m
}

// addMessages adds the entries of extra to m and returns m.
func addMessages(m, extra map[reflect.Type]map[string]string) map[reflect.Type]map[string]string {
	for t, fields := range extra {
		if m[t] == nil {
			m[t] = make(map[string]string)
		}
		maps.Copy(m[t], fields)
	}
	return m
}
