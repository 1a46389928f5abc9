package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// podFlags registers the flags of a command about one pod: --socket
// (default defaultSocket) and -n/--namespace (default "default").
func podFlags(fs *pflag.FlagSet, defaultSocket string) (socket, namespace *string) {
	socket = fs.String("socket", defaultSocket, "`path` of tug's API socket")
	namespace = fs.StringP("namespace", "n", "default", "the pod's `namespace`")
	return socket, namespace
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
