package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"tug/internal/pod"
	"tug/internal/source"
)

// validate checks each manifest file (or every manifest in a directory)
// exactly as the agent would, prints every problem as
// "file:line:col: field.path: message", and returns 1 if there was any.
func validate(paths []string, stdout, stderr io.Writer) int {
	if len(paths) == 0 {
		fmt.Fprintln(stderr, "usage: tug validate PATH...")
		return 2
	}
	hostname, _ := os.Hostname()
	bad := false
	for _, path := range expand(paths, stderr, &bad) {
		abs, _ := filepath.Abs(filepath.Dir(path))
		data, err := readManifest(path)
		if err != nil {
			fmt.Fprintln(stderr, err)
			bad = true
			continue
		}
		pods, err := pod.Parse(data, pod.ParseOptions{
			Origin:   pod.Origin{Source: "file:" + abs, File: path},
			Hostname: hostname,
		})
		if err != nil {
			bad = true
			for _, e := range flatten(err) {
				fmt.Fprintln(stderr, e)
			}
			continue
		}
		names := make([]string, len(pods))
		for i, p := range pods {
			names[i] = p.Metadata.Namespace + "/" + p.Metadata.ManifestName
		}
		fmt.Fprintf(stdout, "%s: ok (%s)\n", path, strings.Join(names, ", "))
	}
	if bad {
		return 1
	}
	return 0
}

// readManifest reads a manifest file with the agent's file limit
// (source.DefaultMaxFileSize): a larger file is an error, as it is for the
// agent's file source.
func readManifest(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	const limit = source.DefaultMaxFileSize
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > limit {
		return nil, fmt.Errorf("%s: over %d bytes: %w", path, limit, source.ErrTooLarge)
	}
	return data, nil
}

// expand replaces each directory by the manifest files in it, chosen as the
// agent's file source chooses them (no dotfiles or editor leftovers).
func expand(paths []string, stderr io.Writer, bad *bool) []string {
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			fmt.Fprintln(stderr, err)
			*bad = true
			continue
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			fmt.Fprintln(stderr, err)
			*bad = true
			continue
		}
		for _, e := range entries {
			if !e.IsDir() && source.IsManifestName(e.Name()) {
				files = append(files, filepath.Join(p, e.Name()))
			}
		}
	}
	return files
}

// flatten returns the individual errors of a joined error.
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}
