package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"tug/internal/pod"
	"tug/internal/podvalidate"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// testOptions are the ParseOptions of the golden tests.
func testOptions(file string) ParseOptions {
	return ParseOptions{
		Origin:   pod.Origin{Source: "file:testdata", File: file},
		Hostname: "node1",
	}
}

// manifestFiles returns the YAML and JSON files of a testdata directory.
func manifestFiles(t testing.TB, dir string) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"*.yaml", "*.json"} {
		m, err := filepath.Glob(filepath.Join("testdata", dir, pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatalf("no files in testdata/%s", dir)
	}
	return files
}

// parsedPod is the golden form of a parsed pod: the pod as JSON, plus what
// JSON leaves out.
type parsedPod struct {
	Pod             *pod.Pod          `json:"pod"`
	ManifestName    string            `json:"manifestName"`
	Hash            string            `json:"hash"`
	ContainerHashes map[string]string `json:"containerHashes"`
}

// golden compares got with the file at path, or rewrites it with -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run go test -update and review the diff):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestParseGood(t *testing.T) {
	for _, file := range manifestFiles(t, "good") {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			pods, err := Parse(data, testOptions(filepath.Base(file)))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			out := make([]parsedPod, 0, len(pods))
			for _, p := range pods {
				if err := podvalidate.Validate(p); err != nil {
					t.Errorf("Validate(%s) after Parse: %v", p.FullName(), err)
				}
				pp := parsedPod{Pod: p, ManifestName: p.Metadata.ManifestName, Hash: p.Hash(), ContainerHashes: map[string]string{}}
				for _, cs := range [][]pod.Container{p.Spec.InitContainers, p.Spec.Containers} {
					for i := range cs {
						pp.ContainerHashes[cs[i].Name] = pod.ContainerHash(p, &cs[i])
					}
				}
				out = append(out, pp)
			}
			got, err := json.MarshalIndent(out, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, file+".golden", append(got, '\n'))
		})
	}
}

func TestParseBad(t *testing.T) {
	for _, file := range manifestFiles(t, "bad") {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			pods, err := Parse(data, testOptions(filepath.Base(file)))
			if err == nil {
				t.Fatalf("Parse succeeded with %d pods, want errors", len(pods))
			}
			if pods != nil {
				t.Errorf("Parse returned %d pods with an error, want none", len(pods))
			}
			for _, e := range unjoin(err) {
				var fe *pod.FieldError
				if !errors.As(e, &fe) {
					t.Errorf("error %q is a %T, want *FieldError", e, e)
				}
			}
			golden(t, strings.TrimSuffix(file, filepath.Ext(file))+".err", []byte(err.Error()+"\n"))
		})
	}
}

// unjoin returns the errors joined in err.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// parseOne parses a manifest given inline and fails unless it yields
// exactly one pod.
func parseOne(t *testing.T, manifest string, opts ParseOptions) *pod.Pod {
	t.Helper()
	pods, err := Parse([]byte(manifest), opts)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(pods) != 1 {
		t.Fatalf("Parse returned %d pods, want 1", len(pods))
	}
	return pods[0]
}

const minimalPod = `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers: [{name: app, image: busybox}]
`

func TestParseNaming(t *testing.T) {
	tests := []struct {
		name     string
		hostname string
		wantName string
	}{
		{"with hostname", "node1", "web-node1"},
		{"hostname lowercased", " Node1.Example ", "web-node1.example"},
		{"without hostname", "", "web"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := ParseOptions{Origin: pod.Origin{Source: "file:/etc/tug/manifests", File: "web.yaml"}, Hostname: tt.hostname}
			p := parseOne(t, minimalPod, opts)
			if p.Metadata.Name != tt.wantName {
				t.Errorf("Name = %q, want %q", p.Metadata.Name, tt.wantName)
			}
			if p.Metadata.ManifestName != "web" {
				t.Errorf("ManifestName = %q, want web", p.Metadata.ManifestName)
			}
			if want := pod.UID(opts.Origin.Source, "default", tt.wantName); p.Metadata.UID != want {
				t.Errorf("UID = %q, want %q", p.Metadata.UID, want)
			}
		})
	}
}

