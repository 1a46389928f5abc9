package volume

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tug/internal/objects"
)

// The kubelet's atomic writer, for configMap, secret, projected and
// downwardAPI volumes: the files of one version live in a hidden directory
// "..<timestamp>.<random>", the symlink "..data" names the current one, and
// each top-level entry the container sees is a symlink "<name>" ->
// "..data/<name>". An update writes a new hidden directory, then renames a
// new "..data" symlink over the old one (atomic), so a reader sees either
// the old set of files or the new one, never a mix, and the container
// (which has the volume directory bind-mounted) sees it without a restart.

const (
	dataLink    = "..data"
	dataLinkTmp = "..data_tmp"
)

// writeAtomic makes dir hold exactly files. It returns whether anything
// changed: a call with the content already there writes nothing.
func writeAtomic(dir string, files map[string]objects.VolumeFile) (bool, error) {
	old, err := os.Readlink(filepath.Join(dir, dataLink))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	if old != "" {
		same, err := sameFiles(filepath.Join(dir, old), files)
		if err != nil {
			return false, err
		}
		if same {
			return false, nil
		}
	}
	ts, err := os.MkdirTemp(dir, ".."+time.Now().UTC().Format("2006_01_02_15_04_05.")) // 0700
	if err != nil {
		return false, err
	}
	if err := os.Chmod(ts, 0o755); err != nil {
		return false, err
	}
	for rel, f := range files {
		p := filepath.Join(ts, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return false, err
		}
		if err := os.WriteFile(p, f.Data, f.Mode); err != nil {
			return false, err
		}
		if err := os.Chmod(p, f.Mode); err != nil { // past the umask
			return false, err
		}
	}
	tmp := filepath.Join(dir, dataLinkTmp)
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		return false, err
	}
	if err := os.Rename(tmp, filepath.Join(dir, dataLink)); err != nil {
		return false, err
	}
	// The user-visible links: add the new top-level names, drop the gone.
	top := map[string]bool{}
	for rel := range files {
		name, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
		top[name] = true
	}
	for name := range top {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); errors.Is(err, fs.ErrNotExist) {
			if err := os.Symlink(filepath.Join(dataLink, name), link); err != nil {
				return false, err
			}
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, ".."):
			if name != dataLink && name != filepath.Base(ts) && e.IsDir() {
				if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
					return true, err
				}
			}
		case !top[name] && e.Type()&fs.ModeSymlink != 0:
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return true, err
			}
		}
	}
	return true, nil
}

// sameFiles reports whether the directory ts holds exactly files (data and
// mode).
func sameFiles(ts string, files map[string]objects.VolumeFile) (bool, error) {
	n := 0
	same := true
	err := filepath.WalkDir(ts, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(ts, p)
		if err != nil {
			return err
		}
		f, ok := files[rel]
		if !ok {
			same = false
			return filepath.SkipAll
		}
		n++
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode().Perm() != f.Mode.Perm() || info.Size() != int64(len(f.Data)) {
			same = false
			return filepath.SkipAll
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !bytes.Equal(data, f.Data) {
			same = false
			return filepath.SkipAll
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", ts, err)
	}
	return same && n == len(files), nil
}
