package cli

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestParseExecArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    execArgs
		code    int    // when not ok
		errWord string // in stderr when not ok
	}{
		{name: "pod and command", args: []string{"web", "--", "ls", "-l", "/"},
			want: execArgs{socket: "/run/tug.sock", namespace: "default", pod: "web", command: []string{"ls", "-l", "/"}}},
		{name: "flags after the pod", args: []string{"web", "-c", "side", "-n", "kube-system", "--", "sh", "-c", "echo -n x"},
			want: execArgs{socket: "/run/tug.sock", namespace: "kube-system", pod: "web", container: "side", command: []string{"sh", "-c", "echo -n x"}}},
		{name: "-it", args: []string{"-it", "web", "--", "sh"},
			want: execArgs{socket: "/run/tug.sock", namespace: "default", pod: "web", stdin: true, tty: true, command: []string{"sh"}}},
		{name: "-i -t and long names", args: []string{"--stdin", "--tty", "--container", "main", "--namespace", "ns", "--socket", "/x.sock", "web", "--", "cat"},
			want: execArgs{socket: "/x.sock", namespace: "ns", pod: "web", container: "main", stdin: true, tty: true, command: []string{"cat"}}},
		{name: "-i alone", args: []string{"web", "-i", "--", "cat"},
			want: execArgs{socket: "/run/tug.sock", namespace: "default", pod: "web", stdin: true, command: []string{"cat"}}},
		{name: "the command's flags are its own", args: []string{"web", "--", "-c", "--", "-n"},
			want: execArgs{socket: "/run/tug.sock", namespace: "default", pod: "web", command: []string{"-c", "--", "-n"}}},
		{name: "no --", args: []string{"web", "ls"}, code: 2, errWord: "the command goes after --"},
		{name: "no command", args: []string{"web", "--"}, code: 2, errWord: "no command"},
		{name: "empty command", args: []string{"web", "--", ""}, code: 2, errWord: "no command"},
		{name: "no pod", args: []string{"--", "ls"}, code: 2, errWord: "takes a pod name"},
		{name: "two pods", args: []string{"web", "db", "--", "ls"}, code: 2, errWord: "one pod name"},
		{name: "unknown flag", args: []string{"-x", "web", "--", "ls"}, code: 2, errWord: "unknown shorthand flag"},
		{name: "help", args: []string{"--help"}, code: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			got, code, ok := parseExecArgs(tt.args, "/run/tug.sock", &stdout, &stderr)
			if tt.want.pod == "" {
				if ok || code != tt.code || !strings.Contains(stderr.String(), tt.errWord) {
					t.Errorf("ok %v, code %d, stderr %q; want code %d and %q", ok, code, stderr.String(), tt.code, tt.errWord)
				}
				return
			}
			if !ok {
				t.Fatalf("refused (%d): %s", code, stderr.String())
			}
			if !slices.Equal(got.command, tt.want.command) {
				t.Errorf("command %q, want %q", got.command, tt.want.command)
			}
			got.command, tt.want.command = nil, nil
			if got.socket != tt.want.socket || got.namespace != tt.want.namespace || got.pod != tt.want.pod ||
				got.container != tt.want.container || got.stdin != tt.want.stdin || got.tty != tt.want.tty {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseRestartArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    restartArgs
		ok      bool
		errWord string
	}{
		{name: "pod", args: []string{"web"}, ok: true,
			want: restartArgs{socket: "/run/tug.sock", namespace: "default", pod: "web"}},
		{name: "one container, in any order", args: []string{"-c", "main", "web", "-n", "ns"}, ok: true,
			want: restartArgs{socket: "/run/tug.sock", namespace: "ns", pod: "web", container: "main"}},
		{name: "no pod", args: nil, errWord: "one pod name"},
		{name: "two pods", args: []string{"web", "db"}, errWord: "one pod name"},
		{name: "unknown flag", args: []string{"--all", "web"}, errWord: "unknown flag: --all"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			got, code, ok := parseRestartArgs(tt.args, "/run/tug.sock", &stdout, &stderr)
			if ok != tt.ok {
				t.Fatalf("ok %v (code %d, stderr %q), want %v", ok, code, stderr.String(), tt.ok)
			}
			if !ok {
				if code != 2 || !strings.Contains(stderr.String(), tt.errWord) {
					t.Errorf("code %d, stderr %q; want 2 and %q", code, stderr.String(), tt.errWord)
				}
				return
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