func TestUID(t *testing.T) {
	base := pod.UID("file:/a", "default", "web-node1")
	tests := []struct {
		name      string
		uid       string
		wantEqual bool
	}{
		{"same input", pod.UID("file:/a", "default", "web-node1"), true},
		{"other source", pod.UID("http://x/pods", "default", "web-node1"), false},
		{"other namespace", pod.UID("file:/a", "edge", "web-node1"), false},
		{"other name", pod.UID("file:/a", "default", "web-node2"), false},
		{"no ambiguity across fields", pod.UID("file:/a", "defaultweb-node1", ""), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if (tt.uid == base) != tt.wantEqual {
				t.Errorf("UID = %q, base %q, want equal = %v", tt.uid, base, tt.wantEqual)
			}
		})
	}
	if len(base) != 36 || strings.Count(base, "-") != 4 {
		t.Errorf("UID %q is not UUID-shaped", base)
	}
}

// TestParseUIDIgnoresContent: an edit is an update of the same pod.
func TestParseUIDIgnoresContent(t *testing.T) {
	opts := testOptions("web.yaml")
	a := parseOne(t, minimalPod, opts)
	b := parseOne(t, strings.Replace(minimalPod, "busybox", "busybox:1.36", 1), opts)
	if a.Metadata.UID != b.Metadata.UID {
		t.Errorf("UID changed with the content: %q -> %q", a.Metadata.UID, b.Metadata.UID)
	}
	if a.Hash() == b.Hash() {
		t.Errorf("Hash did not change with the content")
	}
}

func TestParseDefaults(t *testing.T) {
	p := parseOne(t, `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  hostNetwork: true
  initContainers:
  - name: init
    image: busybox@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
    ports: [{containerPort: 1}]
  containers:
  - name: app
    image: localhost:5000/app
    ports: [{containerPort: 80}, {containerPort: 53, protocol: UDP, hostPort: 53}]
    securityContext:
      capabilities: {add: [CAP_NET_ADMIN, SYS_TIME]}
    resources:
      requests: {cpu: 100m}
      limits: {cpu: 200m, memory: 64Mi}
`, testOptions("web.yaml"))
	want := &pod.Pod{
		APIVersion: "v1",
		Kind:       "Pod",
		Metadata:   pod.ObjectMeta{Name: "web-node1", Namespace: "default", ManifestName: "web", UID: pod.UID("file:testdata", "default", "web-node1"), Source: "file:testdata"},
		Spec: pod.PodSpec{
			RestartPolicy:                 pod.RestartAlways,
			TerminationGracePeriodSeconds: ptr(int64(30)),
			HostNetwork:                   true,
			DNSPolicy:                     pod.DNSClusterFirst,
			InitContainers: []pod.Container{{
				Name: "init", Image: "busybox@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", ImagePullPolicy: pod.PullIfNotPresent,
				Ports: []pod.ContainerPort{{ContainerPort: 1, Protocol: pod.ProtocolTCP}},
			}},
			Containers: []pod.Container{{
				Name: "app", Image: "localhost:5000/app", ImagePullPolicy: pod.PullAlways,
				Ports: []pod.ContainerPort{
					{ContainerPort: 80, HostPort: 80, Protocol: pod.ProtocolTCP},
					{ContainerPort: 53, HostPort: 53, Protocol: pod.ProtocolUDP},
				},
				SecurityContext: &pod.SecurityContext{Capabilities: &pod.Capabilities{Add: []string{"NET_ADMIN", "SYS_TIME"}}},
				Resources: pod.Resources{
					Requests: pod.ResourceList{pod.ResourceCPU: pod.MustParseQuantity("100m"), pod.ResourceMemory: pod.MustParseQuantity("64Mi")},
					Limits:   pod.ResourceList{pod.ResourceCPU: pod.MustParseQuantity("200m"), pod.ResourceMemory: pod.MustParseQuantity("64Mi")},
				},
			}},
		},
	}
	if !reflect.DeepEqual(p, want) {
		gotJSON, _ := json.MarshalIndent(p, "", "  ")
		wantJSON, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("defaults:\n got %s\nwant %s", gotJSON, wantJSON)
	}
}

