package main

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tug/internal/config"
	"tug/internal/userns"
)

// TestUserNamespaceRangeRules holds config's check of
// --user-namespace-range to userns.ParseRange: a range config accepts is
// one tug can open, and the other way round.
func TestUserNamespaceRangeRules(t *testing.T) {
	for _, r := range []string{userns.DefaultRange, "131072/65536", "0/65536", "65536/65535", "65536/4294901760", "65536", "x/y"} {
		cfg := config.Default()
		cfg.UserNamespaceRange = r
		_, perr := userns.ParseRange(r)
		cerr := cfg.Validate()
		if (perr == nil) != (cerr == nil) {
			t.Errorf("%q: userns.ParseRange: %v; config.Validate: %v", r, perr, cerr)
		}
	}
	if config.Default().UserNamespaceRange != "" {
		t.Errorf("config's default range %q, want \"\" (tug's entry of the subuid and subgid files, else userns.DefaultRange)", config.Default().UserNamespaceRange)
	}
}

// TestNewUserNamespaces: the range comes from tug's entries when there
// are some, and one overlapping another user's IDs stops tug with an
// error naming the file, the entry and the IDs.
func TestNewUserNamespaces(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg := config.Default()
	cfg.RootDir = t.TempDir()
	cfg.SubUIDFile = write("subuid", "alice:100000:65536\ntug:2147483648:655360\n")
	cfg.SubGIDFile = write("subgid", "tug:2147483648:655360\n")
	cfg.LoginDefsFile = filepath.Join(dir, "no-login.defs")
	a, err := newUserNamespaces(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if m, err := a.Mapping("pod"); err != nil || m.HostID != 2147483648 {
		t.Errorf("first block %v, %v; want tug's entry's first, 2147483648", m, err)
	}
	cfg.UserNamespaceRange = "65536/131072"
	_, err = newUserNamespaces(cfg, slog.New(slog.DiscardHandler))
	if !errors.Is(err, userns.ErrOverlap) {
		t.Fatalf("an overlapping range: %v, want userns.ErrOverlap", err)
	}
	for _, want := range []string{cfg.SubUIDFile + `:1: "alice:100000:65536"`, "100000-165535", "65536/131072"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %q: %v", want, err)
		}
	}
}
