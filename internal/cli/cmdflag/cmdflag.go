// Package cmdflag owns how every tug subcommand parses its command line:
// GNU-style flags with kubectl's spellings (spf13/pflag, see
// docs/decisions.md "Command line"): long flags with two dashes, one-letter
// shorthands (-n, -o, -c, -A, -w) with one, flags and arguments in any
// order, and "--" ending the flags. A usage error is exit code 2, help is 0.
package cmdflag

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"
)

// New returns an empty flag set for the command "tug NAME", listing its
// flags in the order the command registers them.
func New(name string) *pflag.FlagSet {
	fs := pflag.NewFlagSet("tug "+name, pflag.ContinueOnError)
	fs.SortFlags = false
	return fs
}

// Parse parses args with flags and positional arguments in any order
// ("tug inspect web -n kube-system"), as kubectl accepts them, and returns
// the positional ones (those after "--" included). ok is false when the
// command must stop, with code its exit code: 0 after -h or --help, which
// print usage and the flags to stdout; 2 after a bad flag, reported on
// stderr with usage.
func Parse(fs *pflag.FlagSet, args []string, usage string, stdout, stderr io.Writer) (pos []string, code int, ok bool) {
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

// UsageError reports msg and the usage text on stderr and returns the exit
// code of a usage error, 2.
func UsageError(stderr io.Writer, usage, msg string) int {
	fmt.Fprintf(stderr, "tug: %s\n%s", msg, usage)
	return 2
}
