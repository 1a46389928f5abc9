package main

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"tug/internal/config"
	"tug/internal/podruntime"
	"tug/internal/policy"
)

// newPolicy builds the admission policy of "tug run" (and of "tug validate
// --policy"): a level per source (sources maps a source name to its level's
// flag value, validated by config), the node-wide rules of cfg and the
// node's labels and taints (nil: not checked).
func newPolicy(cfg config.Config, sources map[string]string, node *policy.Node) *policy.Policy {
	levels := make(map[string]policy.Level, len(sources))
	for src, l := range sources {
		levels[src] = policy.Level(l)
	}
	return &policy.Policy{
		Levels:               levels,
		Default:              policy.Restricted,
		AllowPrivileged:      cfg.AllowPrivileged,
		AllowHostStateMounts: cfg.AllowHostStateMounts,
		Protected:            protectedPaths(cfg),
		Resolve:              resolveExisting,
		Node:                 node,
	}
}

// newNode returns the node's labels (the standard ones and --node-labels,
// which may override them) and taints, for node admission.
func newNode(cfg config.Config, hostname string) (*policy.Node, error) {
	labels := policy.StandardLabels(hostname, runtime.GOOS, runtime.GOARCH)
	extra, err := policy.ParseNodeLabels(cfg.NodeLabels)
	if err != nil {
		return nil, fmt.Errorf("--node-labels: %w", err)
	}
	maps.Copy(labels, extra)
	taints, err := policy.ParseTaints(cfg.RegisterWithTaints)
	if err != nil {
		return nil, fmt.Errorf("--register-with-taints: %w", err)
	}
	return &policy.Node{Name: strings.ToLower(hostname), Labels: labels, Taints: taints, AppArmor: appArmorEnabled()}, nil
}

// runtimeClasses parses --runtime-class and checks that every binary it
// names is there: a class whose runtime is missing fails tug's start, not
// each of its pods' containers later.
func runtimeClasses(cfg config.Config) (map[string]podruntime.RuntimeClass, error) {
	classes, err := podruntime.ParseRuntimeClasses(cfg.RuntimeClass)
	if err != nil {
		return nil, fmt.Errorf("--runtime-class: %w", err)
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(classes)) {
		errs = append(errs, classes[name].Check())
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("--runtime-class: %w", err)
	}
	return classes, nil
}

// protectedPaths are the host paths no pod may mount without
// --allow-host-state-mounts: tug's own dirs, and containerd's socket, its
// directory and containerd's default state dir (every container's root
// filesystem and every image).
func protectedPaths(cfg config.Config) []policy.Protected {
	seccompRoot := cfg.SeccompProfileRoot
	if seccompRoot == "" {
		seccompRoot = filepath.Join(cfg.RootDir, "seccomp")
	}
	return []policy.Protected{
		{Path: cfg.RootDir, What: "tug's root dir"},
		{Path: cfg.RunDir, What: "tug's run dir"},
		{Path: cfg.PodManifestPath, What: "tug's manifest dir"},
		{Path: cfg.ImageDir, What: "tug's image dir"},
		{Path: seccompRoot, What: "the seccomp profile dir"},
		{Path: cfg.ContainerdAddress, What: "containerd's socket"},
		{Path: filepath.Dir(cfg.ContainerdAddress), What: "containerd's socket dir"},
		{Path: "/var/lib/containerd", What: "containerd's state dir"},
	}
}

// resolveExisting resolves the symlinks of the longest part of p that
// exists and appends the rest: "/var/run/containerd/x" is
// "/run/containerd/x" even before x exists.
func resolveExisting(p string) (string, error) {
	rest := ""
	for cur := filepath.Clean(p); ; {
		r, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(r, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) || cur == "/" {
			return p, err
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = filepath.Dir(cur)
	}
}
