//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"tug/internal/testutil"
)

// TestShellCompletion loads "tug completion SHELL" into bash and fish (the
// packages the test environment installs) with tug on PATH and completes
// against a running agent: a pod name after "tug logs", the pod's
// container after -c, a flag; zsh, whose completion widgets run only in
// its line editor, loads the script and registers it for tug.
func TestShellCompletion(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	tg.writeManifest("comp.yaml", shPod("comp-a", tg.image, idle))
	tg.waitRunning(startTimeout, "comp-a", "main", 0)

	bin := t.TempDir()
	if err := os.Symlink(tugBin, filepath.Join(bin, "tug")); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
	sock := tg.socketPath()
	tests := []struct {
		shell, line string
		want        []string
	}{
		{"bash", "tug logs --socket " + sock + " comp", []string{staticName("comp-a")}},
		{"bash", "tug logs --socket " + sock + " " + staticName("comp-a") + " -c ", []string{"main"}},
		{"bash", "tug pods --no-h", []string{"--no-headers"}},
		{"fish", "tug logs --socket " + sock + " comp", []string{staticName("comp-a")}},
		{"fish", "tug inspect --socket " + sock + " -n ", []string{"default"}},
		{"fish", "tug ver", []string{"verify", "version"}},
	}
	for _, tt := range tests {
		t.Run(tt.shell+" "+tt.line, func(t *testing.T) {
			testutil.RequireCommand(t, tt.shell)
			var prog string
			switch tt.shell {
			case "bash":
				// The words as bash splits them, the last one possibly empty.
				words := strings.Fields(tt.line)
				if strings.HasSuffix(tt.line, " ") {
					words = append(words, "")
				}
				quoted := make([]string, len(words))
				for i, w := range words {
					quoted[i] = "'" + w + "'"
				}
				prog = "source <(tug completion bash); COMP_WORDS=(" + strings.Join(quoted, " ") + "); COMP_CWORD=" +
					strconv.Itoa(len(words)-1) + "; _tug; printf '%s\\n' \"${COMPREPLY[@]}\""
			case "fish":
				prog = "tug completion fish | source; complete --do-complete '" + tt.line + "' | cut -f1"
			}
			cmd := exec.Command(tt.shell, "-c", prog)
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s -c %q: %v\n%s", tt.shell, prog, err, out)
			}
			if got := strings.Fields(string(out)); !slices.Equal(got, tt.want) {
				t.Errorf("%s completes %q with %q, want %q", tt.shell, tt.line, got, tt.want)
			}
		})
	}
	t.Run("zsh", func(t *testing.T) {
		testutil.RequireCommand(t, "zsh")
		cmd := exec.Command("zsh", "-c", "autoload -U compinit && compinit -u -D; source <(tug completion zsh); print -r -- ${_comps[tug]}")
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "_tug" {
			t.Fatalf("zsh: tug completes with %q (%v), want _tug", out, err)
		}
	})
}
