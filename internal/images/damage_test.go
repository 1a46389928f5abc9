package images

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/containerd/v2/plugins/content/local"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"tug/internal/pod"
)

func TestCheckEntrypointIn(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, root string)
		args0   string
		env     []string
		cwd     string
		damaged bool
	}{
		{name: "intact binary", args0: "/bin/busybox", setup: binary("bin/busybox", "\x7fELF....")},
		{name: "empty binary", args0: "/bin/busybox", setup: binary("bin/busybox", ""), damaged: true},
		{name: "NUL-filled binary", args0: "/bin/busybox", setup: binary("bin/busybox", "\x00\x00\x00\x00\x00\x00"), damaged: true},
		{name: "short NUL-filled binary", args0: "/bin/busybox", setup: binary("bin/busybox", "\x00"), damaged: true},
		{name: "missing binary", args0: "/bin/busybox", setup: binary("bin/other", "\x7fELF"), damaged: true},
		{name: "script", args0: "/run.sh", setup: binary("run.sh", "#!/bin/sh\n")},
		{name: "other format (binfmt_misc)", args0: "/app.jar", setup: binary("app.jar", "PK\x03\x04")},
		{name: "PATH search finds the second dir", args0: "sh", env: []string{"PATH=/usr/bin:/bin"},
			setup: binary("bin/sh", "\x7fELF")},
		{name: "PATH search, empty", args0: "sh", env: []string{"PATH=/usr/bin:/bin"},
			setup: binary("bin/sh", ""), damaged: true},
		{name: "default PATH", args0: "sh", setup: binary("usr/bin/sh", "\x7fELF")},
		{name: "absolute symlink to an empty binary", args0: "/bin/sh", damaged: true, setup: func(t *testing.T, root string) {
			binary("bin/busybox", "")(t, root)
			symlink("/bin/busybox", "bin/sh")(t, root)
		}},
		{name: "relative symlink to an intact binary", args0: "sh", setup: func(t *testing.T, root string) {
			binary("bin/busybox", "\x7fELF")(t, root)
			symlink("busybox", "bin/sh")(t, root)
		}},
		{name: "symlink climbing out stays in root", args0: "/bin/sh", damaged: true, setup: func(t *testing.T, root string) {
			binary("bin/busybox", "")(t, root)
			symlink("../../../../bin/busybox", "bin/sh")(t, root)
		}},
		{name: "symlinked directory", args0: "/bin/sh", setup: func(t *testing.T, root string) {
			binary("usr/bin/sh", "\x7fELF")(t, root)
			symlink("usr/bin", "bin")(t, root)
		}},
		{name: "relative path with a slash uses cwd", args0: "./app", cwd: "/srv", setup: binary("srv/app", "\x7fELF")},
		{name: "symlink loop", args0: "/bin/sh", damaged: true, setup: func(t *testing.T, root string) {
			binary("bin/x", "\x7fELF")(t, root)
			symlink("/bin/sh", "bin/sh")(t, root)
		}},
		{name: "no command", args0: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if tt.setup != nil {
				tt.setup(t, root)
			}
			err := checkEntrypointIn(root, tt.args0, tt.env, tt.cwd)
			if tt.args0 == "" {
				err = nil // CheckEntrypoint returns before looking
			}
			if got := errors.Is(err, pod.ErrImageDamaged); got != tt.damaged {
				t.Errorf("checkEntrypointIn(%q) = %v, damaged %v, want %v", tt.args0, err, got, tt.damaged)
			}
		})
	}
}

func binary(rel, data string) func(*testing.T, string) {
	return func(t *testing.T, root string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func symlink(target, rel string) func(*testing.T, string) {
	return func(t *testing.T, root string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRemovalOrder(t *testing.T) {
	infos := map[string]snapshots.Info{
		"base":       {Name: "base", Kind: snapshots.KindCommitted},
		"top":        {Name: "top", Parent: "base", Kind: snapshots.KindCommitted},
		"other":      {Name: "other", Parent: "base", Kind: snapshots.KindCommitted}, // another image on the same base
		"ctr-a":      {Name: "ctr-a", Parent: "top", Kind: snapshots.KindActive},
		"ctr-b":      {Name: "ctr-b", Parent: "other", Kind: snapshots.KindActive},
		"remap":      {Name: "remap", Parent: "top", Kind: snapshots.KindCommitted},
		"ctr-remap":  {Name: "ctr-remap", Parent: "remap", Kind: snapshots.KindActive},
		"unrelated":  {Name: "unrelated", Kind: snapshots.KindCommitted},
		"unrelated2": {Name: "unrelated2", Parent: "unrelated", Kind: snapshots.KindActive},
	}
	got := removalOrder(infos, []string{"base", "top"})
	want := map[string]bool{"base": true, "top": true, "other": true, "ctr-a": true, "ctr-b": true, "remap": true, "ctr-remap": true}
	if len(got) != len(want) {
		t.Fatalf("removalOrder = %v, want the %d snapshots of the chain and its descendants", got, len(want))
	}
	for _, n := range got {
		if !want[n] {
			t.Errorf("removalOrder removes %s, which does not descend from the chain", n)
		}
		if p := infos[n].Parent; p != "" && want[p] && slices.Index(got, p) < slices.Index(got, n) {
			t.Errorf("removalOrder removes %s before its child %s: %v", p, n, got)
		}
	}
	if got := removalOrder(infos, []string{"gone"}); len(got) != 0 {
		t.Errorf("removalOrder of a chain that is not there = %v, want none", got)
	}
}

func TestVerifyBlob(t *testing.T) {
	data := []byte("a layer's bytes")
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: digestOf(data), Size: int64(len(data))}
	blobPath := func(root string) string { return filepath.Join(root, "blobs", "sha256", desc.Digest.Encoded()) }
	tests := []struct {
		name    string
		damage  func(t *testing.T, root string)
		damaged bool
	}{
		{name: "intact"},
		{name: "missing", damaged: true, damage: func(t *testing.T, root string) { must(t, os.Remove(blobPath(root))) }},
		{name: "empty", damaged: true, damage: func(t *testing.T, root string) { must(t, os.Truncate(blobPath(root), 0)) }},
		{name: "NUL-filled", damaged: true, damage: func(t *testing.T, root string) {
			must(t, os.WriteFile(blobPath(root), make([]byte, len(data)), 0o444))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			root := t.TempDir()
			cs, err := local.NewStore(root)
			must(t, err)
			must(t, content.WriteBlob(ctx, cs, "blob", bytes.NewReader(data), desc))
			if tt.damage != nil {
				tt.damage(t, root)
			}
			err = verifyBlob(ctx, cs, desc)
			if got := errors.Is(err, pod.ErrImageDamaged); got != tt.damaged {
				t.Errorf("verifyBlob = %v, damaged %v, want %v", err, got, tt.damaged)
			}
		})
	}
}

func digestOf(b []byte) digest.Digest { return digest.FromBytes(b) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
