package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestContainerJournal(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "socket")
	l, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		driver, socket string
		sender         bool
		err            string
	}{
		{driver: "file", socket: filepath.Join(dir, "missing")},
		{driver: "binary", socket: filepath.Join(dir, "missing")},
		{driver: "journald", socket: sock, sender: true},
		{driver: "file+journald", socket: sock, sender: true},
		{driver: "journald", socket: filepath.Join(dir, "missing"), err: "container-log-driver journald: journald's socket " + filepath.Join(dir, "missing")},
		{driver: "file+journald", socket: plain, err: "not a socket (is systemd-journald running?)"},
	}
	for _, tt := range tests {
		t.Run(tt.driver+" "+filepath.Base(tt.socket), func(t *testing.T) {
			s, err := containerJournal(tt.driver, tt.socket)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (s != nil) != tt.sender {
				t.Errorf("sender %v, want one: %v", s, tt.sender)
			}
		})
	}
}
