package offline

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestValidateExamples checks that the example manifests shipped in
// manifests/ pass "tug validate", given as files or as their directory.
func TestValidateExamples(t *testing.T) {
	files, err := filepath.Glob("../../../manifests/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example manifests in ../../../manifests (%v)", err)
	}
	tests := []struct {
		name string
		args []string
	}{
		{"files", files},
		{"directory", []string{"../../../manifests"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := testValidate(tt.args, &stdout, &stderr); code != 0 {
				t.Fatalf("validate %v = %d, want 0; stderr:\n%s", tt.args, code, stderr.String())
			}
			if stderr.Len() > 0 {
				t.Errorf("stderr not empty:\n%s", stderr.String())
			}
			for _, f := range files {
				if !strings.Contains(stdout.String(), filepath.Base(f)+": ok") {
					t.Errorf("stdout does not say %s is ok:\n%s", f, stdout.String())
				}
			}
		})
	}
}

// TestValidateBroken checks that a broken manifest makes "tug validate"
// fail with a "file:line:col: field.path: message" line pointing at the
// problem.
func TestValidateBroken(t *testing.T) {
	const head = `apiVersion: v1
kind: Pod
metadata:
  name: broken
spec:
`
	tests := []struct {
		name string
		yaml string
		// One error line is expected at line:col (0: any), with this field
		// path and a message containing mention.
		line, col int
		path      string
		mention   string
	}{
		{
			name: "unknown field",
			yaml: head + `  containers:
    - name: main
      imagee: busybox:1.35
      image: busybox:1.35
`,
			line: 8, col: 7, path: "spec.containers[0].imagee", mention: "imagee",
		},
		{
			name: "unknown spec field",
			yaml: head + `  containers:
    - name: main
      image: busybox:1.35
  restartPolicyy: Never
`,
			line: 9, col: 3, path: "spec.restartPolicyy", mention: "restartPolicyy",
		},
		{
			name: "wrong type",
			yaml: head + `  terminationGracePeriodSeconds: soon
  containers:
    - name: main
      image: busybox:1.35
`,
			line: 6, col: 34, path: "spec.terminationGracePeriodSeconds", mention: "integer",
		},
		{
			name: "missing image",
			yaml: head + `  containers:
    - name: main
      command: ["true"]
`,
			// A missing field is reported where its mapping starts.
			line: 7, col: 7, path: "spec.containers[0].image", mention: "required",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "broken.yaml")
			if err := os.WriteFile(file, []byte(tt.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := testValidate([]string{file}, &stdout, &stderr)
			if code == 0 {
				t.Fatalf("validate = 0 for a broken manifest; stdout:\n%s", stdout.String())
			}
			re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(file) + `:(\d+):(\d+): ` +
				regexp.QuoteMeta(tt.path) + `: (\S.*)$`)
			m := re.FindStringSubmatch(stderr.String())
			if m == nil || !strings.Contains(m[3], tt.mention) {
				t.Fatalf("no line %q naming %q in stderr:\n%s",
					fmt.Sprintf("%s:LINE:COL: %s: MESSAGE", file, tt.path), tt.mention, stderr.String())
			}
			if want := fmt.Sprintf("%s:%d:%d:", file, tt.line, tt.col); tt.line > 0 && !strings.HasPrefix(m[0], want) {
				t.Errorf("error at %s:%s:%s, want %s %s", file, m[1], m[2], want, m[0])
			}
		})
	}
}

// TestValidateFileLimit: tug validate refuses a file over the agent's
// 10 MiB manifest limit, as the agent does, instead of saying ok.
func TestValidateFileLimit(t *testing.T) {
	dir := t.TempDir()
	pod := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: big\nspec:\n  containers: [{name: c, image: busybox}]\n"
	tests := []struct {
		name string
		size int
		want int
	}{
		{"at the limit", 10 << 20, 0},
		{"11 MiB", 11 << 20, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".yaml")
			body := pod + "#" + strings.Repeat("x", tt.size-len(pod)-2) + "\n"
			if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			if code := testValidate([]string{path}, &stdout, &stderr); code != tt.want {
				t.Fatalf("validate = %d, want %d; stdout %q stderr %q", code, tt.want, stdout.String(), stderr.String())
			}
			if tt.want != 0 && (!strings.Contains(stderr.String(), "over 10485760 bytes") || strings.Contains(stdout.String(), "ok")) {
				t.Errorf("stdout %q stderr %q, want the size error", stdout.String(), stderr.String())
			}
		})
	}
}

// TestValidatePolicy checks "tug validate --policy LEVEL": the policy's
// admission messages, exit 1, whatever the order of flags and paths
// (agent's TestValidateWiring checks the host paths the agent protects).
func TestValidatePolicy(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "caps.yaml")
	manifest := `apiVersion: v1
kind: Pod
metadata:
  name: caps
spec:
  containers:
  - name: app
    image: busybox
    securityContext:
      capabilities:
        add: ["ALL"]
`
	if err := os.WriteFile(file, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(dir)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no policy", []string{file}, 0, ""},
		{"privileged", []string{"--policy", "privileged", file}, 0, ""},
		{"baseline", []string{"--policy", "baseline", file}, 1,
			file + `:11:15: spec.containers[0].securityContext.capabilities.add[0]: "ALL" is not allowed by the baseline policy of source file:` + abs},
		{"flag after the path", []string{file, "--policy=restricted"}, 1, `must be false under the restricted policy of source file:` + abs},
		{"unknown level", []string{"--policy", "strict", file}, 2, "unknown level"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := testValidate(tt.args, &stdout, &stderr); code != tt.code {
				t.Fatalf("validate %v = %d, want %d; stderr:\n%s", tt.args, code, tt.code, stderr.String())
			}
			if tt.want != "" && !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr does not contain %q:\n%s", tt.want, stderr.String())
			}
			if tt.code == 0 && !strings.Contains(stdout.String(), ": ok") {
				t.Errorf("stdout %q, want ok", stdout.String())
			}
		})
	}
}

// TestValidateEmpty: an empty file (or one of comments and empty
// documents) and a directory without manifests say "no manifests found"
// and fail; a file of kinds that are only skipped passes with warnings.
func TestValidateEmpty(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	emptyDir := filepath.Join(dir, "none")
	if err := os.Mkdir(emptyDir, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		wantCode   int
		wantErr    string
	}{
		{"empty file", write("empty.yaml", ""), 1, "empty.yaml: no manifests found"},
		{"comments and empty documents", write("comments.yaml", "# nothing yet\n---\n---\n"), 1, "comments.yaml: no manifests found"},
		{"empty directory", emptyDir, 1, "none: no manifests found"},
		{"only skipped kinds", write("svc.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: web}\n"), 0, "warning:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := testValidate([]string{tt.path}, &stdout, &stderr); code != tt.wantCode || !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("validate = %d, stderr %q; want %d and %q", code, stderr.String(), tt.wantCode, tt.wantErr)
			}
		})
	}
}
