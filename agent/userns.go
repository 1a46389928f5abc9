package main

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"tug/internal/config"
	"tug/internal/source"
	"tug/internal/userns"
)

// usernsStateFile is where the blocks of host IDs held by pods with
// hostUsers: false are recorded, below --root-dir.
const usernsStateFile = "userns.json"

// newUserNamespaces opens the allocator of user namespace IDs, with the
// blocks recorded by an earlier run. The range is --user-namespace-range,
// else user tug's entries of the subuid and subgid files, else
// userns.DefaultRange; a range that holds IDs a local user may map (an
// entry of another user, login.defs' range for the users useradd adds) is
// an error, and the allocator checks the files again at each new block.
func newUserNamespaces(cfg config.Config, log *slog.Logger) (*userns.Allocator, error) {
	files := userns.HostIDFiles{SubUID: cfg.SubUIDFile, SubGID: cfg.SubGIDFile, LoginDefs: cfg.LoginDefsFile}
	ids, err := files.Read()
	if err != nil {
		return nil, fmt.Errorf("user namespaces: %w", err)
	}
	rng, from, err := ids.NodeRange(cfg.UserNamespaceRange)
	if err != nil {
		return nil, fmt.Errorf("user namespaces: %w", err)
	}
	if err := ids.Check(rng, from); err != nil {
		return nil, err
	}
	log.Info("user namespace range", "range", rng.String(), "from", from)
	return userns.Open(filepath.Join(cfg.RootDir, usernsStateFile), rng, &files, log)
}

// requiredUserNamespaces maps the sources whose pods must run in a user
// namespace of their own (--file-user-namespaces, --url-user-namespaces
// required) to their flag; web is nil without --manifest-url.
func requiredUserNamespaces(cfg config.Config, dir string, web *source.HTTP) map[string]string {
	out := map[string]string{}
	if cfg.FileUserNamespaces == "required" {
		out[dir] = "file-user-namespaces"
	}
	if web != nil && cfg.URLUserNamespaces == "required" {
		out[web.Name()] = "url-user-namespaces"
	}
	return out
}
