package offline

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"tug/internal/testutil"
)

// envCorpus names the directory of the real-world corpus when it is not at
// its usual place beside the repository (../shared/corpus/realworld, or
// beside the repository a local clone was made from).
const envCorpus = "TUG_CORPUS_REALWORLD"

// corpusBesideRepo is shared/corpus/realworld in the nearest directory
// above the test that has one (../shared seen from the repository root), or,
// for a local clone (git clone . /tmp/x), beside the repository it was
// cloned from.
func corpusBesideRepo() string {
	rel := filepath.Join("shared", "corpus", "realworld")
	if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, rel)); err == nil {
				return filepath.Join(dir, rel)
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	out, err := exec.Command("git", "config", "--get", "remote.origin.url").Output()
	if origin := strings.TrimSpace(string(out)); err == nil && filepath.IsAbs(origin) {
		return filepath.Join(filepath.Dir(filepath.Clean(origin)), rel) // a clone of "." names its origin ".../repo/."
	}
	return rel
}

// TestCorpusRealworld runs "tug validate" on every file of the real-world
// corpus (real Pod manifests from public repositories, read where they are
// and never copied into the project) and compares each outcome with
// testdata/corpus-realworld.txt: the file passes (warnings allowed), or it
// is refused and every error says the expected reason. Without the corpus
// the test skips saying so; with CI=true it fails.
func TestCorpusRealworld(t *testing.T) {
	dir := os.Getenv(envCorpus)
	if dir == "" {
		dir = corpusBesideRepo()
	}
	if _, err := os.Stat(dir); err != nil {
		testutil.Missing(t, "the real-world corpus is not at %s (set %s): %v", dir, envCorpus, err)
		return
	}
	want := readCorpusExpectations(t, "testdata/corpus-realworld.txt")
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	passed := 0
	for _, f := range files {
		name := filepath.Base(f)
		if ext := filepath.Ext(name); ext != ".yaml" && ext != ".yml" && ext != ".json" {
			continue
		}
		seen = append(seen, name)
		t.Run(name, func(t *testing.T) {
			exp, ok := want[name]
			if !ok {
				t.Fatalf("no expectation for %s in testdata/corpus-realworld.txt", name)
			}
			var stdout, stderr bytes.Buffer
			code := testValidate([]string{f}, &stdout, &stderr)
			var errs []string
			for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
				if line != "" && !strings.HasPrefix(line, "warning: ") {
					errs = append(errs, line)
				}
			}
			switch {
			case exp == "passes" && code != 0:
				t.Errorf("validate = %d, want it to pass; errors:\n%s", code, strings.Join(errs, "\n"))
			case exp == "passes":
				passed++
			case code == 0:
				t.Errorf("validate passed, want it refused with %q", exp)
			default:
				reason := strings.TrimPrefix(exp, "refused: ")
				for _, e := range errs {
					if !strings.Contains(e, reason) {
						t.Errorf("error %q does not give the expected reason %q", e, reason)
					}
				}
			}
		})
	}
	for name := range want {
		if !slices.Contains(seen, name) {
			t.Errorf("%s is expected in the corpus but is not in %s", name, dir)
		}
	}
	t.Logf("%d of %d corpus files pass", passed, len(seen))
}

// readCorpusExpectations reads "FILE: passes" and "FILE: refused: TEXT"
// lines; # starts a comment line.
func readCorpusExpectations(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := make(map[string]string)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, exp, ok := strings.Cut(line, ": ")
		if !ok || (exp != "passes" && !strings.HasPrefix(exp, "refused: ")) {
			t.Fatalf("%s: bad line %q", path, line)
		}
		want[name] = exp
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return want
}
