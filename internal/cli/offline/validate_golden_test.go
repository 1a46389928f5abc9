package offline

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestValidateGolden runs tug validate on each manifest of testdata/bad (a
// kind typo, an empty file, JSON with a trailing comma, a tab in the
// indentation, an unrendered template, a policy violation, ...) and
// compares its exit code and every line it prints on stderr with the file's
// .want: file:line:col: field: message, exactly. go test -run
// TestValidateGolden -update rewrites them.
func TestValidateGolden(t *testing.T) {
	// Extra arguments of validate, by file.
	args := map[string][]string{
		"policy-baseline.yaml": {"--policy", "baseline"},
	}
	files, err := filepath.Glob("testdata/bad/*")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := filepath.Abs("testdata/bad")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, file := range files {
		if strings.HasSuffix(file, ".want") {
			continue
		}
		n++
		t.Run(filepath.Base(file), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := testValidate(append(args[filepath.Base(file)], file), &stdout, &stderr)
			// The source of a policy message is the directory's absolute path.
			got := strings.ReplaceAll(stderr.String(), dir, "DIR")
			got = "exit " + strconv.Itoa(code) + "\n" + got
			want := file + ".want"
			if *update {
				if err := os.WriteFile(want, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			data, err := os.ReadFile(want)
			if err != nil {
				t.Fatalf("%v (go test -run TestValidateGolden -update writes it)", err)
			}
			if got != string(data) {
				t.Errorf("tug validate %s printed:\n%s\nwant (%s):\n%s", file, got, want, data)
			}
			if code == 0 {
				t.Errorf("tug validate %s = 0 for a broken manifest", file)
			}
		})
	}
	if n < 10 {
		t.Fatalf("only %d manifests in testdata/bad", n)
	}
}
