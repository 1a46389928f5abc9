package volume

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"tug/internal/objects"
	"tug/internal/pod"
)

// objectVolumePath is where a configMap, secret, projected or downwardAPI
// volume's files are written: RootDir/pods/<uid>/volumes/objects/<name>.
func (mgr *Manager) objectVolumePath(uid, volume string) string {
	return filepath.Join(mgr.podDir(uid), "volumes", "objects", volume)
}

// claimPath is the local directory backing the PersistentVolumeClaim
// claim of pod p: a claim belongs to the source that defines it (see
// claimDir). It is not below the pod's directory, so it outlives the pod
// (CleanupPod never touches it).
func (mgr *Manager) claimPath(p *pod.Pod, claim string) string {
	return mgr.claimDir(pod.ClaimKey{Source: p.Metadata.Source, Namespace: p.Metadata.Namespace, Name: claim})
}

// claimDir is the directory of claim k: RootDir/claims/<namespace>/<claim>
// for the manifest directory's source (where its claims have always been,
// so their data stays where it is), RootDir/source-claims/<source id>/
// <namespace>/<claim> for any other. The source id is a hash of the
// source's name: one path component, whatever the name holds.
func (mgr *Manager) claimDir(k pod.ClaimKey) string {
	if k.Source == mgr.cfg.FileSource {
		return filepath.Join(mgr.cfg.RootDir, "claims", k.Namespace, k.Name)
	}
	return filepath.Join(mgr.cfg.RootDir, sourceClaimsDir, sourceID(k.Source), k.Namespace, k.Name)
}

// sourceClaimsDir holds, below RootDir, the claims of the sources other
// than the manifest directory, one directory per source.
const sourceClaimsDir = "source-claims"

// sourceID names a source in a path: the first 16 bytes of the SHA-256 of
// its name, in hex.
func sourceID(source string) string {
	sum := sha256.Sum256([]byte(source))
	return hex.EncodeToString(sum[:16])
}

// NodeInfo is what the downward API reads of the node for pod p.
func (mgr *Manager) NodeInfo(sb pod.Sandbox) objects.NodeInfo {
	n := objects.NodeInfo{NodeName: mgr.cfg.NodeName, PodIP: sb.IP, HostIP: sb.HostIP, CPUMillis: int64(runtime.NumCPU()) * 1000}
	if n.NodeName == "" {
		n.NodeName, _ = os.Hostname()
	}
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		n.MemoryBytes = int64(si.Totalram) * int64(si.Unit)
	}
	return n
}

// prepareObjectVolume writes (or updates in place, atomically) the files
// of a configMap, secret, projected or downwardAPI volume. A volume that
// holds secret data is a tmpfs (mode 0700 at its root), so secrets never
// reach the disk. A missing object is an error wrapping
// pod.ErrCreateContainerConfig that names it.
func (mgr *Manager) prepareObjectVolume(p *pod.Pod, v *pod.Volume, node objects.NodeInfo, idmap *pod.IDMapping) error {
	if err := CheckName("volume name", v.Name); err != nil {
		return err
	}
	files, secret, err := objects.VolumeFiles(p, v, node)
	if err != nil {
		return err
	}
	dir := mgr.objectVolumePath(p.Metadata.UID, v.Name)
	if err := os.MkdirAll(filepath.Dir(dir), 0o750); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if secret {
		mounted, err := isMountPoint(dir)
		if err != nil {
			return err
		}
		if !mounted {
			if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755"); err != nil {
				return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
			}
		}
	}
	changed, err := writeAtomic(dir, files)
	if err != nil {
		return fmt.Errorf("write files: %w", err)
	}
	if changed {
		mgr.log.Info("volume files written", "pod", p.FullName(), "uid", p.Metadata.UID, "file", v.Name, "files", len(files))
	}
	return mgr.applyFSGroup(p, idmap, dir, true, changed)
}

// prepareClaim makes sure the claim the volume names is defined and
// creates its directory (world-writable, as an emptyDir) if it is new.
func (mgr *Manager) prepareClaim(p *pod.Pod, v *pod.Volume) error {
	name := v.PersistentVolumeClaim.ClaimName
	if err := CheckName("claim name", name); err != nil {
		return err
	}
	if _, err := objects.Claim(p, name); err != nil {
		return err
	}
	dir := mgr.claimPath(p, name)
	if err := os.MkdirAll(filepath.Dir(dir), 0o750); err != nil {
		return err
	}
	created, err := mkdirShared(dir)
	if err != nil {
		return err
	}
	if created {
		mgr.log.Info("claim directory created", "pod", p.FullName(), "file", dir)
	}
	o := p.Object(pod.KindClaim, name)
	return markRetained(dir, o != nil && o.Retain)
}

