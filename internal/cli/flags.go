package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// Every command parses GNU-style flags with kubectl's spellings (spf13/pflag,
// see docs/decisions.md "Command line"): long flags with two dashes, one
// letter shorthands (-n, -o, -c, -A, -w) with one, flags and arguments in
// any order, and "--" ending the flags.

// newFlagSet returns an empty flag set for the command "tug NAME".
func newFlagSet(name string) *pflag.FlagSet {
	fs := pflag.NewFlagSet("tug "+name, pflag.ContinueOnError)
	fs.SortFlags = false // in the order the command registers them
	return fs
}

// parseFlags parses args with flags and positional arguments in any order
// ("tug inspect web -n kube-system"), as kubectl accepts them, and returns
// the positional ones (those after "--" included). ok is false when the
// command must stop, with code its exit code: 0 after -h or --help, which
// print usage and the flags to stdout; 2 after a bad flag, reported on
// stderr with usage.
func parseFlags(fs *pflag.FlagSet, args []string, usage string, stdout, stderr io.Writer) (pos []string, code int, ok bool) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {} // printed below, where asked for help or after the error
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			printUsage(stdout, fs, usage)
			return nil, 0, false
		}
		fmt.Fprintf(stderr, "tug: %v\n", err)
		printUsage(stderr, fs, usage)
		return nil, 2, false
	}
	return fs.Args(), 0, true
}

// printUsage writes a subcommand's usage text and its flags.
func printUsage(w io.Writer, fs *pflag.FlagSet, usage string) {
	fmt.Fprint(w, usage)
	fmt.Fprint(w, "Flags:\n"+fs.FlagUsages())
}

// podFlags registers the flags of a command about one pod: --socket
// (default defaultSocket) and -n/--namespace (default "default").
func podFlags(fs *pflag.FlagSet, defaultSocket string) (socket, namespace *string) {
	socket = fs.String("socket", defaultSocket, "`path` of tug's API socket")
	namespace = fs.StringP("namespace", "n", "default", "the pod's `namespace`")
	return socket, namespace
}

func usageError(stderr io.Writer, usage, msg string) int {
	fmt.Fprintf(stderr, "tug: %s\n%s", msg, usage)
	return 2
}

// Output formats of the read commands, as kubectl spells them.
const (
	formatTable = ""     // the command's table (or text)
	formatWide  = "wide" // the table with more columns
	formatJSON  = "json"
	formatYAML  = "yaml"
	formatName  = "name" // KIND/NAME, one per line
)

// outputFormats are the formats every read command takes.
var outputFormats = []string{formatWide, formatJSON, formatYAML, formatName}

// output holds the printing flags every read command takes: -o/--output
// and --no-headers.
type output struct {
	format    string
	noHeaders bool
}

// outputFlags registers -o/--output (default def) and --no-headers.
func outputFlags(fs *pflag.FlagSet, def string) *output {
	o := &output{}
	fs.StringVarP(&o.format, "output", "o", def, "output `format`: "+strings.Join(outputFormats, ", ")+" (default: "+describeFormat(def)+")")
	fs.BoolVar(&o.noHeaders, "no-headers", false, "print tables without their header line")
	return o
}

func describeFormat(f string) string {
	if f == formatTable {
		return "a table"
	}
	return f
}

// check reports an unknown format.
func (o *output) check() error {
	if o.format != formatTable && !slices.Contains(outputFormats, o.format) {
		return fmt.Errorf("unknown output format %q (want one of %s)", o.format, strings.Join(outputFormats, ", "))
	}
	return nil
}

// allNamespacesFlag registers -A/--all-namespaces: list every namespace,
// whatever -n says (every namespace is already the default of the list
// commands without -n).
func allNamespacesFlag(fs *pflag.FlagSet) *bool {
	return fs.BoolP("all-namespaces", "A", false, "list the objects of every namespace (overrides -n)")
}
