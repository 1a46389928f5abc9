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

// newUserNamespaces opens the allocator of user namespace IDs of
// --user-namespace-range, with the blocks recorded by an earlier run.
func newUserNamespaces(cfg config.Config, log *slog.Logger) (*userns.Allocator, error) {
	rng, err := userns.ParseRange(cfg.UserNamespaceRange)
	if err != nil {
		return nil, fmt.Errorf("--user-namespace-range: %w", err)
	}
	return userns.Open(filepath.Join(cfg.RootDir, usernsStateFile), rng, log)
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
