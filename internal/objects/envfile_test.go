package objects

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"strings"
	"testing"

	"tug/internal/pod"
)

func TestParseEnvFile(t *testing.T) {
	tests := []struct {
		name, data string
		want       map[string]string
		wantErr    string
	}{
		{name: "empty", data: "", want: map[string]string{}},
		{name: "lines", data: "# written by init\nA=1\n\nB = two words \nC=x=y\r\nD=\n", want: map[string]string{"A": "1", "B": " two words ", "C": "x=y", "D": ""}},
		{name: "last wins", data: "A=1\nA=2\n", want: map[string]string{"A": "2"}},
		{name: "quotes kept", data: `A="q"` + "\n", want: map[string]string{"A": `"q"`}},
		{name: "no equals", data: "A=1\nB\n", wantErr: "line 2: no '='"},
		{name: "bad key", data: "1A=x\n", wantErr: "line 1: invalid key"},
		{name: "long key", data: strings.Repeat("K", 129) + "=x\n", wantErr: "key of 129 characters"},
		{name: "too big", data: "A=" + strings.Repeat("x", pod.MaxEnvFileSize), wantErr: "more than 65536"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseEnvFile([]byte(tt.data))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// envFileMap serves env files from a map keyed by "volume/path".
type envFileMap map[string]string

func (m envFileMap) ReadEnvFile(_ *pod.Pod, volume, path string) ([]byte, error) {
	s, ok := m[volume+"/"+path]
	if !ok {
		return nil, fmt.Errorf("open %s: %w", path, fs.ErrNotExist)
	}
	return []byte(s), nil
}

func TestEnvFileKeyRef(t *testing.T) {
	files := envFileMap{"cfg/app.env": "TOKEN=abc\n", "cfg/bad.env": "nonsense\n"}
	ref := func(path, key string, opt bool) *pod.Container {
		return &pod.Container{Name: "app", Env: []pod.EnvVar{{Name: "V", ValueFrom: &pod.EnvVarSource{
			FileKeyRef: &pod.FileKeySelector{VolumeName: "cfg", Path: path, Key: key, Optional: &opt}}}}}
	}
	tests := []struct {
		name    string
		c       *pod.Container
		want    []pod.EnvVar
		wantErr string
	}{
		{name: "found", c: ref("app.env", "TOKEN", false), want: []pod.EnvVar{{Name: "V", Value: "abc"}}},
		{name: "key missing", c: ref("app.env", "OTHER", false), wantErr: "no key OTHER"},
		{name: "key missing, optional", c: ref("app.env", "OTHER", true)},
		{name: "file missing", c: ref("none.env", "TOKEN", false), wantErr: "not found"},
		{name: "file missing, optional", c: ref("none.env", "TOKEN", true)},
		{name: "unparsable, optional", c: ref("bad.env", "TOKEN", true), wantErr: "line 1"},
	}
	p := &pod.Pod{Metadata: pod.ObjectMeta{Name: "web", Namespace: "default"}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Env(p, tt.c, NodeInfo{}, files)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, pod.ErrCreateContainerConfig) {
					t.Fatalf("err = %v, want a CreateContainerConfig error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("env = %v, want %v", got, tt.want)
			}
		})
	}
}
