package offline

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tug/internal/bundle"
	"tug/internal/cli/cmdflag"
	"tug/internal/manifest"
	"tug/internal/pod"
	"tug/internal/policy"
	"tug/internal/source"
)

const validateUsage = `usage: tug validate [--policy LEVEL] [--allow-privileged] [--allow-host-state-mounts] PATH...

Checks each manifest file, or every manifest of a directory, exactly as the
agent would read it, and prints every problem as file:line:col lines, and
each field or kind accepted but ignored on a node as a "warning:" line (a
file with warnings only still passes). An empty file, or a directory with
no manifest file, is an error ("no manifests found"). A signed bundle
(FILE.signed, from tug sign) is checked as its manifests, with line numbers
of the .signed file; tug verify checks its signature. With --policy it also
applies the admission policy of that level.

`

// validate checks each manifest file (or every manifest in a directory)
// exactly as the agent would, prints every problem as
// "file:line:col: field.path: message", and returns 1 if there was any.
// With --policy LEVEL it also applies the admission policy policyOf builds,
// as an agent with that level for the file's source and otherwise default
// settings (--allow-privileged and --allow-host-state-mounts may be given
// too) would, and prints each violation as "file:line:col: field.path:
// message".
func validate(policyOf PolicyFunc, args []string, stdout, stderr io.Writer) int {
	fs := cmdflag.New("validate")
	level := fs.String("policy", "", "also check the admission policy of this level: privileged, baseline or restricted")
	allowPrivileged := fs.Bool("allow-privileged", false, "with --policy: as an agent run with --allow-privileged")
	allowHostStateMounts := fs.Bool("allow-host-state-mounts", false, "with --policy: as an agent run with --allow-host-state-mounts")
	paths, code, ok := cmdflag.Parse(fs, args, validateUsage, stdout, stderr)
	if !ok {
		return code
	}
	if len(paths) == 0 {
		return cmdflag.UsageError(stderr, validateUsage, "tug validate needs a file or directory")
	}
	if *level != "" {
		if _, err := policy.ParseLevel(*level); err != nil {
			fmt.Fprintln(stderr, "tug validate: --policy:", err)
			return 2
		}
	}
	hostname, _ := os.Hostname()
	bad := false
	parsed := map[string]manifest.Parsed{}
	for _, path := range expand(paths, stderr, &bad) {
		abs, _ := filepath.Abs(filepath.Dir(path))
		data, err := readManifest(path)
		if err != nil {
			fmt.Fprintln(stderr, err)
			bad = true
			continue
		}
		src := "file:" + abs
		signed := ""
		if bundle.IsEnvelope(data) {
			env, err := bundle.ParseEnvelope(data)
			if err != nil {
				fmt.Fprintf(stderr, "%s: %v\n", path, err)
				bad = true
				continue
			}
			data = envelopeLines(env)
			signed = fmt.Sprintf("; signed bundle version %d, not after %s, for %s (the signature is tug verify's to check)",
				env.Header.Version, env.Header.NotAfter.UTC().Format(time.RFC3339), nodesOf(env.Header.Nodes))
		}
		warned := false
		pf, err := manifest.ParseFile(data, manifest.ParseOptions{
			Origin:   pod.Origin{Source: src, File: path},
			Hostname: hostname,
			// Accepted but ignored on a node: reported, exit status 0.
			Warn: func(w *pod.FieldError) {
				warned = true
				fmt.Fprintln(stderr, "warning:", w)
			},
		})
		pods := pf.Pods
		parsed[path] = pf
		if err != nil {
			bad = true
			for _, e := range flatten(err) {
				fmt.Fprintln(stderr, e)
			}
			continue
		}
		if len(pods) == 0 && len(pf.Objects) == 0 && !warned {
			// Nothing at all, not even a kind skipped with a warning: a
			// file emptied by mistake must not pass as a manifest.
			fmt.Fprintf(stderr, "%s: no manifests found\n", path)
			bad = true
			continue
		}
		if *level != "" {
			pl := policyOf(map[string]string{src: *level}, *allowPrivileged, *allowHostStateMounts)
			blocked := false
			for i, p := range pods {
				var perr *policy.Error
				if err := pl.Admit(p); errors.As(err, &perr) {
					blocked = true
					for _, v := range perr.Violations {
						field, line, col := pf.Position(i, v.Path)
						fmt.Fprintf(stderr, "%s:%d:%d: %s: %s\n", path, line, col, field, perr.Message(v))
					}
				}
			}
			if blocked {
				fmt.Fprintf(stderr, "%s: refused under --policy %s: change the fields above, or give the file's source a level that allows them (tug run --file-policy, --url-policy)\n", path, *level)
				bad = true
				continue
			}
		}
		names := make([]string, len(pods))
		for i, p := range pods {
			names[i] = p.Metadata.Namespace + "/" + p.Metadata.ManifestName
			if cj := p.CronJob; cj != nil {
				names[i] = fmt.Sprintf("CronJob %s/%s %q", cj.Namespace, cj.Name, cj.Schedule)
			}
		}
		for _, o := range pf.Objects {
			names = append(names, o.String())
		}
		fmt.Fprintf(stdout, "%s: ok (%s)%s\n", path, strings.Join(names, ", "), signed)
	}
	if !checkRefs(paths, parsed, stderr) {
		bad = true
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
		before := len(files)
		for _, e := range entries {
			if !e.IsDir() && source.IsManifestName(e.Name()) {
				files = append(files, filepath.Join(p, e.Name()))
			}
		}
		if len(files) == before {
			fmt.Fprintf(stderr, "%s: no manifests found\n", p)
			*bad = true
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
