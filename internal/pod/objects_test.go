package pod

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
)

// parseObjectsFile parses testdata/good/objects.yaml and binds its pod to
// its objects.
func parseObjectsFile(t *testing.T) (*Pod, Parsed) {
	t.Helper()
	data, err := os.ReadFile("testdata/good/objects.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pf, err := ParseFile(data, testOptions("objects.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	idx := map[ObjectKey]*Object{}
	for _, o := range pf.Objects {
		idx[o.Key()] = o
	}
	p, digest := Bind(pf.Pods[0], func(k ObjectKey) *Object { return idx[k] })
	if digest == "" || p.Bound == nil || len(p.Bound.Missing) != 0 {
		t.Fatalf("Bind: digest %q, bound %+v", digest, p.Bound)
	}
	return p, pf
}

func TestParseObjects(t *testing.T) {
	_, pf := parseObjectsFile(t)
	tests := []struct {
		key  ObjectKey
		typ  string
		data map[string]string
	}{
		{ObjectKey{KindConfigMap, "default", "settings"}, "", map[string]string{"greeting": "hello", "app.conf": "level=info\n", "blob.bin": "\x00\x01\x02"}},
		{ObjectKey{KindSecret, "default", "creds"}, SecretOpaque, map[string]string{"password": "password", "token": "abc"}},
		{ObjectKey{KindSecret, "default", "regcred"}, SecretDockerConfigJSON, nil},
		{ObjectKey{KindSecret, "default", "tls"}, SecretTLS, map[string]string{"tls.crt": "CERT", "tls.key": "KEY"}},
		{ObjectKey{KindClaim, "default", "data"}, "", map[string]string{}},
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

func TestResolveEnv(t *testing.T) {
	p, _ := parseObjectsFile(t)
	node := NodeInfo{NodeName: "node1", PodIP: "10.0.0.2", HostIP: "192.168.1.2", CPUMillis: 4000, MemoryBytes: 8 << 30}
	env, err := p.ResolveEnv(&p.Spec.Containers[0], node)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	var order []string
	for _, e := range env {
		got[e.Name] = e.Value
		order = append(order, e.Name)
	}
	want := map[string]string{
		"GREETING": "hello", "TOKEN": "abc", "POD_NAME": "app-node1", "NODE": "node1", "TIER": "",
		"MEM": "64", "CFG_greeting": "hello", "password": "password", "token": "abc",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if _, ok := got["CFG_app.conf"]; !ok {
		t.Errorf("CFG_app.conf missing (a dotted name is a valid variable name): %v", order)
	}
	if order[0] != "CFG_app.conf" || order[len(order)-1] != "MEM" {
		t.Errorf("order %v: envFrom first, then env", order)
	}
}

func TestResolveMissing(t *testing.T) {
	p, _ := parseObjectsFile(t)
	unbound := *p
	unbound.Bound = nil
	_, err := unbound.ResolveEnv(&p.Spec.Containers[0], NodeInfo{})
	var me *MissingError
	if !errors.As(err, &me) || !errors.Is(err, ErrCreateContainerConfig) || !strings.Contains(err.Error(), `configmap "settings" not found`) {
		t.Fatalf("ResolveEnv without objects: %v", err)
	}
	// secret "creds" is optional: its volume is empty, not an error.
	files, secret, err := unbound.VolumeFiles(&p.Spec.Volumes[1], NodeInfo{})
	if err != nil || len(files) != 0 || !secret {
		t.Fatalf("optional secret volume: %v, %v, %v", files, secret, err)
	}
}

func TestVolumeFiles(t *testing.T) {
	p, _ := parseObjectsFile(t)
	node := NodeInfo{CPUMillis: 4000}
	tests := []struct {
		volume string
		secret bool
		want   map[string]VolumeFile
	}{
		{"cfg", false, map[string]VolumeFile{"app.conf": {[]byte("level=info\n"), 0o600}}},
		{"sec", true, map[string]VolumeFile{"password": {[]byte("password"), 0o400}, "token": {[]byte("abc"), 0o400}}},
		{"all", true, map[string]VolumeFile{
			"cfg/greeting": {[]byte("hello"), 0o440}, "tls.crt": {[]byte("CERT"), 0o440},
			"tls.key": {[]byte("KEY"), 0o440}, "labels": {[]byte(`app="demo"`), 0o440},
		}},
		{"info", false, map[string]VolumeFile{
			"name": {[]byte("app-node1"), DefaultFileMode}, "annotations": {nil, DefaultFileMode},
			"cpu": {[]byte("500"), DefaultFileMode},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.volume, func(t *testing.T) {
			var v *Volume
			for i := range p.Spec.Volumes {
				if p.Spec.Volumes[i].Name == tt.volume {
					v = &p.Spec.Volumes[i]
				}
			}
			files, secret, err := p.VolumeFiles(v, node)
			if err != nil || secret != tt.secret || len(files) != len(tt.want) {
				t.Fatalf("VolumeFiles = %v, %v, %v", files, secret, err)
			}
			for k, w := range tt.want {
				f := files[k]
				if string(f.Data) != string(w.Data) || f.Mode != w.Mode {
					t.Errorf("%s = %q %v, want %q %v", k, f.Data, fs.FileMode(f.Mode), w.Data, w.Mode)
				}
			}
		})
	}
}

// TestBindDigest: a change of a bound object changes the digest (an
// update of the pod) and not the container hashes (no restart).
func TestBindDigest(t *testing.T) {
	p, pf := parseObjectsFile(t)
	idx := map[ObjectKey]*Object{}
	for _, o := range pf.Objects {
		idx[o.Key()] = o
	}
	_, d1 := Bind(pf.Pods[0], func(k ObjectKey) *Object { return idx[k] })
	changed := *idx[ObjectKey{KindConfigMap, "default", "settings"}]
	changed.Data = map[string][]byte{"greeting": []byte("bye")}
	idx[changed.Key()] = &changed
	p2, d2 := Bind(pf.Pods[0], func(k ObjectKey) *Object { return idx[k] })
	if d1 == d2 {
		t.Fatal("digest unchanged by an object change")
	}
	if ContainerHash(p, &p.Spec.Containers[0]) != ContainerHash(p2, &p2.Spec.Containers[0]) || p.Hash() != p2.Hash() {
		t.Fatal("an object change changed the pod or container hash")
	}
	delete(idx, changed.Key())
	p3, _ := Bind(pf.Pods[0], func(k ObjectKey) *Object { return idx[k] })
	if len(p3.Bound.Missing) != 1 || p3.Bound.Missing[0].Key != changed.Key() {
		t.Fatalf("missing = %+v", p3.Bound.Missing)
	}
}

func TestFieldValueServiceAccountName(t *testing.T) {
	for _, tc := range []struct{ set, want string }{{"", "default"}, {"gateway", "gateway"}} {
		p := &Pod{Spec: PodSpec{ServiceAccountName: tc.set}}
		got, err := p.FieldValue("spec.serviceAccountName", NodeInfo{})
		if err != nil || got != tc.want {
			t.Errorf("serviceAccountName %q: got %q, %v; want %q", tc.set, got, err, tc.want)
		}
	}
}
