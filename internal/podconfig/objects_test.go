package podconfig

import (
	"testing"

	"tug/internal/pod"
)

// TestObjectsBind: a pod binds the objects of its own source, from any of
// its files; a change of an object it uses is an Update (nothing else
// changed), a change of one it does not use is nothing; an object of
// another source is not bound.
func TestObjectsBind(t *testing.T) {
	cm := func(source, name, value string) *pod.Object {
		return &pod.Object{Kind: pod.KindConfigMap, Namespace: "default", Name: name,
			Data: map[string][]byte{"k": []byte(value)}, Origin: pod.Origin{Source: source}}
	}
	user := mkPod("dir", "web", "img")
	user.Spec.Volumes = []pod.Volume{{Name: "cfg", ConfigMap: &pod.ConfigMapVolumeSource{Name: "settings"}}}
	podFile := good("dir", "pod.yaml")
	podFile.Pods = []*pod.Pod{user}
	objFile := func(hash string, objs ...*pod.Object) pod.SourceFile {
		m := good("dir", "objects.yaml")
		m.Hash, m.Objects = hash, objs
		return m
	}

	s := New()
	tests := []struct {
		name    string
		source  string
		files   []pod.SourceFile
		want    []Op
		missing bool
	}{
		{"pod without its ConfigMap", "dir", []pod.SourceFile{podFile}, []Op{Add}, true},
		{"ConfigMap arrives", "dir", []pod.SourceFile{podFile, objFile("1", cm("dir", "settings", "a"))}, []Op{Update}, false},
		{"same again", "dir", []pod.SourceFile{podFile, objFile("1", cm("dir", "settings", "a"))}, nil, false},
		{"ConfigMap changes", "dir", []pod.SourceFile{podFile, objFile("2", cm("dir", "settings", "b"))}, []Op{Update}, false},
		{"unused object changes", "dir", []pod.SourceFile{podFile, objFile("3", cm("dir", "settings", "b"), cm("dir", "other", "x"))}, nil, false},
		{"another source's ConfigMap is not bound", "url", []pod.SourceFile{{Origin: pod.Origin{Source: "url", File: "u"}, Hash: "u", Objects: []*pod.Object{cm("url", "settings", "z")}}}, nil, false},
		{"ConfigMap removed", "dir", []pod.SourceFile{podFile}, []Op{Update}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changes := s.Apply(tt.source, tt.files)
			if len(changes) != len(tt.want) {
				t.Fatalf("changes %v, want %v", changes, tt.want)
			}
			for i, c := range changes {
				if c.Op != tt.want[i] {
					t.Fatalf("change %d is %v, want %v", i, c.Op, tt.want[i])
				}
			}
			p := s.Pods()[0]
			if got := p.Bound != nil && len(p.Bound.Missing) > 0; got != tt.missing {
				t.Fatalf("missing = %v, want %v (%+v)", got, tt.missing, p.Bound)
			}
			if !tt.missing && string(p.Object(pod.KindConfigMap, "settings").Data["k"]) == "z" {
				t.Fatal("bound the other source's ConfigMap")
			}
		})
	}
}
