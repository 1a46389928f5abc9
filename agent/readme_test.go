package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"tug/internal/testutil"
)

// TestReadmeInstall walks the README's install steps as far as a test can
// off the device: the arm64 binary they copy and install is the file
// `make build-arm64` writes; the make recipe, run into a temporary
// directory, builds a static aarch64 ELF; the paths the systemd unit names
// (ExecStart's binary, its --config file, Documentation=) are the ones the
// steps install, from files of this repository; and the Raspberry Pi's
// cgroup line is there. The unit's own syntax is checked under systemd by
// make test-systemd (scripts/systemdtest.sh, systemd-analyze verify).
func TestReadmeInstall(t *testing.T) {
	readme := readFile(t, "../README.md")
	unit := readFile(t, "../systemd/tug.service")
	steps := section(t, readme, "## Install on Debian / Raspberry Pi OS")

	recipe := makeRecipe(t, "build-arm64")
	out := flagValue(recipe, "-o")
	if out == "" {
		t.Fatalf("make -n build-arm64 has no -o: %q", recipe)
	}
	name := filepath.Base(out)

	for _, want := range []string{
		"apt-get install containerd runc",
		"cgroup_enable=memory", "cgroup_memory=1", "/boot/firmware/cmdline.txt", "/boot/cmdline.txt",
	} {
		if !strings.Contains(steps, want) {
			t.Errorf("the install steps do not say %q", want)
		}
	}
	if !regexp.MustCompile(`(?m)^make build-arm64 +# ` + regexp.QuoteMeta(out) + `:`).MatchString(steps) {
		t.Errorf("the install steps do not say that make build-arm64 writes %s", out)
	}

	// What the steps copy to the device (scp), and install there.
	var copied []string
	installed := map[string]string{} // destination => source
	for _, line := range codeLines(steps) {
		w := strings.Fields(line)
		switch {
		case len(w) > 0 && w[0] == "scp":
			copied = w[1 : len(w)-1]
		case len(w) >= 3 && w[0] == "install" && !slices.Contains(w, "-d"):
			installed[w[len(w)-1]] = w[len(w)-2]
		}
	}
	if !slices.Contains(copied, out) {
		t.Errorf("the steps copy %q, not %s", copied, out)
	}
	for _, src := range copied {
		if src == out {
			continue
		}
		if _, err := os.Stat(filepath.Join("..", src)); err != nil {
			t.Errorf("the steps copy %s: %v", src, err)
		}
	}
	for dst, src := range installed {
		if !slices.ContainsFunc(copied, func(c string) bool { return filepath.Base(c) == src }) {
			t.Errorf("the steps install %s as %s, but do not copy it to the device", src, dst)
		}
	}

	start := unitValue(t, unit, "ExecStart")
	bin := strings.Fields(start)[0]
	if installed[bin] != name {
		t.Errorf("the unit runs %s, which the steps install from %q, want %s", bin, installed[bin], name)
	}
	if cfg := flagValue(strings.Fields(start), "--config"); installed[cfg] != "config.yaml" {
		t.Errorf("the unit reads --config %q, which the steps install from %q, want config.yaml", cfg, installed[cfg])
	}
	doc, ok := strings.CutPrefix(unitValue(t, unit, "Documentation"), "file://")
	if !ok || installed[doc] == "" {
		t.Errorf("the unit's Documentation= is %q, which the steps do not install", unitValue(t, unit, "Documentation"))
	}

	if testing.Short() {
		// A skip on a developer's machine, a failure with CI=true.
		testutil.Missing(t, "-short: the arm64 build of the recipe is not run")
	}
	dir := t.TempDir()
	built := filepath.Join(dir, name)
	runRecipe(t, recipe, out, built)
	f, err := elf.Open(built)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Machine != elf.EM_AARCH64 || f.Class != elf.ELFCLASS64 || f.OSABI != elf.ELFOSABI_NONE && f.OSABI != elf.ELFOSABI_LINUX {
		t.Errorf("%s is %v %v %v, want a 64-bit aarch64 Linux ELF", name, f.Class, f.Machine, f.OSABI)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s has a program interpreter: it is not static", name)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// section returns the text of the README section that starts with heading,
// up to the next section of the same level.
func section(t *testing.T, text, heading string) string {
	t.Helper()
	_, rest, ok := strings.Cut(text, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README has no section %q", heading)
	}
	body, _, _ := strings.Cut(rest, "\n## ")
	return body
}

// codeLines returns the lines of the ```sh blocks of text, without their
// comments.
func codeLines(text string) []string {
	var lines []string
	in := false
	for _, l := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(l, "```"):
			in = !in && l == "```sh"
		case in:
			l, _, _ = strings.Cut(l, "#")
			if l = strings.TrimSpace(l); l != "" {
				lines = append(lines, l)
			}
		}
	}
	return lines
}

// unitValue returns the value of the unit's first key= line.
func unitValue(t *testing.T, unit, key string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + key + `=(.*)$`).FindStringSubmatch(unit)
	if m == nil {
		t.Fatalf("the unit has no %s=", key)
	}
	return m[1]
}

// makeRecipe returns the words of the command that `make -n target` prints
// in the repository's root (the build line: the target's only command).
func makeRecipe(t *testing.T, target string) []string {
	t.Helper()
	testutil.RequireCommand(t, "make")
	cmd := exec.Command("make", "--no-print-directory", "-n", target)
	cmd.Dir = ".."
	cmd.Env = slices.DeleteFunc(os.Environ(), func(e string) bool {
		return strings.HasPrefix(e, "MAKEFLAGS=") || strings.HasPrefix(e, "MFLAGS=") || strings.HasPrefix(e, "MAKELEVEL=")
	})
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("make -n %s: %v", target, err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 1 {
		t.Fatalf("make -n %s prints %d commands, want the build alone:\n%s", target, len(lines), b)
	}
	return shellWords(lines[0])
}

// shellWords splits a command line as sh does for the plain words and
// single quotes that make -n prints for a build.
func shellWords(line string) []string {
	var words []string
	var w strings.Builder
	inWord, quoted := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, w.String())
				w.Reset()
			}
			inWord = false
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// flagValue returns the word after name in words, "" if none.
func flagValue(words []string, name string) string {
	if i := slices.Index(words, name); i >= 0 && i+1 < len(words) {
		return words[i+1]
	}
	return ""
}

// runRecipe runs the recipe's words (VAR=value assignments, then the
// command) in the repository's root with its output out written to dst.
func runRecipe(t *testing.T, recipe []string, out, dst string) {
	t.Helper()
	env := os.Environ()
	i := 0
	for ; i < len(recipe) && strings.Contains(recipe[i], "=") && !strings.HasPrefix(recipe[i], "-"); i++ {
		env = append(env, recipe[i])
	}
	args := slices.Clone(recipe[i:])
	if j := slices.Index(args, "-o"); j < 0 || args[j+1] != out {
		t.Fatalf("recipe %q: no -o %s", recipe, out)
	} else {
		args[j+1] = dst
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir, cmd.Env = "..", env
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(recipe, " "), err, b)
	}
}
