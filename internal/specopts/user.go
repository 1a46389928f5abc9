package specopts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/moby/sys/user"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"tug/internal/pod"
	"tug/internal/rootfs"
)

// defaultPath is the environment of an image whose config has none.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// WithImageConfig applies what an image's config says of its process, as
// containerd and Docker do: its environment (or a default PATH), ENTRYPOINT
// followed by CMD, and its working directory (or "/"). The image's USER is
// resolved with the container's securityContext by withUser.
func WithImageConfig(img ocispec.ImageConfig) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		s.Process.Env = []string{defaultPath}
		if len(img.Env) > 0 {
			s.Process.Env = slices.Clone(img.Env)
		}
		s.Process.Args = append(slices.Clone(img.Entrypoint), img.Cmd...)
		s.Process.Cwd = img.WorkingDir
		if s.Process.Cwd == "" {
			s.Process.Cwd = "/"
		}
		return nil
	}
}

// withUser sets the process's uid, gid and supplementary groups from the
// image's USER (imageUser, "" for root) and the securityContext, reading
// the image's /etc/passwd and /etc/group once:
//   - USER is "user", "uid", "user:group", "uid:gid", "uid:group" or
//     "user:gid"; a name must be in the image's files, a uid alone takes its
//     primary group from /etc/passwd (0 if it is not there);
//   - runAsUser replaces the uid, and the gid with runAsGroup or else the
//     user's primary group; runAsGroup alone keeps the uid and changes only
//     the group;
//   - the supplementary groups are those /etc/group lists the final user's
//     name in (not the group of the same name), after the primary group.
func withUser(imageUser string, sc *pod.SecurityContext) oci.SpecOpts {
	return func(ctx context.Context, cl oci.Client, c *containers.Container, s *oci.Spec) error {
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		return withRootFS(ctx, cl, c, s, func(root fs.FS) error {
			var uid, gid uint32
			member := "root" // whose supplementary groups: a name or a uid
			if imageUser != "" {
				var err error
				if uid, gid, err = resolveUser(root, imageUser); err != nil {
					return fmt.Errorf("set user %q: %w", imageUser, err)
				}
				member = strconv.FormatUint(uint64(uid), 10)
			}
			if sc != nil && (sc.RunAsUser != nil || sc.RunAsGroup != nil) {
				spec := strconv.FormatUint(uint64(uid), 10)
				if sc.RunAsUser != nil {
					spec = strconv.FormatInt(*sc.RunAsUser, 10)
				}
				member = spec
				if sc.RunAsGroup != nil {
					spec += ":" + strconv.FormatInt(*sc.RunAsGroup, 10)
				}
				var err error
				if uid, gid, err = resolveUser(root, spec); err != nil {
					return fmt.Errorf("set user %q: %w", spec, err)
				}
			}
			groups, err := supplementaryGroups(root, member)
			if err != nil {
				return fmt.Errorf("set supplementary groups of %s: %w", member, err)
			}
			s.Process.User.UID, s.Process.User.GID = uid, gid
			s.Process.User.AdditionalGids = withPrimary(gid, groups)
			return nil
		})
	}
}

// withRootFS calls fn with the container's root file system: its
// snapshot's mounts, or the spec's root path when it has no snapshot.
func withRootFS(ctx context.Context, cl oci.Client, c *containers.Container, s *oci.Spec, fn func(fs.FS) error) error {
	if c.Snapshotter == "" && c.SnapshotKey == "" {
		if s.Root == nil || !filepath.IsAbs(s.Root.Path) {
			return errors.New("the root file system needs an absolute path")
		}
		return rootfs.Dir(s.Root.Path, fn)
	}
	if c.Snapshotter == "" || c.SnapshotKey == "" {
		return errors.New("the container has no snapshot of its root file system")
	}
	mounts, err := cl.SnapshotService(c.Snapshotter).Mounts(ctx, c.SnapshotKey)
	if err != nil {
		return fmt.Errorf("mounts of the root file system: %w", err)
	}
	return rootfs.View(ctx, mounts, fn)
}

