package objects

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"tug/internal/manifest"
	"tug/internal/pod"
	"tug/internal/testutil"
)

// parseObjectsFile parses manifest's testdata/good/objects.yaml and binds
// its pod to its objects, as the store does.
func parseObjectsFile(t *testing.T) (*pod.Pod, manifest.Parsed) {
	return testutil.BoundPod(t, "../manifest/testdata/good/objects.yaml", manifest.ParseOptions{
		Origin:   pod.Origin{Source: "file:testdata", File: "objects.yaml"},
		Hostname: "node1",
	})
}

func TestResolveEnv(t *testing.T) {
	p, _ := parseObjectsFile(t)
	node := NodeInfo{NodeName: "node1", PodIP: "10.0.0.2", HostIP: "192.168.1.2", CPUMillis: 4000, MemoryBytes: 8 << 30}
	env, err := Env(p, &p.Spec.Containers[0], node, nil)
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
	_, err := Env(&unbound, &p.Spec.Containers[0], NodeInfo{}, nil)
	var me *MissingError
	if !errors.As(err, &me) || !errors.Is(err, pod.ErrCreateContainerConfig) || !strings.Contains(err.Error(), `configmap "settings" not found`) {
		t.Fatalf("Env without objects: %v", err)
	}
	// secret "creds" is optional: its volume is empty, not an error.
	files, secret, err := VolumeFiles(&unbound, &p.Spec.Volumes[1], NodeInfo{})
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
			var v *pod.Volume
			for i := range p.Spec.Volumes {
				if p.Spec.Volumes[i].Name == tt.volume {
					v = &p.Spec.Volumes[i]
				}
			}
			files, secret, err := VolumeFiles(p, v, node)
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

func TestFieldValueServiceAccountName(t *testing.T) {
	for _, tc := range []struct{ set, want string }{{"", "default"}, {"gateway", "gateway"}} {
		p := &pod.Pod{Spec: pod.PodSpec{ServiceAccountName: tc.set}}
		got, err := FieldValue(p, "spec.serviceAccountName", NodeInfo{})
		if err != nil || got != tc.want {
			t.Errorf("serviceAccountName %q: got %q, %v; want %q", tc.set, got, err, tc.want)
		}
	}
}

// TestClaim: a claim of the pod's source resolves to the key of its
// directory; without it, the error names it as the kubelet does.
func TestClaim(t *testing.T) {
	p, _ := parseObjectsFile(t)
	k, err := Claim(p, "data")
	if want := (pod.ClaimKey{Source: "file:testdata", Namespace: "default", Name: "data"}); err != nil || k != want {
		t.Fatalf("Claim = %+v, %v; want %+v", k, err, want)
	}
	_, err = Claim(p, "other")
	var me *MissingError
	if !errors.As(err, &me) || !errors.Is(err, pod.ErrCreateContainerConfig) || err.Error() != `persistentvolumeclaim "other" not found` {
		t.Fatalf("Claim of an undefined claim: %v", err)
	}
}
