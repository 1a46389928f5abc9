package pod_test

import (
	"testing"

	"tug/internal/pod"
)

// TestBindDigest: a change of a bound object changes the digest (an
// update of the pod) and not the container hashes (no restart).
func TestBindDigest(t *testing.T) {
	p, pf := parseObjectsFile(t)
	idx := map[pod.ObjectKey]*pod.Object{}
	for _, o := range pf.Objects {
		idx[o.Key()] = o
	}
	_, d1 := pod.Bind(pf.Pods[0], func(k pod.ObjectKey) *pod.Object { return idx[k] })
	changed := *idx[pod.ObjectKey{Kind: pod.KindConfigMap, Namespace: "default", Name: "settings"}]
	changed.Data = map[string][]byte{"greeting": []byte("bye")}
	idx[changed.Key()] = &changed
	p2, d2 := pod.Bind(pf.Pods[0], func(k pod.ObjectKey) *pod.Object { return idx[k] })
	if d1 == d2 {
		t.Fatal("digest unchanged by an object change")
	}
	if pod.ContainerHash(p, &p.Spec.Containers[0]) != pod.ContainerHash(p2, &p2.Spec.Containers[0]) || p.Hash() != p2.Hash() {
		t.Fatal("an object change changed the pod or container hash")
	}
	delete(idx, changed.Key())
	p3, _ := pod.Bind(pf.Pods[0], func(k pod.ObjectKey) *pod.Object { return idx[k] })
	if len(p3.Bound.Missing) != 1 || p3.Bound.Missing[0].Key != changed.Key() {
		t.Fatalf("missing = %+v", p3.Bound.Missing)
	}
}