// retainedPrefix starts the name of the mark beside a claim's directory
// that keeps it once no source defines it (see pod.Object.Retain):
// "<namespace dir>/.retained.<claim>". A claim's name never starts with a
// dot, so a mark is never taken for a claim.
const retainedPrefix = ".retained."

// retainedMark is the mark of the claim directory dir.
func retainedMark(dir string) string {
	return filepath.Join(filepath.Dir(dir), retainedPrefix+filepath.Base(dir))
}

// markRetained creates (retain) or removes the mark of claim directory
// dir, durably: the mark is empty, and its directory is synced.
func markRetained(dir string, retain bool) error {
	mark := retainedMark(dir)
	_, err := os.Lstat(mark)
	switch {
	case retain && errors.Is(err, fs.ErrNotExist):
		f, err := os.OpenFile(mark, os.O_CREATE|os.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return fmt.Errorf("mark claim retained: %w", err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("mark claim retained: %w", err)
		}
	case !retain && err == nil:
		if err := os.Remove(mark); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("unmark claim retained: %w", err)
		}
	default:
		if retain || errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("claim retained mark: %w", err)
	}
	return syncDir(filepath.Dir(dir))
}

// syncDir fsyncs directory dir, so that a file created or removed in it
// survives a power cut.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// RemoveClaims removes the directory of every claim under RootDir/claims
// and RootDir/source-claims that is not in keep (the caller passes the
// claims the sources define and those the current pods mount, each with
// its source) and not marked retained (a StatefulSet's claim, which
// outlives it; the mark of a directory removed by hand is removed). A directory RootDir/claims/<namespace>/<claim> is also kept
// while any source defines that namespace and name: an earlier tug kept
// every source's claims there, and data nobody can attribute is never
// removed. It returns the directories removed.
func (mgr *Manager) RemoveClaims(keep map[pod.ClaimKey]bool) ([]string, error) {
	kept := map[string]bool{}
	for k := range keep {
		kept[mgr.claimDir(k)] = true
		kept[filepath.Join(mgr.cfg.RootDir, "claims", k.Namespace, k.Name)] = true
	}
	var removed []string
	var errs []error
	removeUnder := func(root string) {
		nss, err := os.ReadDir(root)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			return
		}
		for _, ns := range nss {
			if !ns.IsDir() {
				continue
			}
			claims, err := os.ReadDir(filepath.Join(root, ns.Name()))
			if err != nil {
				errs = append(errs, err)
				continue
			}
			for _, c := range claims {
				dir := filepath.Join(root, ns.Name(), c.Name())
				if claim, ok := strings.CutPrefix(c.Name(), retainedPrefix); ok {
					// The mark of a claim removed by hand goes too.
					if _, err := os.Lstat(filepath.Join(root, ns.Name(), claim)); errors.Is(err, fs.ErrNotExist) {
						if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
							errs = append(errs, err)
						}
					}
					continue
				}
				if strings.HasPrefix(c.Name(), ".") {
					continue // not a claim: a claim's name never starts with a dot
				}
				if kept[dir] {
					continue
				}
				if _, err := os.Lstat(retainedMark(dir)); err == nil {
					continue // retained: removed by hand only
				}
				if err := removeTree(dir); err != nil {
					errs = append(errs, err)
					continue
				}
				removed = append(removed, dir)
			}
		}
	}
	removeUnder(filepath.Join(mgr.cfg.RootDir, "claims"))
	sources, err := os.ReadDir(filepath.Join(mgr.cfg.RootDir, sourceClaimsDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	for _, s := range sources {
		if s.IsDir() {
			removeUnder(filepath.Join(mgr.cfg.RootDir, sourceClaimsDir, s.Name()))
		}
	}
	return removed, errors.Join(errs...)
}

// dataDir is the current version's directory of an object volume (the
// target of its ..data link), for a subPath mount: as in Kubernetes, such
// a mount does not see later updates.
func (mgr *Manager) dataDir(uid, volume string) (string, error) {
	dir := mgr.objectVolumePath(uid, volume)
	target, err := os.Readlink(filepath.Join(dir, dataLink))
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, filepath.Base(target)), nil
}
