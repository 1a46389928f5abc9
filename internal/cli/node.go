package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"tug/internal/api"
)

const nodeUsage = "usage: tug node [-o json] [--socket PATH]\n"

// showNode is "tug node": the node's conditions as kubectl describe node
// prints them, or the Node as JSON.
func (e Env) showNode(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tug node", flag.ContinueOnError)
	socket := fs.String("socket", e.Socket, "`path` of tug's API socket")
	output := fs.String("o", "", "output `format`: json, or a table when empty")
	pos, code, ok := parseFlags(fs, args, nodeUsage, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 0 {
		return usageError(stderr, nodeUsage, "tug node takes no arguments")
	}
	if *output != "" && *output != "json" {
		return usageError(stderr, nodeUsage, fmt.Sprintf("unknown output format %q", *output))
	}
	v, err := (&api.Client{SocketPath: *socket}).Node(ctx)
	if err == nil && *output == "json" {
		err = writeJSON(stdout, v)
	} else if err == nil {
		fmt.Fprintf(stdout, "Name: %s\nConditions:\n", v.Metadata.Name)
		tw := tabwriter.NewWriter(stdout, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "  TYPE\tSTATUS\tLASTTRANSITION\tREASON\tMESSAGE")
		for _, c := range v.Status.Conditions {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", c.Type, c.Status, c.LastTransitionTime.UTC().Format(time.RFC3339), c.Reason, c.Message)
		}
		err = tw.Flush()
	}
	if err != nil {
		fmt.Fprintln(stderr, "tug:", err)
		return 1
	}
	return 0
}
