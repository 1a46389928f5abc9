package tuglog

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestPriorityHandler(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(newPriorityHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})).
		With("component", "test")
	log.Error("e", "err", "boom")
	log.Warn("w")
	log.Info("i")
	log.WithGroup("g").Debug("d", "k", "v")
	log.Log(t.Context(), slog.LevelError+4, "beyond error")
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	tests := []struct {
		prefix, msg string
	}{
		{"<3>", "msg=e component=test err=boom"},
		{"<4>", "msg=w component=test"},
		{"<6>", "msg=i component=test"},
		{"<7>", "msg=d component=test g.k=v"},
		{"<3>", `msg="beyond error"`},
	}
	if len(lines) != len(tests) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(tests), buf.String())
	}
	for i, tt := range tests {
		if !strings.HasPrefix(lines[i], tt.prefix+"time=") || !strings.Contains(lines[i], tt.msg) {
			t.Errorf("line %d = %q, want prefix %s and %q", i, lines[i], tt.prefix, tt.msg)
		}
	}
}

func TestPriorityHandlerLevel(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(newPriorityHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	log.Info("hidden")
	log.Warn("shown")
	if got := buf.String(); strings.Contains(got, "hidden") || !strings.HasPrefix(got, "<4>") {
		t.Errorf("output at level warn = %q", got)
	}
}

// streamFile is a file standing for stderr, and its device and inode.
func streamFile(t *testing.T) (*os.File, syscall.Stat_t) {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	return f, st
}

func TestIsJournalStream(t *testing.T) {
	f, st := streamFile(t)
	tests := []struct {
		name string
		env  string
		want bool
	}{
		{"unset", "", false},
		{"this file", fmt.Sprintf("%d:%d", st.Dev, st.Ino), true},
		{"another inode", fmt.Sprintf("%d:%d", st.Dev, st.Ino+1), false},
		{"another device", fmt.Sprintf("%d:%d", st.Dev+1, st.Ino), false},
		{"malformed", "journal", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isJournalStream(f, tt.env); got != tt.want {
				t.Errorf("isJournalStream(%q) = %v, want %v", tt.env, got, tt.want)
			}
		})
	}
}

func TestNewJournalStream(t *testing.T) {
	f, st := streamFile(t)
	stream := fmt.Sprintf("%d:%d", st.Dev, st.Ino)
	New(f, "info", stream).Error("failed")
	var buf bytes.Buffer
	New(&buf, "info", stream).Error("failed")
	got, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(got, []byte("<3>time=")) {
		t.Errorf("to the journal stream: %q, want a <3> prefix", got)
	}
	if !bytes.HasPrefix(buf.Bytes(), []byte("time=")) {
		t.Errorf("to another writer: %q, want no prefix", buf.String())
	}
}
