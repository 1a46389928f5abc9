package podruntime

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"tug/internal/volume"
)

// TestPodDirs: the UIDs of pod directories and of log directories
// (<namespace>_<pod>_<uid>, nothing else) are listed; removing one UID
// removes its pod directory and every log directory of it, and nothing of
// another UID.
func TestPodDirs(t *testing.T) {
	root, logs := t.TempDir(), t.TempDir()
	r := &Runtime{cfg: Config{RootDir: root, LogsDir: logs}, volumes: volume.New(volume.Config{RootDir: root})}
	if uids, err := r.PodDirUIDs(); err != nil || len(uids) != 0 {
		t.Fatalf("PodDirUIDs() with no pods directory = %v, %v, want none", uids, err)
	}
	for _, d := range []string{
		filepath.Join(root, "pods", "uid-a", "volumes", "empty-dir", "scratch"),
		filepath.Join(root, "pods", "uid-b"),
		filepath.Join(logs, "default_web_uid-a", "main"),
		filepath.Join(logs, "other_web_uid-a"),
		filepath.Join(logs, "default_db_uid-c", "main"),
		filepath.Join(logs, "not-a-pod-log-dir"),
		filepath.Join(logs, "a_b_c_d"),
	} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(logs, "default_file_uid-f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	uids, err := r.PodDirUIDs()
	if want := []string{"uid-a", "uid-b", "uid-c"}; err != nil || !slices.Equal(uids, want) {
		t.Fatalf("PodDirUIDs() = %v, %v, want %v", uids, err, want)
	}
	if err := r.RemovePodDirs("uid-a"); err != nil {
		t.Fatal(err)
	}
	if err := r.RemovePodDirs("uid-c"); err != nil {
		t.Fatal(err)
	}
	if err := r.RemovePodDirs("uid-none"); err != nil {
		t.Errorf("RemovePodDirs of a UID with nothing = %v, want nil", err)
	}
	if err := r.RemovePodDirs(".."); err == nil {
		t.Error("RemovePodDirs(\"..\") = nil, want an error")
	}
	uids, err = r.PodDirUIDs()
	if want := []string{"uid-b"}; err != nil || !slices.Equal(uids, want) {
		t.Errorf("after removing uid-a and uid-c: PodDirUIDs() = %v, %v, want %v", uids, err, want)
	}
	for _, keep := range []string{"not-a-pod-log-dir", "a_b_c_d", "default_file_uid-f"} {
		if _, err := os.Stat(filepath.Join(logs, keep)); err != nil {
			t.Errorf("%s was removed: %v", keep, err)
		}
	}
}
