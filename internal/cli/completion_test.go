package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestComplete(t *testing.T) {
	sock := serveAPI(t, fixture(time.Now()))
	all := append(Commands(testEnv), Command{Name: "help"})
	tests := []struct {
		name  string
		words []string
		want  []string // exactly these, in this order
	}{
		{"commands", []string{""}, []string{"validate", "pods", "inspect", "describe", "top", "logs", "node", "events", "exec", "restart", "rollback", "history", "sign", "verify", "bundle", "release", "completion", "version", "help"}},
		{"command prefix", []string{"ve"}, []string{"verify", "version"}},
		{"flags", []string{"pods", "--n"}, []string{"--namespace", "--no-headers"}},
		{"shorthands too", []string{"logs", "-"}, []string{"--container", "--follow", "--namespace", "--previous", "--since", "--socket", "--tail", "--timestamps", "-c", "-f", "-n", "-p"}},
		{"output formats", []string{"pods", "-o", ""}, []string{"wide", "json", "yaml", "name"}},
		{"pod names from the agent", []string{"logs", "--socket", sock, ""}, []string{"crash-edge1", "dns-edge1", "setup-edge1", "web-edge1"}},
		{"pod name prefix", []string{"inspect", "--socket=" + sock, "w"}, []string{"web-edge1"}},
		{"pods of the namespace given", []string{"logs", "--socket", sock, "-n", "kube-system", ""}, []string{"dns-edge1"}},
		{"namespaces", []string{"events", "--socket", sock, "-n", ""}, []string{"default", "kube-system"}},
		{"containers of the pod given", []string{"logs", "--socket", sock, "setup-edge1", "-c", ""}, []string{"app"}},
		{"one pod only", []string{"logs", "--socket", sock, "web-edge1", ""}, nil},
		{"no agent: no names", []string{"logs", "--socket", filepath.Join(t.TempDir(), "none.sock"), ""}, nil},
		{"after --", []string{"logs", "--", ""}, nil},
		{"shells", []string{"completion", ""}, []string{"bash", "zsh", "fish"}},
		{"bundle's commands", []string{"bundle", ""}, []string{"push", "pull"}},
		{"help's commands", []string{"help", "p"}, []string{"pods"}},
		{"unknown command", []string{"nope", ""}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			Complete(context.Background(), all, "/nonexistent/tug.sock", tt.words, &out)
			got := strings.Fields(out.String())
			if !slices.Equal(got, tt.want) {
				t.Errorf("Complete(%q) = %q, want %q", tt.words, got, tt.want)
			}
		})
	}
}
