package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestLoadErrors checks that each mistake in a config file is reported at
// its line, with the key and what it wants, and never with a Go type.
func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		file string
		want []string // the error's lines, the file's path written as F
	}{
		{"unknown key", "max-pods: 10\neviction-hardd: none\n",
			[]string{`F:2: unknown key "eviction-hardd" (did you mean "eviction-hard"?)`}},
		{"camelCase key", "evictionHard: none\n",
			[]string{`F:1: unknown key "evictionHard" (did you mean "eviction-hard"?)`}},
		{"unknown key, nothing close", "colour: blue\n",
			[]string{`F:1: unknown key "colour"`}},
		{"wrong type", "# a comment\n\nlog-level: info\nroot-dir: /var/lib/tug\nfile-policy: baseline\n\nmax-pods: ten\n",
			[]string{`F:7: max-pods: want an integer, got "ten"`}},
		{"float for an integer", "healthz-port: 10248.5\n",
			[]string{`F:1: healthz-port: want an integer, got "10248.5"`}},
		{"list for an integer", "max-pods: [1, 2]\n",
			[]string{`F:1: max-pods: want an integer, got a list`}},
		{"wrong boolean", "allow-privileged: maybe\n",
			[]string{`F:1: allow-privileged: want true or false, got "maybe"`}},
		{"mapping for a string", "root-dir:\n  path: /x\n",
			[]string{`F:2: root-dir: want a string, got a mapping`}},
		{"bad duration", "sync-frequency: 30\nrollout-timeout: five minutes\n", []string{
			`F:1: sync-frequency: want a duration such as 30s, 5m or 1h30m, got "30"`,
			`F:2: rollout-timeout: want a duration such as 30s, 5m or 1h30m, got "five minutes"`,
		}},
		{"bad quantity", "reserved: cpu=500m,memory=lots\n",
			[]string{`F:1: reserved: memory: pod: invalid quantity "lots"`}},
		{"bad bandwidth", "image-pull-bandwidth: 2 MB/s\n",
			[]string{`F:1: image-pull-bandwidth: pod: invalid quantity "2 MB/s"`}},
		{"bad CIDR", "pod-cidr: 10.0.0.0/8\n",
			[]string{`F:1: pod-cidr: "10.0.0.0/8": the prefix length must be between /16 and /30`}},
		{"tab in indentation", "manifest-url-header:\n\t- \"X-A: b\"\nmax-pods: 3\n",
			[]string{`F:2: tab in indentation: YAML indents with spaces`}},
		{"syntax error", "max-pods: 3\nroot-dir: /x: y\n",
			[]string{`F:2: mapping values are not allowed in this context`}},
		{"not a mapping", "- max-pods: 3\n",
			[]string{`F:1: want "key: value" lines, got a list`}},
		{"a lone value", "s3cret-token\n",
			[]string{`F:1: want "key: value" lines, got a single value`}},
		{"syntax error in a second document", "max-pods: 3\n---\nroot-dir: /x: y\n",
			[]string{`F:3: mapping values are not allowed in this context`}},
		{"key twice", "max-pods: 3\nlog-level: info\nmax-pods: 4\n",
			[]string{`F:3: max-pods given twice (first on line 1)`}},
		{"both pids keys", "pod-pids-limit: 500\npod-max-pids: 600\n",
			[]string{`F:1: pod-pids-limit is the older name of pod-max-pids (line 2): give one`}},
		{"two documents", "max-pods: 3\n---\nmax-pods: 4\n",
			[]string{`F:2: a second YAML document (---): the config is one mapping of keys`}},
		{"every problem at once", "max-pods: ten\ncolour: blue\nsync-frequency: soon\n", []string{
			`F:1: max-pods: want an integer, got "ten"`,
			`F:2: unknown key "colour"`,
			`F:3: sync-frequency: want a duration such as 30s, 5m or 1h30m, got "soon"`,
		}},
		{"header values not echoed", "manifest-url-header: \"Authorization: Bearer s3cret\"\n",
			[]string{`F:1: manifest-url-header: want a list of strings, got a single value`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(tt.file), 0o600); err != nil {
				t.Fatal(err)
			}
			c := Default()
			err := c.Load(path)
			if err == nil {
				t.Fatalf("Load accepted %q", tt.file)
			}
			got := strings.Split(strings.ReplaceAll(err.Error(), path, "F"), "\n")
			if len(got) != len(tt.want) {
				t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("error %d:\n got %s\nwant %s", i+1, got[i], tt.want[i])
				}
			}
			for _, bad := range []string{"!!", "unmarshal", "int64", "time.Duration", "yaml:", "s3cret"} {
				if strings.Contains(strings.Join(got, "\n"), bad) {
					t.Errorf("the error shows %q: %v", bad, err)
				}
			}
		})
	}
}

// TestLoadValues checks the forms a config file may give each kind of
// value in.
func TestLoadValues(t *testing.T) {
	file := `# comment
max-pods: 0x10
allow-privileged: true
rollout-timeout: 0
sync-frequency: 1h30m
manifest-verify-key: /k/a.pem
manifest-url-header: ["X-A: 1", "X-B: 2"]
hostname-override: 0123
eviction-hard:
pod-pids-limit: -1
image-pull-bandwidth: 1048576
`
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	c := Default()
	c.EvictionHard = "memory.available<1Mi"
	if err := c.Load(path); err != nil {
		t.Fatal(err)
	}
	switch {
	case c.MaxPods != 16, !c.AllowPrivileged, c.RolloutTimeout != 0, c.SyncFrequency != 90*time.Minute,
		!slices.Equal(c.ManifestVerifyKey, []string{"/k/a.pem"}),
		!slices.Equal(c.ManifestURLHeader, []string{"X-A: 1", "X-B: 2"}),
		c.HostnameOverride != "0123", c.EvictionHard != "", c.PodMaxPids != -1, c.PodPidsLimit != nil,
		c.ImagePullBandwidthBytes() != 1<<20:
		t.Errorf("loaded %+v", c)
	}
	empty := filepath.Join(t.TempDir(), "empty.yaml")
	os.WriteFile(empty, []byte("# nothing set\n"), 0o600)
	c = Default()
	if err := c.Load(empty); err != nil || c.MaxPods != Default().MaxPods {
		t.Errorf("comments only: %v, %+v", err, c)
	}
}

func TestRootDirOf(t *testing.T) {
	file := filepath.Join(t.TempDir(), "config.yaml")
	os.WriteFile(file, []byte("root-dir: /data/tug\nkey-of-a-newer-tug: 1\n"), 0o600)
	tests := []struct {
		args []string
		want string
	}{
		{nil, "/var/lib/tug"},
		{[]string{"--root-dir", "/x"}, "/x"},
		{[]string{"--root-dir=/y", "--config", file}, "/y"},
		{[]string{"--config", file}, "/data/tug"},
		{[]string{"--config=" + file, "--v", "2"}, "/data/tug"},
		{[]string{"--config", "/nonexistent"}, "/var/lib/tug"},
	}
	for _, tt := range tests {
		if got := RootDirOf(tt.args); got != tt.want {
			t.Errorf("RootDirOf(%q) = %q, want %q", tt.args, got, tt.want)
		}
	}
}
