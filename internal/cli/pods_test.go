package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"tug/internal/api"
	"tug/internal/pod"
	"tug/internal/podview"
)

// fakeStatus is an api.StatusSource with settable state.
type fakeStatus struct {
	pods      []podview.View
	manifests []podview.ManifestStatus
}

func (f *fakeStatus) Pods() []podview.View                { return slices.Clone(f.pods) }
func (f *fakeStatus) Manifests() []podview.ManifestStatus { return slices.Clone(f.manifests) }

// serveAPI serves src with a real api.Server on a unix socket in a
// temporary directory until the test ends, and returns the socket path once
// it answers.
func serveAPI(t *testing.T, src api.StatusSource) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "tug.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	srv := &api.Server{Status: src, Log: slog.New(slog.DiscardHandler)}
	go func() { done <- srv.Serve(ctx, sock, "") }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	c := &api.Client{SocketPath: sock}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		_, err := c.Manifests(ctx)
		if err == nil {
			return sock
		}
		if time.Now().After(deadline) {
			t.Fatalf("API on %s never answered: %v", sock, err)
		}
	}
}

// fixture is a node with a running pod, a crash-looping pod, a pod in its
// init containers, a pod in another namespace, a manifest broken by an edit
// (its pod keeps running), a new manifest that never parsed and an
// unreadable one. Its times are relative to now and chosen so that a
// few seconds of test time do not change what "tug pods" prints.
func fixture(now time.Time) *fakeStatus {
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	agoPtr := func(d time.Duration) *time.Time { t := ago(d); return &t }
	meta := func(ns, name, manifestName, uid string) pod.ObjectMeta {
		return pod.ObjectMeta{Namespace: ns, Name: name, ManifestName: manifestName, UID: uid}
	}
	containers := func(names ...string) []pod.Container {
		var cs []pod.Container
		for _, n := range names {
			cs = append(cs, pod.Container{Name: n, Image: "busybox:1.36"})
		}
		return cs
	}
	runningSince := func(d time.Duration) pod.ContainerState {
		return pod.ContainerState{Running: &pod.StateRunning{StartedAt: ago(d)}}
	}
	cond := func(typ, status string) pod.Condition { return pod.Condition{Type: typ, Status: status} }

	web := podview.View{APIVersion: "v1", Kind: "Pod", Metadata: meta("default", "web-edge1", "web", "uid-web"),
		Spec: pod.PodSpec{Containers: containers("nginx"), RestartPolicy: pod.RestartAlways},
		Status: pod.Status{Phase: pod.PhaseRunning, StartTime: agoPtr(5 * time.Hour), PodIP: "10.88.0.2",
			PodIPs:     []pod.PodIP{{IP: "10.88.0.2"}},
			Conditions: []pod.Condition{cond("Initialized", "True"), cond("Ready", "True")},
			ContainerStatuses: []pod.ContainerStatus{{Name: "nginx", Ready: true, State: runningSince(5 * time.Hour),
				Image: "busybox:1.36", ContainerID: "containerd://c1"}}}}

	crash := podview.View{APIVersion: "v1", Kind: "Pod", Metadata: meta("default", "crash-edge1", "crash", "uid-crash"),
		Spec: pod.PodSpec{Containers: containers("main"), RestartPolicy: pod.RestartAlways},
		Status: pod.Status{Phase: pod.PhaseRunning, StartTime: agoPtr(50 * time.Hour), PodIP: "10.88.0.3",
			Conditions: []pod.Condition{cond("Initialized", "True"), cond("Ready", "False")},
			ContainerStatuses: []pod.ContainerStatus{{Name: "main", RestartCount: 4, Image: "busybox:1.36",
				State: pod.ContainerState{Waiting: &pod.StateWaiting{Reason: pod.ReasonCrashLoopBackOff,
					Message: "back-off 2m40s restarting failed container"}},
				LastTerminationState: pod.ContainerState{Terminated: &pod.StateTerminated{ExitCode: 1,
					Reason: pod.ReasonError, StartedAt: ago(12*time.Minute + time.Second), FinishedAt: ago(12 * time.Minute)}}}}}}

	initPod := podview.View{APIVersion: "v1", Kind: "Pod", Metadata: meta("default", "setup-edge1", "setup", "uid-setup"),
		Spec: pod.PodSpec{InitContainers: containers("fetch", "migrate"), Containers: containers("app"), RestartPolicy: pod.RestartAlways},
		Status: pod.Status{Phase: pod.PhasePending, StartTime: agoPtr(15 * time.Minute),
			Conditions: []pod.Condition{cond("Initialized", "False"), cond("Ready", "False")},
			InitContainerStatuses: []pod.ContainerStatus{
				{Name: "fetch", State: pod.ContainerState{Terminated: &pod.StateTerminated{Reason: pod.ReasonCompleted,
					StartedAt: ago(15 * time.Minute), FinishedAt: ago(14 * time.Minute)}}},
				{Name: "migrate", State: runningSince(14 * time.Minute)},
			},
			ContainerStatuses: []pod.ContainerStatus{{Name: "app",
				State: pod.ContainerState{Waiting: &pod.StateWaiting{Reason: pod.ReasonPodInitializing}}}}}}

	dns := podview.View{APIVersion: "v1", Kind: "Pod", Metadata: meta("kube-system", "dns-edge1", "dns", "uid-dns"),
		Spec: pod.PodSpec{Containers: containers("coredns"), RestartPolicy: pod.RestartAlways},
		Status: pod.Status{Phase: pod.PhaseRunning, StartTime: agoPtr(10 * 24 * time.Hour), PodIP: "10.88.0.4",
			Conditions:        []pod.Condition{cond("Ready", "True")},
			ContainerStatuses: []pod.ContainerStatus{{Name: "coredns", Ready: true, State: runningSince(10 * 24 * time.Hour)}}}}

	const dir = "/etc/tug/manifests/"
	return &fakeStatus{
		pods: []podview.View{web, crash, initPod, dns},
		manifests: []podview.ManifestStatus{
			{Source: "file:" + dir, File: dir + "web.yaml", UIDs: []string{"uid-web"}, LastChange: ago(40 * time.Minute),
				Error: dir + `web.yaml:9:7: spec.containers[0].imagee: field imagee not found in type Container`},
			{Source: "file:" + dir, File: dir + "crash.yaml", UIDs: []string{"uid-crash"}, LastChange: ago(50 * time.Hour)},
			{Source: "file:" + dir, File: dir + "setup.yaml", UIDs: []string{"uid-setup"}, LastChange: ago(15 * time.Minute)},
			{Source: "file:" + dir, File: dir + "dns.yaml", UIDs: []string{"uid-dns"}, LastChange: ago(10 * 24 * time.Hour)},
			{Source: "file:" + dir, File: dir + "broken.yaml", LastChange: ago(15 * time.Minute),
				Error: dir + "broken.yaml:4:3: metadata.name: required\n" + dir + `broken.yaml:8:14: spec.restartPolicy: unsupported value "Sometimes": must be Always, OnFailure or Never`},
			{Source: "file:" + dir, File: dir + "secret.yaml", Error: "read: permission denied"},
		},
	}
}

