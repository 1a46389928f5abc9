package manifest

import (
	"fmt"
	"strings"
	"testing"

	"tug/internal/pod"
)

// statefulSet is a StatefulSet whose pod mounts the claim templates named
// in mounts, with extra appended to its spec.
func statefulSet(name string, mounts []string, extra string) string {
	var m, t strings.Builder
	for _, v := range mounts {
		fmt.Fprintf(&m, "            - {name: %s, mountPath: /%s}\n", v, v)
		fmt.Fprintf(&t, "    - metadata: {name: %s}\n      spec: {resources: {requests: {storage: 1Gi}}}\n", v)
	}
	return `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: ` + name + `
spec:
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
        - name: db
          image: busybox
          volumeMounts:
` + m.String() + extra + `  volumeClaimTemplates:
` + t.String()
}

// TestClaimTemplates: each claim template is a claim named
// <template>-<set>-0 in the set's namespace, retained unless whenDeleted
// is Delete, bound to the pod; a PersistentVolumeClaim object of the file
// with that name is used instead.
func TestClaimTemplates(t *testing.T) {
	explicit := "---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data-db-0}\nspec: {}\n"
	tests := []struct {
		name string
		file string
		want []string // "name retain=bool"
	}{
		{"two templates", statefulSet("db", []string{"data", "wal"}, ""), []string{"data-db-0 retain=true", "wal-db-0 retain=true"}},
		{"whenDeleted Delete", statefulSet("db", []string{"data"}, "  persistentVolumeClaimRetentionPolicy: {whenDeleted: Delete}\n"), []string{"data-db-0 retain=false"}},
		{"whenDeleted Retain", statefulSet("db", []string{"data"}, "  persistentVolumeClaimRetentionPolicy: {whenDeleted: Retain, whenScaled: Delete}\n"), []string{"data-db-0 retain=true"}},
		{"an object of the same name before", explicit + "---\n" + statefulSet("db", []string{"data"}, ""), []string{"data-db-0 retain=false"}},
		{"an object of the same name after", statefulSet("db", []string{"data"}, "") + explicit, []string{"data-db-0 retain=false"}},
		{"no templates", statefulSet("db", nil, ""), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pf, err := ParseFile([]byte(tt.file), testOptions("set.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			idx := map[pod.ObjectKey]*pod.Object{}
			for _, o := range pf.Objects {
				if o.Kind != pod.KindClaim || o.Namespace != "default" {
					t.Errorf("object %s", o)
				}
				got = append(got, fmt.Sprintf("%s retain=%t", o.Name, o.Retain))
				idx[o.Key()] = o
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("claims %q, want %q", got, tt.want)
			}
			p, _ := pod.Bind(pf.Pods[0], func(k pod.ObjectKey) *pod.Object { return idx[k] })
			if p.Bound != nil && len(p.Bound.Missing) != 0 {
				t.Errorf("missing %v", p.Bound.Missing)
			}
			if n := len(p.Spec.Volumes); n != len(tt.want) {
				t.Errorf("%d volumes, want %d", n, len(tt.want))
			}
		})
	}
}

// TestClaimTemplateRetainChangesTheHash: changing whenDeleted changes the
// digest of the bound claims (the pod is synced, its mark updated), not
// its containers.
func TestClaimTemplateRetainChangesTheHash(t *testing.T) {
	digest := func(file string) string {
		pf, err := ParseFile([]byte(file), testOptions("set.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		_, d := pod.Bind(pf.Pods[0], func(k pod.ObjectKey) *pod.Object {
			for _, o := range pf.Objects {
				if o.Key() == k {
					return o
				}
			}
			return nil
		})
		return d
	}
	retain := digest(statefulSet("db", []string{"data"}, ""))
	del := digest(statefulSet("db", []string{"data"}, "  persistentVolumeClaimRetentionPolicy: {whenDeleted: Delete}\n"))
	if retain == "" || retain == del {
		t.Errorf("digests %q and %q", retain, del)
	}
}