// resolveUser turns a USER value into a uid and gid through the image's
// files. runc needs ids at most MaxInt32.
func resolveUser(root fs.FS, spec string) (uid, gid uint32, err error) {
	name, group, twoParts := strings.Cut(spec, ":")
	if strings.Contains(group, ":") {
		return 0, 0, fmt.Errorf("invalid USER value %q", spec)
	}
	uidNum, uidIsNum, err := parseID(name, "uid")
	if err != nil {
		return 0, 0, err
	}
	if !twoParts {
		if uidIsNum {
			u, found, err := findUser(root, func(u user.User) bool { return u.Uid == int(uidNum) })
			if err != nil || !found {
				return uidNum, 0, err // a uid the image does not know runs with gid 0
			}
			return uint32(u.Uid), uint32(u.Gid), nil
		}
		u, found, err := findUser(root, func(u user.User) bool { return u.Name == name })
		if err != nil {
			return 0, 0, err
		}
		if !found {
			return 0, 0, fmt.Errorf("no user %q in the image's /etc/passwd", name)
		}
		return uint32(u.Uid), uint32(u.Gid), nil
	}
	gidNum, gidIsNum, err := parseID(group, "gid")
	if err != nil {
		return 0, 0, err
	}
	uid, gid = uidNum, gidNum
	if !uidIsNum {
		u, found, err := findUser(root, func(u user.User) bool { return u.Name == name })
		if err != nil {
			return 0, 0, err
		}
		if !found {
			return 0, 0, fmt.Errorf("no user %q in the image's /etc/passwd", name)
		}
		uid = uint32(u.Uid)
	}
	if !gidIsNum {
		gs, err := readGroups(root, func(g user.Group) bool { return g.Name == group })
		if err != nil {
			return 0, 0, err
		}
		if len(gs) == 0 {
			return 0, 0, fmt.Errorf("no group %q in the image's /etc/group", group)
		}
		gid = uint32(gs[0].Gid)
	}
	return uid, gid, nil
}

// parseID reads a numeric id; a name is not an error (isNum false).
func parseID(s, what string) (id uint32, isNum bool, err error) {
	n, err := strconv.ParseInt(s, 10, 64)
	var numErr *strconv.NumError
	switch {
	case errors.As(err, &numErr) && numErr.Err == strconv.ErrRange, err == nil && (n < 0 || n > math.MaxInt32):
		return 0, false, fmt.Errorf("invalid USER value: %s %s out of range", what, s)
	case err != nil:
		return 0, false, nil
	}
	return uint32(n), true, nil
}

// supplementaryGroups returns the gids of the groups /etc/group lists
// member in (a name, or a uid named through /etc/passwd), except the group
// of the member's own name. No file, or a uid /etc/passwd does not know,
// gives none.
func supplementaryGroups(root fs.FS, member string) ([]uint32, error) {
	if id, isNum, err := parseID(member, "uid"); err == nil && isNum {
		u, found, err := findUser(root, func(u user.User) bool { return u.Uid == int(id) })
		if err != nil || !found {
			return nil, err
		}
		member = u.Name
	}
	gs, err := readGroups(root, func(g user.Group) bool {
		return g.Name != member && slices.Contains(g.List, member)
	})
	if err != nil {
		return nil, err
	}
	var gids []uint32
	for _, g := range gs {
		gids = append(gids, uint32(g.Gid))
	}
	return gids, nil
}

// withPrimary puts the primary gid first unless the list has it.
func withPrimary(gid uint32, groups []uint32) []uint32 {
	if slices.Contains(groups, gid) {
		return groups
	}
	return append([]uint32{gid}, groups...)
}

// findUser returns the first entry of the image's /etc/passwd that match
// takes; a missing file is no entry.
func findUser(root fs.FS, match func(user.User) bool) (user.User, bool, error) {
	b, err := fs.ReadFile(root, "etc/passwd")
	if errors.Is(err, fs.ErrNotExist) {
		return user.User{}, false, nil
	}
	if err != nil {
		return user.User{}, false, fmt.Errorf("read the image's /etc/passwd: %w", err)
	}
	us, err := user.ParsePasswdFilter(bytes.NewReader(b), match)
	if err != nil {
		return user.User{}, false, fmt.Errorf("the image's /etc/passwd: %w", err)
	}
	if len(us) == 0 {
		return user.User{}, false, nil
	}
	return us[0], true, nil
}

// readGroups returns the entries of the image's /etc/group that match
// takes; a missing file is no entry.
func readGroups(root fs.FS, match func(user.Group) bool) ([]user.Group, error) {
	b, err := fs.ReadFile(root, "etc/group")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the image's /etc/group: %w", err)
	}
	gs, err := user.ParseGroupFilter(bytes.NewReader(b), match)
	if err != nil {
		return nil, fmt.Errorf("the image's /etc/group: %w", err)
	}
	return gs, nil
}
