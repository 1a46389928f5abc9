package volume

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tug/internal/pod"
)

// TestReadEnvFile: an env file is read from its emptyDir, beneath it,
// never through a symlink a container may have put there, and only when
// it is a regular file of at most 64 KiB.
func TestReadEnvFile(t *testing.T) {
	m := testManager(t)
	outside := filepath.Join(t.TempDir(), "secret.env")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(outside, []byte("SECRET=1\n"), 0o600))
	p := volumePod(t, filepath.Join(t.TempDir(), "data"))
	must(m.Prepare(p, pod.Sandbox{IP: "10.244.0.7"}))
	dir := m.emptyDirPath(p.Metadata.UID, "scratch")
	must(os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "sub", "app.env"), []byte("TOKEN=abc\n"), 0o644))
	must(os.Symlink(outside, filepath.Join(dir, "link.env")))
	must(os.Symlink(filepath.Dir(outside), filepath.Join(dir, "linkdir")))
	must(os.WriteFile(filepath.Join(dir, "big.env"), []byte(strings.Repeat("x", pod.MaxEnvFileSize+1)), 0o644))

	tests := []struct {
		volume, path string
		want         string
		wantErr      string
		notExist     bool
	}{
		{volume: "scratch", path: "sub/app.env", want: "TOKEN=abc\n"},
		{volume: "scratch", path: "./sub//app.env", want: "TOKEN=abc\n"},
		{volume: "scratch", path: "none.env", notExist: true},
		{volume: "scratch", path: "nodir/app.env", notExist: true},
		{volume: "scratch", path: "link.env", wantErr: "symlink"},
		{volume: "scratch", path: "linkdir/secret.env", wantErr: "symlink"},
		{volume: "scratch", path: "sub", wantErr: "not a regular file"},
		{volume: "scratch", path: "big.env", wantErr: "more than 65536 bytes"},
		{volume: "scratch", path: "../scratch/sub/app.env", wantErr: ".."},
		{volume: "../scratch", path: "sub/app.env", wantErr: "invalid volume name"},
	}
	for _, tt := range tests {
		t.Run(tt.volume+"/"+tt.path, func(t *testing.T) {
			got, err := m.ReadEnvFile(p, tt.volume, tt.path)
			switch {
			case tt.notExist:
				if !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("err = %v, want fs.ErrNotExist", err)
				}
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v (read %q), want one containing %q", err, got, tt.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case string(got) != tt.want:
				t.Errorf("read %q, want %q", got, tt.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "nodir")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("reading created a directory: %v", err)
	}
}
