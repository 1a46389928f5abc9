package rootfs

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/core/mount"
	"golang.org/x/sys/unix"

	"tug/internal/testutil"
)

// entry is one item of a layer: a file with content, a directory ("dir"),
// an opaque directory ("opaque"), a whiteout ("whiteout") or a symlink
// ("->target").
type entry struct{ path, what string }

func makeLayer(t *testing.T, dir string, entries []entry) {
	t.Helper()
	for _, e := range entries {
		p := filepath.Join(dir, e.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case e.what == "dir":
			err = os.Mkdir(p, 0o755)
		case e.what == "opaque":
			if err = os.Mkdir(p, 0o755); err == nil {
				err = unix.Setxattr(p, "trusted.overlay.opaque", []byte("y"), 0)
			}
		case e.what == "whiteout":
			err = unix.Mknod(p, unix.S_IFCHR, 0)
		case strings.HasPrefix(e.what, "->"):
			err = os.Symlink(e.what[2:], p)
		default:
			err = os.WriteFile(p, []byte(e.what), 0o644)
		}
		if err != nil {
			t.Fatalf("layer %s: %v", e.path, err)
		}
	}
}

// TestOverlayInPlace reads a file of an overlay layer by layer and checks
// each answer against the kernel's own overlay mount of the same layers.
func TestOverlayInPlace(t *testing.T) {
	testutil.RequireRoot(t)
	tests := []struct {
		name   string
		layers [][]entry // upper first
		want   string    // content, or "" for not found
	}{
		{name: "lowest layer", layers: [][]entry{{{"tmp", "dir"}}, {{"etc/passwd", "root"}}}, want: "root"},
		{name: "upper wins", layers: [][]entry{{{"etc/passwd", "new"}}, {{"etc/passwd", "old"}}}, want: "new"},
		{name: "whiteout of the file", layers: [][]entry{{{"etc/passwd", "whiteout"}}, {{"etc/passwd", "old"}}}, want: ""},
		{name: "whiteout of its directory", layers: [][]entry{{{"etc", "whiteout"}}, {{"etc/passwd", "old"}}}, want: ""},
		{name: "opaque directory hides lower", layers: [][]entry{{{"etc", "opaque"}, {"etc/group", "g"}}, {{"etc/passwd", "old"}}}, want: ""},
		{name: "opaque directory keeps its own", layers: [][]entry{{{"etc", "opaque"}, {"etc/passwd", "mine"}}, {{"etc/passwd", "old"}}}, want: "mine"},
		{name: "middle layer", layers: [][]entry{{{"a", "x"}}, {{"etc/passwd", "mid"}}, {{"etc/passwd", "low"}}}, want: "mid"},
		{name: "a directory is no file", layers: [][]entry{{{"etc/passwd", "dir"}}, {{"etc/passwd", "old"}}}, want: ""},
		{name: "a file hides a directory on the way", layers: [][]entry{{{"etc", "file"}}, {{"etc/passwd", "old"}}}, want: ""},
		{name: "absent everywhere", layers: [][]entry{{{"a", "x"}}, {{"b", "y"}}}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			var dirs []string
			for i, l := range tt.layers {
				d := filepath.Join(base, "l"+string(rune('0'+i)))
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
				makeLayer(t, d, l)
				dirs = append(dirs, d)
			}
			// The first layer as upper, with a work directory: the mount
			// a container's active snapshot has.
			work := filepath.Join(base, "work")
			if err := os.Mkdir(work, 0o755); err != nil {
				t.Fatal(err)
			}
			m := mount.Mount{Type: "overlay", Source: "overlay", Options: []string{
				"workdir=" + work, "upperdir=" + dirs[0], "lowerdir=" + strings.Join(dirs[1:], ":"),
			}}
			got := read(t, []mount.Mount{m})
			if got != tt.want {
				t.Errorf("in place: %q, want %q", got, tt.want)
			}
			kernel := readMounted(t, m)
			if kernel != tt.want {
				t.Errorf("the kernel's overlay: %q, want %q (the case is wrong)", kernel, tt.want)
			}
		})
	}
}