func ptr[T any](v T) *T { return &v }

func TestDefaultPullPolicy(t *testing.T) {
	tests := []struct {
		image string
		want  pod.PullPolicy
	}{
		{"busybox", pod.PullAlways},
		{"busybox:latest", pod.PullAlways},
		{"busybox:1.36", pod.PullIfNotPresent},
		{"localhost:5000/busybox", pod.PullAlways},
		{"localhost:5000/busybox:latest", pod.PullAlways},
		{"localhost:5000/busybox:1", pod.PullIfNotPresent},
		{"busybox@sha256:0123", pod.PullIfNotPresent},
		{"busybox:latest@sha256:0123", pod.PullIfNotPresent},
		{"registry.example.com/team/app:v2", pod.PullIfNotPresent},
		{"busybox:", pod.PullAlways},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			if got := pod.DefaultPullPolicy(tt.image); got != tt.want {
				t.Errorf("DefaultPullPolicy(%q) = %q, want %q", tt.image, got, tt.want)
			}
		})
	}
}

// TestParseErrors covers single messages on small inline manifests; the
// golden files under testdata/bad cover whole files.
func TestParseErrors(t *testing.T) {
	longName := strings.Repeat(strings.Repeat("a", 62)+".", 3) + strings.Repeat("a", 62) // 251 characters
	const head = "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n  - name: app\n    image: busybox\n"
	tests := []struct {
		name     string
		manifest string
		want     string // the whole error text
	}{
		{"string for int", head + "    ports: [{containerPort: \"80\"}]\n",
			`t.yaml:8:29: spec.containers[0].ports[0].containerPort: expected an integer, got a string`},
		{"int32 overflow", head + "    ports: [{containerPort: 2147483648}]\n",
			`t.yaml:8:29: spec.containers[0].ports[0].containerPort: 2147483648 is out of range for a 32-bit integer`},
		{"int64 overflow", head + "    securityContext: {runAsUser: 9223372036854775808}\n",
			`t.yaml:8:34: spec.containers[0].securityContext.runAsUser: 9223372036854775808 is out of range for a 64-bit integer`},
		{"integral float for int", head + "    ports: [{containerPort: 8e1}, {containerPort: 08}]\n", ""},
		{"float for int", head + "    ports: [{containerPort: .inf}]\n",
			`t.yaml:8:29: spec.containers[0].ports[0].containerPort: expected an integer, got .inf`},
		{"number for string", head + "    env: [{name: A, value: 1.5}]\n",
			`t.yaml:8:28: spec.containers[0].env[0].value: expected a string, got a number (quote it: "1.5")`},
		{"yaml 1.1 bool for string", head + "    env: [{name: A, value: on}]\n",
			`t.yaml:8:28: spec.containers[0].env[0].value: expected a string, got a boolean (Kubernetes reads on as a boolean; quote it: "on")`},
		{"duplicate key", head + "  restartPolicy: Never\n  containers: []\n",
			`t.yaml:9:3: spec: duplicate key "containers" (first at line 5)`},
		{"mapping for string", head + "    workingDir: {a: b}\n",
			`t.yaml:8:17: spec.containers[0].workingDir: expected a string, got a mapping`},
		{"list for mapping", head + "    securityContext: [a]\n",
			`t.yaml:8:22: spec.containers[0].securityContext: expected a mapping, got a list`},
		{"null is unset", head + "    workingDir: null\n    securityContext: ~\n  volumes:\n", ""},
		{"quantity number", head + "  volumes: [{name: v, emptyDir: {sizeLimit: 1e3}}]\n", ""},
		{"quantity garbage", head + "  volumes: [{name: v, emptyDir: {sizeLimit: 1.2.3}}]\n",
			`t.yaml:8:45: spec.volumes[0].emptyDir.sizeLimit: invalid quantity "1.2.3": unknown suffix ".3" (use one of n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei, or an exponent like e3)`},
		{"quantity bool", head + "  volumes: [{name: v, emptyDir: {sizeLimit: true}}]\n",
			`t.yaml:8:45: spec.volumes[0].emptyDir.sizeLimit: expected a quantity such as "128Mi", got a boolean`},
		{"custom tag", head + "    workingDir: !secret x\n",
			`t.yaml:8:17: spec.containers[0].workingDir: expected a string, got a value tagged !secret`},
		{"tagged string", head + "    env: [{name: A, value: !!str 8080}]\n", ""},
		{"non-string key", head + "    ? [a]\n    : b\n",
			`t.yaml:8:7: spec.containers[0]: expected a string key, got a list`},
		{"status empty", head + "status: {}\n", ""},
		{"status null", head + "status:\n", ""},
		{"status set", head + "status: {phase: Running}\n",
			`t.yaml:8:1: status: status is written by tug; remove it`},
		{"top-level scalar", "hello", `t.yaml:1:1: expected a Pod manifest (a mapping), got a string`},
		{"unknown anchor", "a: *b\n", `t.yaml: invalid YAML: unknown anchor 'b' referenced`},
		{"unknown top-level field", head + "sepc: {}\n", `t.yaml:8:1: sepc: unknown field "sepc" (did you mean "spec"?)`},
		{"name too long with hostname", strings.Replace(head, "name: web", "name: "+longName, 1),
			`t.yaml:3:18: metadata.name: the name with the hostname appended ("` + pod.Truncate(longName+"-node1") + `") is 257 characters, more than 253`},
		{"OSC key escaped in its path", head + "    \"\\e]0;pwned\\ax\": 1\n",
			`t.yaml:8:5: spec.containers[0].\x1b]0;pwned\ax: unknown field "\x1b]0;pwned\ax"`},
		{"CSI map key escaped in its path", head + "    resources: {limits: {\"\\e[31mred\": lots}}\n",
			`t.yaml:8:16: spec.containers[0].resources.requests: unsupported resource "\x1b[31mred": must be "cpu", "memory" or "ephemeral-storage"` + "\n" +
				`t.yaml:8:39: spec.containers[0].resources.limits[\x1b[31mred]: invalid quantity "lots": must start with a number, e.g. "500m" or "128Mi"`},
		{"C1 key in JSON escaped in its path", `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "labels": {"\u009b2J": [1]}}, "spec": {"containers": [{"name": "app", "image": "busybox"}]}}`,
			`t.yaml:1:88: metadata.labels[\u009b2J]: expected a string, got a list`},
		{"tabs in JSON", "{\n\t\"apiVersion\": \"v1\",\n\t\"kind\": \"Pod\",\n\t\"metadata\": {\"name\": \"web\"},\n\t\"spec\": {\"containers\": [{\"name\": \"app\"}]}\n}\n",
			`t.yaml:5:26: spec.containers[0].image: required`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.manifest), testOptions("t.yaml"))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("Parse error:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestParseHostNetworkYes(t *testing.T) {
	p := parseOne(t, minimalPod+"  hostNetwork: yes\n", testOptions("t.yaml"))
	if !p.Spec.HostNetwork {
		t.Errorf("hostNetwork: yes was read as false")
	}
}

func TestValidate(t *testing.T) {
	valid := func() *pod.Pod {
		p := &pod.Pod{
			Metadata: pod.ObjectMeta{Name: "web"},
			Spec:     pod.PodSpec{Containers: []pod.Container{{Name: "app", Image: "busybox"}}},
		}
		pod.SetDefaults(p)
		return p
	}
	tests := []struct {
		name   string
		modify func(*pod.Pod)
		want   string
	}{
		{"valid", func(*pod.Pod) {}, ""},
		{"no name", func(p *pod.Pod) { p.Metadata.Name = "" }, "metadata.name: required"},
		{"no containers", func(p *pod.Pod) { p.Spec.Containers = nil }, "spec.containers: at least one container is required"},
		{"zero port", func(p *pod.Pod) { p.Spec.Containers[0].Ports = []pod.ContainerPort{{Protocol: pod.ProtocolTCP}} },
			"spec.containers[0].ports[0].containerPort: required"},
		{"not defaulted", func(p *pod.Pod) { p.Spec.RestartPolicy = "" }, "spec.restartPolicy: required"},
		{"two errors", func(p *pod.Pod) { p.Spec.Containers[0].Image = ""; p.Metadata.Namespace = "A" },
			"metadata.namespace: invalid namespace \"A\": " + pod.DNS1123LabelMsg + "\nspec.containers[0].image: required"},
		{"negative size limit", func(p *pod.Pod) {
			p.Spec.Volumes = []pod.Volume{{Name: "v", EmptyDir: &pod.EmptyDirVolumeSource{SizeLimit: ptr(pod.MustParseQuantity("-1"))}}}
		}, "spec.volumes[0].emptyDir.sizeLimit: must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := valid()
			tt.modify(p)
			got := ""
			if err := podvalidate.Validate(p); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("Validate:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestFieldErrorString(t *testing.T) {
	tests := []struct {
		name string
		err  pod.FieldError
		want string
	}{
		{"full", pod.FieldError{File: "web.yaml", Line: 12, Col: 7, Path: "spec.containers[0].image", Msg: "required"}, "web.yaml:12:7: spec.containers[0].image: required"},
		{"no path", pod.FieldError{File: "web.yaml", Line: 1, Col: 1, Msg: "bad"}, "web.yaml:1:1: bad"},
		{"no column", pod.FieldError{File: "web.yaml", Line: 3, Msg: "invalid YAML: x"}, "web.yaml:3: invalid YAML: x"},
		{"no position", pod.FieldError{File: "web.yaml", Msg: "bad"}, "web.yaml: bad"},
		{"no file", pod.FieldError{Path: "metadata.name", Msg: "required"}, "metadata.name: required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestDecoderCoversTypes checks that every field of every manifest type has
// a kind the decoder handles, so that decode never panics on a new field.
func TestDecoderCoversTypes(t *testing.T) {
	for typ, info := range structInfos {
		for name, i := range info.fields {
			ft := typ.Field(i).Type
			for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice || ft.Kind() == reflect.Map {
				if ft.Kind() == reflect.Map && ft.Key().Kind() != reflect.String {
					t.Errorf("%s.%s: map key %s is not a string", typ, name, ft.Key())
				}
				ft = ft.Elem()
			}
			switch ft.Kind() {
			case reflect.String, reflect.Bool, reflect.Int32, reflect.Int64, reflect.Struct:
			default:
				t.Errorf("%s.%s: the decoder does not handle %s", typ, name, ft)
			}
		}
	}
}

// TestNotImplementedTable checks that no field is both implemented and in
// the not-implemented table.
func TestNotImplementedTable(t *testing.T) {
	for typ, names := range notImplemented {
		info := structInfos[typ]
		if info == nil {
			t.Errorf("%s is not a manifest type", typ)
			continue
		}
		for name := range names {
			if _, ok := info.fields[name]; ok {
				t.Errorf("%s.%s is implemented and listed as not implemented", typ, name)
			}
		}
	}
}

// TestParseWarnings: the files of testdata/warn parse, and their warnings
// (fields and kinds accepted but ignored on a node, each once) are the
// golden .warn file.
func TestParseWarnings(t *testing.T) {
	for _, file := range manifestFiles(t, "warn") {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			opts := testOptions(filepath.Base(file))
			opts.Warn = func(w *pod.FieldError) { out.WriteString(w.Error() + "\n") }
			pf, err := ParseFile(data, opts)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			for _, p := range pf.Pods {
				fmt.Fprintf(&out, "pod %s/%s workload=%q backoffLimit=%v priority=%d\n", p.Metadata.Namespace, p.Metadata.Name, p.Workload, ptrString(p.BackoffLimit), pod.PodPriority(p))
			}
			for _, o := range pf.Objects {
				fmt.Fprintf(&out, "object %s retain=%t\n", o, o.Retain)
				for _, w := range o.Warnings {
					fmt.Fprintf(&out, "  %s\n", w)
				}
			}
			golden(t, strings.TrimSuffix(file, filepath.Ext(file))+".warn", []byte(out.String()))
		})
	}
}

func ptrString[T any](p *T) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}
