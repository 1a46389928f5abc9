package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"tug/internal/api"
	"tug/internal/cli/cmdflag"
	"tug/internal/podview"
)

const nodeUsage = `usage: tug node [-o wide|json|yaml|name] [--no-headers] [--socket PATH]

Shows the node and its conditions (MemoryPressure, DiskPressure,
PIDPressure, ...) as "kubectl describe node" lists them, then the capacity
and allocatable units of each device resource it declares; -o json and -o yaml
print the Node object (-o wide is the table, which has every column).

`

// showNode is "tug node": the node's conditions as kubectl describe node
// prints them, or the Node as JSON.
func (e Env) showNode(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cmdflag.New("node")
	socket := fs.String("socket", e.Socket, "`path` of tug's API socket")
	out := outputFlags(fs, formatTable)
	pos, code, ok := cmdflag.Parse(fs, args, nodeUsage, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 0 {
		return cmdflag.UsageError(stderr, nodeUsage, "tug node takes no arguments")
	}
	if err := out.check(); err != nil {
		return cmdflag.UsageError(stderr, nodeUsage, err.Error())
	}
	v, err := (&api.Client{SocketPath: *socket}).Node(ctx)
	if err == nil {
		switch out.format {
		case formatJSON:
			err = writeJSON(stdout, v)
		case formatYAML:
			err = writeYAML(stdout, v)
		case formatName:
			err = writeEscaped(stdout, "node/"+v.Metadata.Name+"\n")
		default:
			err = writeNode(stdout, v, out)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "tug:", err)
		return 1
	}
	return 0
}

// writeNode prints the node's name, its conditions table and its device
// resources' table (the tables have every column already: -o wide prints
// the same).
func writeNode(w io.Writer, v podview.NodeView, out *output) error {
	fmt.Fprintf(w, "Name: %s\nConditions:\n", escape(v.Metadata.Name))
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	if !out.noHeaders {
		fmt.Fprintln(tw, "  TYPE\tSTATUS\tLASTTRANSITION\tREASON\tMESSAGE")
	}
	for _, c := range v.Status.Conditions {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", c.Type, c.Status, c.LastTransitionTime.UTC().Format(time.RFC3339), escape(c.Reason), escape(c.Message))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(v.Status.Capacity) == 0 {
		return nil
	}
	fmt.Fprintln(w, "Resources:")
	names := make([]string, 0, len(v.Status.Capacity))
	for name := range v.Status.Capacity {
		names = append(names, name)
	}
	slices.Sort(names)
	if !out.noHeaders {
		fmt.Fprintln(tw, "  NAME\tCAPACITY\tALLOCATABLE")
	}
	for _, name := range names {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", escape(name), escape(v.Status.Capacity[name]), escape(v.Status.Allocatable[name]))
	}
	return tw.Flush()
}
