package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"tug/internal/api"
	"tug/internal/cli/cmdflag"
	"tug/internal/pod"
	"tug/internal/redact"
)

// The rollout subcommands: "tug rollback POD" returns a pod to its last
// good spec by hand, "tug history POD" lists its last specs.

const rollbackUsage = `usage: tug rollback [-n NAMESPACE] [--socket PATH] POD
       tug rollback --source FILE|URL [--socket PATH]

Returns POD to its last good spec (the spec that was last Ready for
--rollout-min-ready with no restart), as an automatic rollback does: the
spec the source wants now is held back until its content changes.
With --source, returns every pod of a manifest file (or of the URL's
bundle) to the file's last good content: the last content whose pods were
all good at once ("tug pods -o json" and GET /manifests show it).

`

const historyUsage = `usage: tug history [-n NAMESPACE] [-o wide|json|yaml|name] [--no-headers] [--socket PATH] POD

Lists POD's last specs, oldest first: the spec hash, when tug started to
apply it and what became of it (Progressing, Succeeded, RolledBack, Failed,
Superseded), with its last good spec and the spec held back.

`

// rollbackCmd is "tug rollback POD".
func (e Env) rollbackCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cmdflag.New("rollback")
	socket, ns := podFlags(fs, e.Socket)
	source := fs.String("source", "", "roll back every pod of this manifest `file or URL` instead of one pod")
	pos, code, ok := cmdflag.Parse(fs, args, rollbackUsage, stdout, stderr)
	if !ok {
		return code
	}
	c := &api.Client{SocketPath: *socket}
	if *source != "" {
		if len(pos) != 0 {
			return cmdflag.UsageError(stderr, rollbackUsage, "tug rollback --source takes no pod name")
		}
		if err := c.RollbackFile(ctx, *source); err != nil {
			fmt.Fprintln(stderr, "tug:", err)
			return 1
		}
		fmt.Fprintf(stdout, "%s: rolling back to its last good content\n", redact.URL(*source))
		return 0
	}
	if len(pos) != 1 {
		return cmdflag.UsageError(stderr, rollbackUsage, "tug rollback takes one pod name")
	}
	if err := c.Rollback(ctx, *ns, pos[0]); err != nil {
		fmt.Fprintln(stderr, "tug:", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s/%s: rolling back to its last good spec\n", *ns, pos[0])
	return 0
}

// historyCmd is "tug history POD".
func (e Env) historyCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cmdflag.New("history")
	socket, ns := podFlags(fs, e.Socket)
	out := outputFlags(fs, formatTable)
	pos, code, ok := cmdflag.Parse(fs, args, historyUsage, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return cmdflag.UsageError(stderr, historyUsage, "tug history takes one pod name")
	}
	if err := out.check(); err != nil {
		return cmdflag.UsageError(stderr, historyUsage, err.Error())
	}
	c := &api.Client{SocketPath: *socket}
	h, err := c.History(ctx, *ns, pos[0])
	if err == nil {
		switch out.format {
		case formatJSON:
			err = writeJSON(stdout, h)
		case formatYAML:
			err = writeYAML(stdout, h)
		case formatName:
			var b strings.Builder
			for _, e := range h.Entries {
				b.WriteString(e.Hash + "\n")
			}
			err = writeEscaped(stdout, b.String())
		default:
			err = writeHistoryTable(stdout, h, out)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "tug:", err)
		return 1
	}
	return 0
}

// writeHistoryTable prints a pod's rollout history as a table (-o wide:
// whole hashes), then its last good spec and the spec held back.
func writeHistoryTable(w io.Writer, h pod.RolloutHistory, out *output) error {
	short := shortHash
	if out.format == formatWide {
		short = func(h string) string { return h }
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	if !out.noHeaders {
		fmt.Fprintln(tw, "HASH\tAPPLIED\tOUTCOME\tREASON")
	}
	for _, e := range h.Entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", short(e.Hash), e.Applied.Local().Format(time.DateTime), e.Outcome, escape(e.Reason))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "last good spec: %s\n", orNone(short(h.GoodHash)))
	if h.Failed != "" {
		fmt.Fprintf(w, "held back: %s (%s)\n", short(h.Failed), escape(h.Reason))
	}
	return nil
}

// shortHash is the first 12 characters of a spec hash.
func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
