package images

import (
	"errors"
	"testing"

	"tug/internal/pod"
)

func TestNormalizeRef(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{in: "busybox:1.35", want: "docker.io/library/busybox:1.35"},
		{in: "busybox", want: "docker.io/library/busybox:latest"},
		{in: "library/busybox:1.35", want: "docker.io/library/busybox:1.35"},
		{in: "docker.io/library/busybox:1.35", want: "docker.io/library/busybox:1.35"},
		{in: "user/app", want: "docker.io/user/app:latest"},
		{in: "127.0.0.1:5000/tug/busybox:1.35", want: "127.0.0.1:5000/tug/busybox:1.35"},
		{in: "localhost:5000/app", want: "localhost:5000/app:latest"},
		{in: "ghcr.io/org/app:v1", want: "ghcr.io/org/app:v1"},
		{
			in:   "busybox@sha256:0000000000000000000000000000000000000000000000000000000000000000",
			want: "docker.io/library/busybox@sha256:0000000000000000000000000000000000000000000000000000000000000000",
		},
		{in: "Busybox:1.35", wantErr: true},
		{in: "", wantErr: true},
		{in: "busybox:bad tag", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := NormalizeRef(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("NormalizeRef(%q) = %q, want an error", tt.in, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("NormalizeRef(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestPullPolicyDefault(t *testing.T) {
	tests := []struct {
		image  string
		policy pod.PullPolicy
		want   pod.PullPolicy
	}{
		{"busybox:1.35", "", pod.PullIfNotPresent},
		{"busybox", "", pod.PullAlways},
		{"busybox:latest", "", pod.PullAlways},
		{"busybox@sha256:0000000000000000000000000000000000000000000000000000000000000000", "", pod.PullIfNotPresent},
		{"busybox", pod.PullNever, pod.PullNever},
		{"busybox:1.35", pod.PullAlways, pod.PullAlways},
	}
	for _, tt := range tests {
		c := &pod.Container{Image: tt.image, ImagePullPolicy: tt.policy}
		if got := PullPolicy(c); got != tt.want {
			t.Errorf("PullPolicy(%q, %q) = %q, want %q", tt.image, tt.policy, got, tt.want)
		}
	}
}

func TestOCIRefName(t *testing.T) {
	tests := map[string]string{
		"1.35":                           "",
		"latest":                         "",
		"busybox:1.35":                   "docker.io/library/busybox:1.35",
		"docker.io/library/busybox:1.35": "docker.io/library/busybox:1.35",
		"reg:5000/app":                   "reg:5000/app:latest",
		"Bad:Name/x":                     "",
	}
	for in, want := range tests {
		if got := ociRefName(in); got != want {
			t.Errorf("ociRefName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIsArchive(t *testing.T) {
	for name, want := range map[string]bool{
		"busybox.tar": true, "app.docker.tar": true, "app.tar.gz": true, "app.tgz": true, "app.oci": true,
		"app.tar.partial": false, "README": false, "app.zip": false,
	} {
		if got := isArchive(name); got != want {
			t.Errorf("isArchive(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestCheckPinnedDigest(t *testing.T) {
	const (
		good = "sha256:bb955ff702b84f0522145fb2f81117730d61d7b71655daac96c9ca676e28230d"
		bad  = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
	)
	tests := []struct {
		name, ref, target string
		wantErr           bool
	}{
		{name: "tag only", ref: "docker.io/library/busybox:1.35", target: bad},
		{name: "digest matches", ref: "docker.io/library/busybox@" + good, target: good},
		{name: "short name, digest matches", ref: "busybox@" + good, target: good},
		{name: "tag and matching digest", ref: "busybox:1.35@" + good, target: good},
		{name: "digest differs", ref: "docker.io/library/busybox@" + good, target: bad, wantErr: true},
		{name: "tag and other digest", ref: "busybox:1.35@" + bad, target: good, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkPinnedDigest(tt.ref, tt.target)
			if tt.wantErr != errors.Is(err, ErrImageDigestMismatch) {
				t.Errorf("checkPinnedDigest(%q, %q) = %v, want mismatch %v", tt.ref, tt.target, err, tt.wantErr)
			}
		})
	}
}