func read(t *testing.T, mounts []mount.Mount) string {
	t.Helper()
	var got string
	err := View(context.Background(), mounts, func(fsys fs.FS) error {
		b, err := fs.ReadFile(fsys, "etc/passwd")
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		got = string(b)
		return err
	})
	if err != nil {
		t.Fatalf("View: %v", err)
	}
	return got
}

func readMounted(t *testing.T, m mount.Mount) string {
	t.Helper()
	var got string
	err := mount.WithReadonlyTempMount(context.Background(), []mount.Mount{m}, func(root string) error {
		b, err := os.ReadFile(filepath.Join(root, "etc/passwd"))
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.EISDIR) || errors.Is(err, unix.ENOTDIR) {
			return nil
		}
		got = string(b)
		return err
	})
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	return got
}

// TestSymlinkStaysInside: a symlink in a layer resolves against the merged
// root (through a temporary mount), never against the host. A relative link
// reads the image's file; an absolute one is refused, as os.Root refuses
// it, rather than read from the host.
func TestSymlinkStaysInside(t *testing.T) {
	testutil.RequireRoot(t)
	tests := []struct {
		name, link string
		want       string // "" for an error
	}{
		{name: "relative", link: "../usr/share/passwd", want: "image's"},
		{name: "absolute", link: "/etc/hostname"},
		{name: "out of the root", link: "../../../../../../etc/hostname"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			upper, lower, work := filepath.Join(base, "u"), filepath.Join(base, "l"), filepath.Join(base, "w")
			for _, d := range []string{upper, lower, work} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			makeLayer(t, lower, []entry{{"etc/passwd", "->" + tt.link}, {"usr/share/passwd", "image's"}})
			for _, m := range []mount.Mount{
				{Type: "overlay", Source: "overlay", Options: []string{"workdir=" + work, "upperdir=" + upper, "lowerdir=" + lower}},
				{Type: "bind", Source: lower, Options: []string{"rbind", "ro"}},
			} {
				var got string
				err := View(context.Background(), []mount.Mount{m}, func(fsys fs.FS) error {
					b, err := fs.ReadFile(fsys, "etc/passwd")
					got = string(b)
					return err
				})
				if tt.want != "" && (err != nil || got != tt.want) {
					t.Errorf("%s: %q, %v; want %q", m.Type, got, err, tt.want)
				}
				if tt.want == "" && err == nil {
					t.Errorf("%s: read %q through a link out of the image, want an error", m.Type, got)
				}
			}
		})
	}
}

func TestInPlace(t *testing.T) {
	tests := []struct {
		name   string
		mounts []mount.Mount
		want   []string
	}{
		{name: "bind", mounts: []mount.Mount{{Type: "bind", Source: "/s"}}, want: []string{"/s"}},
		{name: "overlay with upper", mounts: []mount.Mount{{Type: "overlay", Options: []string{"index=off", "workdir=/w", "upperdir=/u", "lowerdir=/a:/b"}}}, want: []string{"/u", "/a", "/b"}},
		{name: "overlay view", mounts: []mount.Mount{{Type: "overlay", Options: []string{"lowerdir=/a:/b"}}}, want: []string{"/a", "/b"}},
		{name: "mount manager reference", mounts: []mount.Mount{{Type: "overlay", Options: []string{"lowerdir={{ mount 0 }}"}}}},
		{name: "other type", mounts: []mount.Mount{{Type: "ext4", Source: "/dev/x"}}},
		{name: "two mounts", mounts: []mount.Mount{{Type: "bind", Source: "/a"}, {Type: "bind", Source: "/b"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := inPlace(tt.mounts)
			if ok != (tt.want != nil) || strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("inPlace = %v, %v; want %v", got, ok, tt.want)
			}
		})
	}
}
