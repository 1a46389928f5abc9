package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParsePrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tug.yaml")
	if err := os.WriteFile(file, []byte("pod-manifest-path: /from/file\nsync-frequency: 30s\nroot-dir: /file/root\nmanifest-url-header: [\"X-Fleet: a\", \"X-Device: b\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("pod-manifest-pth: /x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	oldPids := filepath.Join(dir, "oldpids.yaml")
	os.WriteFile(oldPids, []byte("pod-pids-limit: 500\n"), 0o600)
	bothPids := filepath.Join(dir, "bothpids.yaml")
	os.WriteFile(bothPids, []byte("pod-pids-limit: 500\npod-max-pids: 600\n"), 0o600)
	keys1 := filepath.Join(dir, "k1.yaml")
	keys2 := filepath.Join(dir, "k2.yaml")
	os.WriteFile(keys1, []byte("manifest-verify-key: /k/a.pem\nmanifest-url-ca: /ca.pem\nmanifest-url-ca-mode: replace\n"), 0o600)
	os.WriteFile(keys2, []byte("manifest-verify-key: [/k/a.pem, /k/dir]\n"), 0o600)
	devs := filepath.Join(dir, "devs.yaml")
	os.WriteFile(devs, []byte("device-resource: [\"a.io/x=/dev/x*\", \"a.io/y=cdi:a.io/y\"]\ncdi-spec-dirs: [/cdi]\nurl-allowed-devices: [a.io/x]\n"), 0o600)
	tests := []struct {
		name    string
		args    []string
		check   func(Config) bool
		wantErr string
	}{
		{"device defaults", nil, func(c Config) bool {
			return len(c.DeviceResource) == 0 && slices.Equal(c.CDISpecDirs, []string{"/etc/cdi", "/var/run/cdi"}) && len(c.URLAllowedDevices) == 0
		}, ""},
		{"devices from the file", []string{"--config", devs}, func(c Config) bool {
			return slices.Equal(c.DeviceResource, []string{"a.io/x=/dev/x*", "a.io/y=cdi:a.io/y"}) &&
				slices.Equal(c.CDISpecDirs, []string{"/cdi"}) && slices.Equal(c.URLAllowedDevices, []string{"a.io/x"})
		}, ""},
		{"device flags replace the file's", []string{"--config", devs, "--device-resource", "b.io/z=/dev/z,1", "--device-resource", "b.io/w=/dev/w",
			"--cdi-spec-dirs", "/a,/b", "--url-allowed-devices", "b.io/z,b.io/w"}, func(c Config) bool {
			return slices.Equal(c.DeviceResource, []string{"b.io/z=/dev/z,1", "b.io/w=/dev/w"}) &&
				slices.Equal(c.CDISpecDirs, []string{"/a", "/b"}) && slices.Equal(c.URLAllowedDevices, []string{"b.io/z", "b.io/w"})
		}, ""},
		{"defaults", nil, func(c Config) bool {
			d := Default()
			d.CgroupRoot = "tugpods"
			return reflect.DeepEqual(c, d)
		}, ""},
		{"cgroup root follows the namespace", []string{"--containerd-namespace", "bench-1"}, func(c Config) bool { return c.CgroupRoot == "tugpods-bench-1" }, ""},
		{"cgroup root given", []string{"--containerd-namespace", "bench-1", "--cgroup-root", "x/pods"}, func(c Config) bool { return c.CgroupRoot == "x/pods" }, ""},
		{"headers from the file", []string{"--config", file}, func(c Config) bool {
			return slices.Equal(c.ManifestURLHeader, []string{"X-Fleet: a", "X-Device: b"})
		}, ""},
		{"header flags replace the file's", []string{"--config", file, "--manifest-url-header", "A:1", "--manifest-url-header", "B:2"}, func(c Config) bool {
			return slices.Equal(c.ManifestURLHeader, []string{"A:1", "B:2"})
		}, ""},
		{"bad header", []string{"--manifest-url-header", "nocolon"}, nil, "manifest-url-header"},
		{"bad url", []string{"--manifest-url", "ftp://x/pods"}, nil, "manifest-url"},
		{"file over defaults", []string{"--config", file}, func(c Config) bool {
			return c.PodManifestPath == "/from/file" && c.SyncFrequency == 30*time.Second && c.RunDir == "/run/tug"
		}, ""},
		{"flag over file", []string{"--config", file, "--root-dir", "/flag/root"}, func(c Config) bool {
			return c.RootDir == "/flag/root" && c.PodManifestPath == "/from/file"
		}, ""},
		{"flag before --config still wins", []string{"--root-dir", "/flag/root", "--config", file}, func(c Config) bool {
			return c.RootDir == "/flag/root"
		}, ""},
		{"unknown key in file", []string{"--config", bad}, nil, "pod-manifest-pth"},
		{"one verify key in the file", []string{"--config", keys1}, func(c Config) bool {
			return slices.Equal(c.ManifestVerifyKey, []string{"/k/a.pem"}) && c.ManifestURLCAMode == "replace"
		}, ""},
		{"verify keys in the file", []string{"--config", keys2}, func(c Config) bool {
			return slices.Equal(c.ManifestVerifyKey, []string{"/k/a.pem", "/k/dir"})
		}, ""},
		{"verify key flags", []string{"--config", keys2, "--manifest-verify-key", "/x.pem", "--manifest-verify-key", "/y"}, func(c Config) bool {
			return slices.Equal(c.ManifestVerifyKey, []string{"/x.pem", "/y"})
		}, ""},
		{"bad ca mode", []string{"--manifest-url-ca-mode", "only"}, nil, "manifest-url-ca-mode"},
		{"replace without a CA", []string{"--manifest-url-ca-mode", "replace"}, nil, "needs manifest-url-ca"},
		{"client cert without key", []string{"--manifest-url-client-cert", "/c.pem"}, nil, "both or neither"},
		{"bad header not echoed", []string{"--manifest-url-header", "Bearer s3cret"}, func(Config) bool { return false }, "entry 1"},
		{"relative path", []string{"--root-dir", "rel"}, nil, "root-dir"},
		{"bad level", []string{"--log-level", "loud"}, nil, "log-level"},
		{"stray argument", []string{"extra"}, nil, "unexpected arguments"},
		{"policy defaults", nil, func(c Config) bool {
			return c.FilePolicy == "privileged" && c.URLPolicy == "baseline" && c.DefaultSeccomp == "runtime-default" && !c.AllowHostStateMounts
		}, ""},
		{"policy flags", []string{"--file-policy", "baseline", "--url-policy", "restricted", "--default-seccomp", "unconfined", "--allow-host-state-mounts", "--seccomp-profile-root", "/etc/tug/seccomp"}, func(c Config) bool {
			return c.FilePolicy == "baseline" && c.URLPolicy == "restricted" && c.DefaultSeccomp == "unconfined" && c.AllowHostStateMounts && c.SeccompProfileRoot == "/etc/tug/seccomp"
		}, ""},
		{"bad policy", []string{"--url-policy", "Baseline"}, nil, "url-policy"},
		{"OCI sources", []string{"--manifest-oci", "r.example/fleet/kiosk:prod", "--manifest-oci", "127.0.0.1:5000/b@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
			"--oci-check-frequency", "30s", "--oci-policy", "restricted"}, func(c Config) bool {
			return len(c.ManifestOCI) == 2 && c.OCICheckFrequency == 30*time.Second && c.OCIPolicy == "restricted"
		}, ""},
		{"OCI defaults", nil, func(c Config) bool { return c.OCICheckFrequency == time.Minute && c.OCIPolicy == "baseline" }, ""},
		{"OCI reference without a tag", []string{"--manifest-oci", "r.example:5000/fleet/kiosk"}, nil, "manifest-oci"},
		{"OCI reference with a scheme", []string{"--manifest-oci", "oci://r.example/fleet/kiosk:prod"}, nil, "manifest-oci"},
		{"OCI reference twice", []string{"--manifest-oci", "r.example/k:1", "--manifest-oci", "r.example/k:1"}, nil, "given twice"},
		{"bad OCI policy", []string{"--oci-policy", "open"}, nil, "oci-policy"},
		{"zero OCI period", []string{"--oci-check-frequency", "0s"}, nil, "oci-check-frequency"},
		{"update windows", []string{"--update-window", "Mon-Fri 02:00-04:00 tz=UTC jitter=10m", "--download-window", "cron:0 1 * * * for 3h", "--file-source-windows"}, func(c Config) bool {
			return c.UpdateWindow == "Mon-Fri 02:00-04:00 tz=UTC jitter=10m" && c.DownloadWindow == "cron:0 1 * * * for 3h" && c.FileSourceWindows
		}, ""},
		{"bad update window", []string{"--update-window", "Mon-Fri 2am-4am"}, nil, "update-window"},
		{"bad download window", []string{"--download-window", "cron:0 1 * * *"}, nil, "download-window"},
		{"bad default seccomp", []string{"--default-seccomp", "none"}, nil, "default-seccomp"},
		{"relative seccomp root", []string{"--seccomp-profile-root", "seccomp"}, nil, "seccomp-profile-root"},
		{"reserved", []string{"--reserved", "cpu=500m, memory=256Mi"}, func(c Config) bool {
			r := c.ReservedResources()
			return len(r) == 2 && r["cpu"].MilliValue() == 500 && r["memory"].MilliValue() == 256<<20*1000
		}, ""},
		{"nothing reserved", nil, func(c Config) bool { return len(c.ReservedResources()) == 0 }, ""},
		{"reserved not name=quantity", []string{"--reserved", "cpu"}, nil, "reserved: \"cpu\" is not name=quantity"},
		{"reserved unknown resource", []string{"--reserved", "gpu=1"}, nil, "unknown resource \"gpu\""},
		{"reserved bad quantity", []string{"--reserved", "memory=lots"}, nil, "reserved: memory"},
		{"reserved negative", []string{"--reserved", "cpu=-1"}, nil, "must not be negative"},
		{"reserved twice", []string{"--reserved", "cpu=1,cpu=2"}, nil, "cpu given twice"},
		{"pod cidr", []string{"--pod-cidr", "10.9.8.7/16", "--node-ip", "192.0.2.1"}, func(c Config) bool {
			return c.PodNetwork().String() == "10.9.0.0/16" && c.NodeAddr().String() == "192.0.2.1"
		}, ""},
		{"default pod cidr", nil, func(c Config) bool { return c.PodNetwork().String() == DefaultPodCIDR && !c.NodeAddr().IsValid() }, ""},
		{"pod cidr /30", []string{"--pod-cidr", "10.9.8.4/30"}, func(c Config) bool { return c.PodNetwork().Bits() == 30 }, ""},
		{"pod cidr too big", []string{"--pod-cidr", "10.0.0.0/15"}, nil, "between /16 and /30"},
		{"pod cidr too small", []string{"--pod-cidr", "10.0.0.0/31"}, nil, "between /16 and /30"},
		{"pod cidr ipv6", []string{"--pod-cidr", "fd00::/64"}, nil, "not an IPv4 CIDR"},
		{"bad node ip", []string{"--node-ip", "node1"}, nil, "node-ip"},
		{"pod pids limit by default", nil, func(c Config) bool { return c.PodMaxPids == 4096 && DefaultPodMaxPids == 4096 }, ""},
		{"pod max pids flag", []string{"--pod-max-pids", "300"}, func(c Config) bool { return c.PodMaxPids == 300 }, ""},
		{"pod max pids unlimited", []string{"--pod-max-pids", "-1"}, func(c Config) bool { return c.PodMaxPids == -1 }, ""},
		{"pod pids limit, the older flag", []string{"--pod-pids-limit", "300"}, func(c Config) bool { return c.PodMaxPids == 300 }, ""},
		{"pod pids limit, the older key", []string{"--config", oldPids}, func(c Config) bool { return c.PodMaxPids == 500 && c.PodPidsLimit == nil }, ""},
		{"flag over the older key", []string{"--config", oldPids, "--pod-max-pids", "700"}, func(c Config) bool { return c.PodMaxPids == 700 }, ""},
		{"both pids keys", []string{"--config", bothPids}, nil, "older name of pod-max-pids"},
		{"pod max pids zero", []string{"--pod-max-pids", "0"}, nil, "pod-max-pids"},
		{"image pulls bounded by progress by default", nil, func(c Config) bool {
			return c.ImagePullProgressDeadline == time.Minute && c.ImagePullTimeout == 0
		}, ""},
		{"image pull flags", []string{"--image-pull-progress-deadline", "30s", "--image-pull-timeout", "20m"}, func(c Config) bool {
			return c.ImagePullProgressDeadline == 30*time.Second && c.ImagePullTimeout == 20*time.Minute
		}, ""},
		{"no progress deadline", []string{"--image-pull-progress-deadline", "0"}, nil, "image-pull-progress-deadline"},
		{"negative pull timeout", []string{"--image-pull-timeout", "-1s"}, nil, "image-pull-timeout"},
		{"registry hosts and no cap by default", nil, func(c Config) bool {
			return c.RegistryConfigDir == "/etc/containerd/certs.d" && c.ImagePullBandwidthBytes() == 0
		}, ""},
		{"registry flags", []string{"--registry-config-dir", "/etc/tug/certs.d", "--image-pull-bandwidth", "2Mi"}, func(c Config) bool {
			return c.RegistryConfigDir == "/etc/tug/certs.d" && c.ImagePullBandwidthBytes() == 2<<20
		}, ""},
		{"decimal bandwidth", []string{"--image-pull-bandwidth", "1.5M"}, func(c Config) bool { return c.ImagePullBandwidthBytes() == 1500000 }, ""},
		{"relative registry config dir", []string{"--registry-config-dir", "certs.d"}, nil, "registry-config-dir"},
		{"bandwidth not a quantity", []string{"--image-pull-bandwidth", "fast"}, nil, "image-pull-bandwidth"},
		{"bandwidth negative", []string{"--image-pull-bandwidth", "-1Mi"}, nil, "image-pull-bandwidth"},
		{"bandwidth too low", []string{"--image-pull-bandwidth", "2"}, nil, "at least 1024 bytes per second"},
		{"status report off by default", nil, func(c Config) bool { return c.StatusURL == "" && c.StatusFrequency == 5*time.Minute }, ""},
		{"status flags", []string{"--status-url", "https://fleet.example/status", "--status-url-ca", "/ca.pem",
			"--status-url-client-cert", "/c.pem", "--status-url-client-key", "/k.pem", "--status-url-header-file", "/h",
			"--status-frequency", "30s", "--status-signing-key", "/sign.pem"}, func(c Config) bool {
			return c.StatusURL == "https://fleet.example/status" && c.StatusURLCA == "/ca.pem" && c.StatusURLClientCert == "/c.pem" &&
				c.StatusURLClientKey == "/k.pem" && c.StatusURLHeaderFile == "/h" && c.StatusFrequency == 30*time.Second && c.StatusSigningKey == "/sign.pem"
		}, ""},
		{"status url over http to loopback", []string{"--status-url", "http://127.0.0.1:8080/status"}, func(c Config) bool { return true }, ""},
		{"status url over http to localhost", []string{"--status-url", "http://localhost/status"}, func(c Config) bool { return true }, ""},
		{"status url over http", []string{"--status-url", "http://fleet.example/status?key=s3cret"}, nil, "http only to a loopback host"},
		{"status url not a URL", []string{"--status-url", "fleet.example"}, nil, "status-url"},
		{"status client cert without key", []string{"--status-url-client-cert", "/c.pem"}, nil, "status-url-client-cert, status-url-client-key"},
		{"status frequency zero", []string{"--status-frequency", "0"}, nil, "status-frequency"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("run", tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("err = %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(c) {
				t.Errorf("config = %+v", c)
			}
		})
	}
}

func TestRedacted(t *testing.T) {
	c := Default()
	c.ManifestURL = "https://fleet:s3cret@fleet.example/d/pods.yaml?token=s3cret&x"
	c.ManifestURLHeader = []string{"Authorization: Bearer s3cret", "X-Device:s3cret"}
	c.StatusURL = "https://fleet.example/status?key=s3cret"
	r := c.Redacted()
	text := fmt.Sprintf("%+v", r)
	if strings.Contains(text, "s3cret") {
		t.Fatalf("redacted config shows the secret: %s", text)
	}
	if r.ManifestURL != "https://xxxxx@fleet.example/d/pods.yaml?token=xxxxx&xxxxx" ||
		!slices.Equal(r.ManifestURLHeader, []string{"Authorization: xxxxx", "X-Device: xxxxx"}) {
		t.Fatalf("redacted %q %q", r.ManifestURL, r.ManifestURLHeader)
	}
	if !strings.Contains(c.ManifestURL, "s3cret") || !strings.Contains(c.ManifestURLHeader[0], "s3cret") {
		t.Fatal("Redacted changed the original")
	}
}
