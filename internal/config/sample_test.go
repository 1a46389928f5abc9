package config

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

// update makes TestSampleConfig write the sample config file instead of
// comparing it: go test ./internal/config -run TestSampleConfig -update
var update = flag.Bool("update", false, "write "+samplePath+" from Default() and BindFlags' usage strings")

// samplePath is the sample config file the README installs as
// /etc/tug/config.yaml, relative to this package.
const samplePath = "../../systemd/config.yaml"

// sampleSections are the headings written before a key, in the order of
// Config's fields.
var sampleSections = map[string]string{
	"pod-manifest-path":       "Manifest sources: the directory and the URL",
	"root-dir":                "Directories, containerd, container logs",
	"pleg-relist-period":      "Restarts, rollout, health endpoint",
	"bridge-name":             "Pod network",
	"cgroup-root":             "Cgroups, QoS and the node",
	"file-policy":             "Admission policy and hardening",
	"image-gc-high-threshold": "Reclaim: image GC and eviction",
	"shim-grouping":           "Footprint",
}

const sampleHeader = `# /etc/tug/config.yaml: tug's config file (tug run --config FILE).
# Its keys mirror the flags of tug run, and a flag given on the command line
# wins over this file. Every key is optional: each is shown below, commented
# out, at its default, with the flag's help text. Uncomment a line to change
# it; a key left commented follows tug's default. Keep this file 0600 when
# it holds the manifest URL's credentials.
#
# Generated from tug's defaults (internal/config) by
#   go test ./internal/config -run TestSampleConfig -update
`

// sampleConfig renders the sample config file: every key of Config, its
// default from Default() and its description from the usage string that
// BindFlags registers for the flag of the same name. Pointer fields are
// older names still read from files (pod-pids-limit) and are left out.
func sampleConfig() ([]byte, error) {
	fs := pflag.NewFlagSet("sample", pflag.ContinueOnError)
	def := Default()
	def.BindFlags(fs)
	v := reflect.ValueOf(Default())
	var b bytes.Buffer
	b.WriteString(sampleHeader)
	used := map[string]bool{}
	for i := range v.NumField() {
		f := v.Type().Field(i)
		key := yamlKey(f)
		if key == "" || f.Type.Kind() == reflect.Pointer {
			continue
		}
		fl := fs.Lookup(key)
		if fl == nil {
			return nil, fmt.Errorf("config key %s has no flag of the same name to take its description from", key)
		}
		if h, ok := sampleSections[key]; ok {
			fmt.Fprintf(&b, "\n# ---- %s\n", h)
			used[key] = true
		}
		value, err := sampleValue(v.Field(i))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		b.WriteString("\n")
		for _, line := range wrap(fl.Usage, 76) {
			b.WriteString("# " + line + "\n")
		}
		fmt.Fprintf(&b, "#%s: %s\n", key, value)
	}
	for key := range sampleSections {
		if !used[key] {
			return nil, fmt.Errorf("sampleSections names %s, which is not a config key", key)
		}
	}
	return b.Bytes(), nil
}

// sampleValue writes a default as a YAML value: durations as a person
// writes them (1m, not 1m0s), empty lists as [].
func sampleValue(v reflect.Value) (string, error) {
	switch {
	case v.Type() == durationType:
		s := time.Duration(v.Int()).String()
		if m, ok := strings.CutSuffix(s, "m0s"); ok {
			s = m + "m"
		}
		if h, ok := strings.CutSuffix(s, "h0m"); ok {
			s = h + "h"
		}
		return s, nil
	case v.Kind() == reflect.Slice:
		items := make([]string, v.Len())
		for i := range items {
			items[i] = strconv.Quote(v.Index(i).String())
		}
		return "[" + strings.Join(items, ", ") + "]", nil
	case v.Kind() == reflect.String, v.Kind() == reflect.Bool, v.Kind() == reflect.Int, v.Kind() == reflect.Int64:
		out, err := yaml.Marshal(v.Interface())
		return strings.TrimSuffix(string(out), "\n"), err
	}
	return "", fmt.Errorf("no sample form for %s", v.Type())
}

// wrap splits text into lines of at most width characters, at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(lines, line)
}

// TestSampleConfig keeps systemd/config.yaml equal to what tug's defaults
// and flags give, so that the sample cannot drift from the code: a key
// added to Config, a changed default or help text fails here until the
// file is written again with -update.
func TestSampleConfig(t *testing.T) {
	want, err := sampleConfig()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(samplePath, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(samplePath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		i := 0
		for i < len(gl) && i < len(wl) && gl[i] == wl[i] {
			i++
		}
		line := func(l []string) string {
			if i < len(l) {
				return l[i]
			}
			return "(end of file)"
		}
		t.Errorf("%s differs from tug's defaults at line %d:\n have %s\n want %s\nwrite it again: go test ./internal/config -run TestSampleConfig -update",
			filepath.Base(samplePath), i+1, line(gl), line(wl))
	}
}

// TestSampleConfigLoads uncomments every key of the sample and loads it:
// the file must be accepted and give exactly Default(), and it must show
// every key of the config file.
func TestSampleConfigLoads(t *testing.T) {
	text, err := sampleConfig()
	if err != nil {
		t.Fatal(err)
	}
	keyLine := regexp.MustCompile(`(?m)^#([a-z0-9-]+): `)
	shown := map[string]bool{}
	for _, m := range keyLine.FindAllSubmatch(text, -1) {
		shown[string(m[1])] = true
	}
	for key, idx := range fileKeys() {
		if !shown[key] && reflect.TypeFor[Config]().FieldByIndex(idx).Type.Kind() != reflect.Pointer {
			t.Errorf("the sample does not show %s", key)
		}
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, keyLine.ReplaceAll(text, []byte("$1: ")), 0o600); err != nil {
		t.Fatal(err)
	}
	c := Default()
	c.MaxPods, c.ContainerdNamespace = 1, "other" // the file must set them back
	if err := c.Load(path); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, Default()) {
		t.Errorf("the sample, uncommented, gives\n%+v\nwant the defaults\n%+v", c, Default())
	}
}
