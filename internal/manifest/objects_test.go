package manifest

import (
	"os"
	"strings"
	"testing"

	"tug/internal/pod"
)

// parseObjectsFile parses testdata/good/objects.yaml and binds its pod to
// its objects.
func parseObjectsFile(t *testing.T) (*pod.Pod, Parsed) {
	t.Helper()
	data, err := os.ReadFile("testdata/good/objects.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pf, err := ParseFile(data, testOptions("objects.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	idx := map[pod.ObjectKey]*pod.Object{}
	for _, o := range pf.Objects {
		idx[o.Key()] = o
	}
	p, digest := pod.Bind(pf.Pods[0], func(k pod.ObjectKey) *pod.Object { return idx[k] })
	if digest == "" || p.Bound == nil || len(p.Bound.Missing) != 0 {
		t.Fatalf("Bind: digest %q, bound %+v", digest, p.Bound)
	}
	return p, pf
}

func TestParseObjects(t *testing.T) {
	_, pf := parseObjectsFile(t)
	tests := []struct {
		key  pod.ObjectKey
		typ  string
		data map[string]string
	}{
		{pod.ObjectKey{Kind: pod.KindConfigMap, Namespace: "default", Name: "settings"}, "", map[string]string{"greeting": "hello", "app.conf": "level=info\n", "blob.bin": "\x00\x01\x02"}},
		{pod.ObjectKey{Kind: pod.KindSecret, Namespace: "default", Name: "creds"}, pod.SecretOpaque, map[string]string{"password": "password", "token": "abc"}},
		{pod.ObjectKey{Kind: pod.KindSecret, Namespace: "default", Name: "regcred"}, pod.SecretDockerConfigJSON, nil},
		{pod.ObjectKey{Kind: pod.KindSecret, Namespace: "default", Name: "tls"}, pod.SecretTLS, map[string]string{"tls.crt": "CERT", "tls.key": "KEY"}},
		{pod.ObjectKey{Kind: pod.KindClaim, Namespace: "default", Name: "data"}, "", map[string]string{}},
	}
	if len(pf.Objects) != len(tests) {
		t.Fatalf("%d objects, want %d", len(pf.Objects), len(tests))
	}
	for i, tt := range tests {
		t.Run(tt.key.String(), func(t *testing.T) {
			o := pf.Objects[i]
			if o.Key() != tt.key || o.Type != tt.typ {
				t.Fatalf("object %d is %s type %q, want %s type %q", i, o, o.Type, tt.key, tt.typ)
			}
			for k, v := range tt.data {
				if string(o.Data[k]) != v {
					t.Errorf("data[%s] = %q, want %q", k, o.Data[k], v)
				}
			}
			if strings.Contains(o.String(), "password") {
				t.Errorf("String shows data: %s", o)
			}
		})
	}
	if q := pf.Objects[4].StorageRequest; q == nil || q.Value() != 1<<30 {
		t.Errorf("claim storage request = %v, want 1Gi", q)
	}
}