const wantManifestErrors = `
/etc/tug/manifests/broken.yaml:4:3: metadata.name: required
/etc/tug/manifests/broken.yaml:8:14: spec.restartPolicy: unsupported value "Sometimes": must be Always, OnFailure or Never
/etc/tug/manifests/secret.yaml: read: permission denied
/etc/tug/manifests/web.yaml:9:7: spec.containers[0].imagee: field imagee not found in type Container
/etc/tug/manifests/web.yaml: keeping its last good version running (web-edge1)
`

func TestPodsCommand(t *testing.T) {
	sock := serveAPI(t, fixture(time.Now()))
	tests := []struct {
		name string
		args []string
		want string
	}{
		{
			name: "every namespace",
			args: nil,
			want: `NAMESPACE     NAME          READY   STATUS             RESTARTS      AGE
default       crash-edge1   0/1     CrashLoopBackOff   4 (12m ago)   2d2h
default       setup-edge1   0/1     Init:1/2           0             15m
default       web-edge1     1/1     Running            0             5h
kube-system   dns-edge1     1/1     Running            0             10d
-             broken.yaml   -       ManifestError      -             15m
-             secret.yaml   -       ManifestError      -             <unknown>
-             web.yaml      -       ManifestError      -             40m
` + wantManifestErrors,
		},
		{
			name: "one namespace",
			args: []string{"-n", "default"},
			want: `NAME          READY   STATUS             RESTARTS      AGE
crash-edge1   0/1     CrashLoopBackOff   4 (12m ago)   2d2h
setup-edge1   0/1     Init:1/2           0             15m
web-edge1     1/1     Running            0             5h
broken.yaml   -       ManifestError      -             15m
secret.yaml   -       ManifestError      -             <unknown>
web.yaml      -       ManifestError      -             40m
` + wantManifestErrors,
		},
		{
			name: "wide",
			args: []string{"-o", "wide", "--namespace", "kube-system"},
			want: `NAME          READY   STATUS          RESTARTS   AGE         IP          FILE
dns-edge1     1/1     Running         0          10d         10.88.0.4   /etc/tug/manifests/dns.yaml
broken.yaml   -       ManifestError   -          15m         <none>      /etc/tug/manifests/broken.yaml
secret.yaml   -       ManifestError   -          <unknown>   <none>      /etc/tug/manifests/secret.yaml
web.yaml      -       ManifestError   -          40m         <none>      /etc/tug/manifests/web.yaml
` + wantManifestErrors,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"pods", "--socket", sock}, tt.args...)
			if code := run(args, &stdout, &stderr); code != 0 {
				t.Fatalf("tug %v = %d, want 0; stderr: %s", args, code, stderr.String())
			}
			if got := stdout.String(); got != tt.want {
				t.Errorf("tug %v printed:\n%s\nwant:\n%s", args, got, tt.want)
			}
			t.Logf("tug %s\n%s", strings.Join(tt.args, " "), stdout.String())
		})
	}
}

