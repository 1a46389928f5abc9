package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"tug/internal/config"
)

// TestHelp: every subcommand's --help (and -h, and "tug help CMD") exits
// 0 and prints its usage and every one of its flags on stdout; "tug help"
// lists every subcommand.
func TestHelp(t *testing.T) {
	runFlags := []string{"--config"}
	fs := pflag.NewFlagSet("", pflag.ContinueOnError)
	c := config.Default()
	c.BindFlags(fs)
	fs.VisitAll(func(f *pflag.Flag) { runFlags = append(runFlags, "--"+f.Name) })
	tests := []struct {
		cmd   string
		flags []string
	}{
		{"run", runFlags},
		{"check-config", runFlags},
		{"validate", []string{"--policy", "--allow-privileged", "--allow-host-state-mounts"}},
		{"pods", []string{"--socket", "-n, --namespace", "-A, --all-namespaces", "-w, --watch", "-o, --output", "--no-headers"}},
		{"inspect", []string{"--socket", "-n, --namespace", "-o, --output", "--no-headers"}},
		{"describe", []string{"--socket", "-n, --namespace"}},
		{"top", []string{"--socket", "-n, --namespace", "-A, --all-namespaces", "--containers", "-o, --output", "--no-headers"}},
		{"logs", []string{"--socket", "-n, --namespace", "-c, --container", "-f, --follow", "-p, --previous", "--tail", "--since", "--timestamps"}},
		{"node", []string{"--socket", "-o, --output", "--no-headers"}},
		{"events", []string{"--socket", "-n, --namespace", "-A, --all-namespaces", "-w, --watch", "-o, --output", "--no-headers"}},
		{"exec", []string{"--socket", "-n, --namespace", "-c, --container", "-i, --stdin", "-t, --tty"}},
		{"restart", []string{"--socket", "-n, --namespace", "-c, --container"}},
		{"rollback", []string{"--socket", "-n, --namespace", "--source"}},
		{"history", []string{"--socket", "-n, --namespace", "-o, --output", "--no-headers"}},
		{"sign", []string{"--key", "--version", "--expires", "--not-after", "-o, --output", "--node"}},
		{"verify", []string{"--key", "--node", "--min-version"}},
		{"bundle", []string{"--key", "--version", "--expires", "--not-after", "--node", "--unsigned", "--verify-key", "--min-version"}},
		{"release", []string{"--key", "--version", "--expires", "--not-after", "--node", "--registry-config-dir", "--wave", "--rollout-start", "--halt", "--revert"}},
		{"completion", nil},
		{"version", nil},
	}
	listed := map[string]bool{"help": true}
	for _, tt := range tests {
		listed[tt.cmd] = true
		t.Run(tt.cmd, func(t *testing.T) {
			var first string
			for _, args := range [][]string{{tt.cmd, "--help"}, {tt.cmd, "-h"}, {"help", tt.cmd}} {
				var stdout, stderr bytes.Buffer
				if code := run(args, &stdout, &stderr); code != 0 || stderr.Len() > 0 {
					t.Fatalf("tug %v = %d, stderr %q; want 0 and nothing", args, code, stderr.String())
				}
				out := stdout.String()
				if !strings.HasPrefix(out, "usage: tug "+tt.cmd) {
					t.Errorf("tug %v: stdout %q does not start with its usage", args, out)
				}
				for _, f := range tt.flags {
					if !listsFlag(out, f) {
						t.Errorf("tug %v does not list %s:\n%s", args, f, out)
					}
				}
				if first == "" {
					first = out
				} else if out != first {
					t.Errorf("tug %v prints something else than tug %s --help", args, tt.cmd)
				}
			}
		})
	}
	for _, c := range commands() {
		if !listed[c.Name] {
			t.Errorf("command %s has no --help test", c.Name)
		}
	}
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}, {"help", "help"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 0 || stderr.Len() > 0 {
			t.Fatalf("tug %v = %d, stderr %q", args, code, stderr.String())
		}
		for name := range listed {
			if !strings.Contains(stdout.String(), "\n  tug "+name+" ") {
				t.Errorf("tug %v does not list %s:\n%s", args, name, stdout.String())
			}
		}
	}
	for _, args := range [][]string{{"help", "nope"}, {"help", "run", "x"}, {"nope"}, {}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 2 || stdout.Len() > 0 {
			t.Errorf("tug %v = %d, stdout %q; want 2 and usage on stderr", args, code, stdout.String())
		}
	}
}

// listsFlag reports whether help text lists flag f ("-n, --namespace" or
// "--socket" as pflag prints them) at the start of a line.
func listsFlag(help, f string) bool {
	for line := range strings.Lines(help) {
		line = strings.TrimLeft(line, " ")
		if rest, ok := strings.CutPrefix(line, f); ok && (rest == "" || strings.ContainsAny(rest[:1], " \t\n")) {
			return true
		}
	}
	return false
}