func TestPodsCommandJSON(t *testing.T) {
	sock := serveAPI(t, fixture(time.Now()))
	var stdout, stderr bytes.Buffer
	if code := run([]string{"pods", "--socket", sock, "-o", "json", "-n", "default"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var l podview.List
	if err := json.Unmarshal(stdout.Bytes(), &l); err != nil {
		t.Fatalf("decode: %v\n%s", err, stdout.String())
	}
	var names []string
	for _, v := range l.Items {
		names = append(names, v.Metadata.Name)
	}
	if l.Kind != "PodList" || !slices.Equal(names, []string{"crash-edge1", "setup-edge1", "web-edge1"}) {
		t.Errorf("kind %q, items %v; want PodList of crash-edge1, setup-edge1, web-edge1", l.Kind, names)
	}
}

func TestPodsCommandEmpty(t *testing.T) {
	sock := serveAPI(t, &fakeStatus{})
	var stdout, stderr bytes.Buffer
	if code := run([]string{"pods", "--socket", sock}, &stdout, &stderr); code != 0 || stdout.Len() != 0 || stderr.String() != "No pods.\n" {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0, nothing, \"No pods.\"", code, stdout.String(), stderr.String())
	}
}

func TestInspectCommand(t *testing.T) {
	sock := serveAPI(t, fixture(time.Now()))
	tests := []struct {
		name string
		args []string
		uid  string
	}{
		{"static name", []string{"crash-edge1"}, "uid-crash"},
		{"manifest name", []string{"crash"}, "uid-crash"},
		{"namespace after the name", []string{"dns", "-n", "kube-system"}, "uid-dns"},
		{"namespace before the name", []string{"--namespace=kube-system", "dns-edge1"}, "uid-dns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"inspect", "--socket", sock}, tt.args...)
			if code := run(args, &stdout, &stderr); code != 0 {
				t.Fatalf("tug %v = %d, want 0; stderr: %s", args, code, stderr.String())
			}
			var doc map[string]any
			if err := yaml.Unmarshal(stdout.Bytes(), &doc); err != nil {
				t.Fatalf("output is not YAML: %v\n%s", err, stdout.String())
			}
			meta, _ := doc["metadata"].(map[string]any)
			if doc["apiVersion"] != "v1" || doc["kind"] != "Pod" || meta["uid"] != tt.uid {
				t.Errorf("apiVersion %v, kind %v, metadata.uid %v; want v1, Pod, %s", doc["apiVersion"], doc["kind"], meta["uid"], tt.uid)
			}
		})
	}

	// The keys are the Kubernetes names, with the status.
	var stdout, stderr bytes.Buffer
	if code := run([]string{"inspect", "--socket", sock, "crash"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{
		"apiVersion: v1\n", "kind: Pod\n", "  name: crash-edge1\n", "  restartPolicy: Always\n",
		"  containerStatuses:\n", "      restartCount: 4\n", "      lastState:\n", "          reason: Error\n",
		"          reason: CrashLoopBackOff\n", "  phase: Running\n",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("tug inspect crash lacks %q:\n%s", want, stdout.String())
		}
	}
	for _, unwanted := range []string{"Metadata", "RestartCount", "ManifestName"} {
		if strings.Contains(stdout.String(), unwanted) {
			t.Errorf("tug inspect crash shows the Go name %q:\n%s", unwanted, stdout.String())
		}
	}
	t.Logf("tug inspect crash\n%s", stdout.String())
}

func TestInspectCommandJSON(t *testing.T) {
	sock := serveAPI(t, fixture(time.Now()))
	var stdout, stderr bytes.Buffer
	if code := run([]string{"inspect", "--socket", sock, "-o", "json", "web"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var v podview.View
	if err := json.Unmarshal(stdout.Bytes(), &v); err != nil || v.Metadata.UID != "uid-web" || v.Status.PodIP != "10.88.0.2" {
		t.Errorf("decoded %+v (%v); want web-edge1 with its status", v.Metadata, err)
	}
}

func TestClientCommandErrors(t *testing.T) {
	sock := serveAPI(t, fixture(time.Now()))
	missing := filepath.Join(t.TempDir(), "tug.sock")
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr string // the first line of stderr
	}{
		{"pods: tug not running", []string{"pods", "--socket", missing}, 1,
			"tug: cannot reach tug at " + missing + ": is it running?"},
		{"inspect: tug not running", []string{"inspect", "--socket", missing, "web"}, 1,
			"tug: cannot reach tug at " + missing + ": is it running?"},
		{"inspect: no such pod", []string{"inspect", "--socket", sock, "nope"}, 1,
			`tug: pod "nope" not found in namespace "default"`},
		{"inspect: wrong namespace", []string{"inspect", "--socket", sock, "-n", "kube-system", "web"}, 1,
			`tug: pod "web" not found in namespace "kube-system"`},
		{"pods: argument", []string{"pods", "--socket", sock, "web"}, 2,
			"tug: tug pods takes no arguments (use tug inspect POD or tug describe POD for one pod)"},
		{"pods: bad format", []string{"pods", "--socket", sock, "-o", "xml"}, 2, `tug: unknown output format "xml" (want one of wide, json, yaml, name)`},
		{"pods: bad flag", []string{"pods", "--sock", sock}, 2, "tug: unknown flag: --sock"},
		{"inspect: no pod", []string{"inspect", "--socket", sock}, 2, "tug: tug inspect takes one pod name"},
		{"inspect: two pods", []string{"inspect", "--socket", sock, "web", "crash"}, 2, "tug: tug inspect takes one pod name"},
		{"inspect: bad format", []string{"inspect", "--socket", sock, "-o", "xml", "web"}, 2, `tug: unknown output format "xml" (want one of wide, json, yaml, name)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			first, _, _ := strings.Cut(stderr.String(), "\n")
			if code != tt.wantCode || first != tt.wantStderr {
				t.Errorf("tug %v = %d, stderr %q; want %d, %q", tt.args, code, stderr.String(), tt.wantCode, tt.wantStderr)
			}
			if code != 0 && stdout.Len() > 0 {
				t.Errorf("stdout not empty on failure: %q", stdout.String())
			}
		})
	}
}

// TestPrintPodsUnsorted checks the table printer on its own, as "tug run
// --runonce" calls it: unsorted pods are sorted, and the caller's slice is
// left alone.
func TestPrintPodsUnsorted(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	f := fixture(now)
	f.pods = f.pods[:3] // default only: no NAMESPACE column
	slices.Reverse(f.pods)
	before := slices.Clone(f.pods)
	var out bytes.Buffer
	if rows := PrintPods(&out, f.pods, f.manifests[1:3], now); rows != 3 {
		t.Errorf("PrintPods = %d rows, want 3", rows)
	}
	want := `NAME          READY   STATUS             RESTARTS      AGE
crash-edge1   0/1     CrashLoopBackOff   4 (12m ago)   2d2h
setup-edge1   0/1     Init:1/2           0             15m
web-edge1     1/1     Running            0             5h
`
	if out.String() != want {
		t.Errorf("PrintPods printed:\n%s\nwant:\n%s", out.String(), want)
	}
	for i := range before {
		if f.pods[i].Metadata.UID != before[i].Metadata.UID {
			t.Fatal("PrintPods reordered the caller's slice")
		}
	}
	if rows := PrintPods(io.Discard, nil, nil, now); rows != 0 {
		t.Errorf("PrintPods(nothing) = %d rows, want 0", rows)
	}
}

func TestFetchLine(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		fetch   podview.FetchStatus
		source  string // default http://h/p.yaml
		applied string
		version uint64
		want    string
	}{
		{name: "ok", fetch: podview.FetchStatus{LastFetch: now.Add(-3 * time.Second), HTTPStatus: 304, ETag: `"v2"`, CheckpointTime: now.Add(-5 * time.Minute)}, applied: "462c4323c07e3318fe79",
			want: `URL http://h/p.yaml: fetched 3s ago (304), etag "v2", applied 462c4323c07e, checkpoint 5m old`},
		{name: "down since boot", fetch: podview.FetchStatus{LastFetch: now.Add(-time.Second), Error: "connection refused", CheckpointTime: now.Add(-2 * time.Hour), FromCheckpoint: true},
			want: `URL http://h/p.yaml: fetched 1s ago (no answer), checkpoint 120m old, pods from the checkpoint, error: connection refused`},
		{name: "never fetched", want: `URL http://h/p.yaml: fetched never (no answer)`},
		{name: "OCI", source: "oci://r.example/tug/b:prod", fetch: podview.FetchStatus{LastFetch: now.Add(-20 * time.Second), Digest: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
			CheckpointTime: now.Add(-time.Hour)}, applied: "462c4323c07e3318fe79", version: 3,
			want: `OCI r.example/tug/b:prod: checked 20s ago, digest sha256:9f86d081884c, version 3, applied 462c4323c07e, checkpoint 60m old`},
		{name: "OCI refused", source: "oci://r.example/tug/b:prod", fetch: podview.FetchStatus{LastFetch: now.Add(-time.Second), Error: "bundle: bad signature"},
			want: `OCI r.example/tug/b:prod: checked 1s ago, error: bundle: bad signature`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.fetch
			src := cmp.Or(tt.source, "http://h/p.yaml")
			got := fetchLine(podview.ManifestStatus{Source: src, AppliedHash: tt.applied, Version: tt.version, Fetch: &f}, now)
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestPodsEscapesControlCharacters: nothing tug pods prints from a
// manifest or a status reaches the terminal raw: an ESC (terminal escape
// sequences), a tab or a byte that is not UTF-8 is printed escaped.
func TestPodsEscapesControlCharacters(t *testing.T) {
	now := time.Now()
	v := podview.View{Metadata: pod.ObjectMeta{Name: "web\x1b[2J", Namespace: "default", UID: "u1"}}
	v.Status.Phase = pod.PhasePending
	v.Status.Reason = "Bad\tReason"
	v.Status.Message = "hostPath /data\x1b]0;owned\x07 is missing\xff"
	ms := []podview.ManifestStatus{{Source: "file:/m", File: "/m/x\x1b[31m.yaml", Error: "/m/x.yaml:3:5: spec.volumes[0].hostPath.path: \x1b[1mbad\u202e"}}
	var out bytes.Buffer
	writePodTable(&out, []podview.View{v}, ms, tableOptions{wide: true}, now)
	got := out.String()
	for _, raw := range []string{"\x1b", "\x07", "\xff", "\u202e", "Bad\tReason"} {
		if strings.Contains(got, raw) {
			t.Errorf("output holds %q raw:\n%s", raw, got)
		}
	}
	for _, want := range []string{`web\x1b[2J`, `Bad\tReason`, `/data\x1b]0;owned\a is missing\xff`, `x\x1b[31m.yaml`, `\x1b[1mbad\u202e`} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %s:\n%s", want, got)
		}
	}
}

func TestEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{"web-node", "web-node"},
		{"ünïcödé ok", "ünïcödé ok"},
		{"a\x1bb", `a\x1bb`},
		{"a\nb", `a\nb`},
		{"\xfe", `\xfe`},
		{"zero\u200bwidth", `zero\u200bwidth`},
	}
	for _, tt := range tests {
		if got := escape(tt.in); got != tt.want {
			t.Errorf("escape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestStructuredOutputEscaped: -o json and -o yaml carry no control or
// invisible character raw either, and the JSON still decodes to the value.
func TestStructuredOutputEscaped(t *testing.T) {
	v := podview.View{Metadata: pod.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"a": "x\u202ey\u009b31m"}}}
	for name, write := range map[string]func(io.Writer, any) error{"json": writeJSON, "yaml": writeYAML} {
		var out bytes.Buffer
		if err := write(&out, v); err != nil {
			t.Fatal(err)
		}
		if strings.ContainsAny(out.String(), "\u202e\u009b") {
			t.Errorf("%s output holds a raw control character:\n%s", name, out.String())
		}
		if name == "json" {
			var back podview.View
			if err := json.Unmarshal(out.Bytes(), &back); err != nil || back.Metadata.Labels["a"] != "x\u202ey\u009b31m" {
				t.Errorf("json output decodes to %q, %v", back.Metadata.Labels["a"], err)
			}
		}
	}
}

// TestPodNotes: below the table, "tug pods" says why a pod cannot be set
// up, what its update waits on, and how far the pulls it waits on are.
func TestPodNotes(t *testing.T) {
	creating := func(name, msg string) pod.ContainerStatus {
		return pod.ContainerStatus{Name: name, State: pod.ContainerState{Waiting: &pod.StateWaiting{Reason: pod.ReasonContainerCreating, Message: msg}}}
	}
	tests := []struct {
		name string
		st   pod.Status
		want []string
	}{
		{"nothing to say", pod.Status{ContainerStatuses: []pod.ContainerStatus{creating("app", "")}}, nil},
		{"status message", pod.Status{Message: "no free address"}, []string{"no free address"}},
		{"update waits", pod.Status{Conditions: []pod.Condition{
			{Type: pod.ConditionReady, Status: "False", Message: "containers with unready status: [app]"},
			{Type: pod.ConditionUpdateReady, Status: "False", Reason: "Pulling", Message: "container app: the update waits on its image"}}},
			[]string{"container app: the update waits on its image"}},
		{"pull progress", pod.Status{
			InitContainerStatuses: []pod.ContainerStatus{creating("init", `Pulling image "a": 1.0 MB of 2.0 MB`)},
			ContainerStatuses:     []pod.ContainerStatus{creating("app", "other"), creating("side", `Pulling image "b"`)}},
			[]string{`init: Pulling image "a": 1.0 MB of 2.0 MB`, `side: Pulling image "b"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := podNotes(&tt.st); !slices.Equal(got, tt.want) {
				t.Errorf("podNotes = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPodsUpdateWaiting(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 0, 30, 0, 0, berlin)
	opens := time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		u    podview.UpdateWaiting
		want string
	}{
		{"a bundle", podview.UpdateWaiting{Opens: opens, Window: "daily 02:00-04:00", Hash: "ab", Version: 7},
			"https://fleet.example/pods: update waiting for the window at 2026-11-30 02:00:00 CET (version 7)\n"},
		{"prefetched", podview.UpdateWaiting{Opens: opens, Window: "daily 02:00-04:00", Hash: "ab", Prefetched: true},
			"https://fleet.example/pods: update waiting for the window at 2026-11-30 02:00:00 CET (images pulled)\n"},
		{"never opens", podview.UpdateWaiting{Window: "cron:0 0 30 2 * for 1h", Hash: "ab"},
			"https://fleet.example/pods: update waiting for the window \"cron:0 0 30 2 * for 1h\", which never opens\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			ms := []podview.ManifestStatus{{Source: "https://fleet.example/pods", File: "https://fleet.example/pods", UpdateWaiting: &tt.u}}
			PrintPods(&out, nil, ms, now)
			if !strings.HasSuffix(out.String(), "\n"+tt.want) {
				t.Errorf("tug pods printed:\n%s\nwant it to end with:\n%s", out.String(), tt.want)
			}
		})
	}
}
