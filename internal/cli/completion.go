package cli

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"tug/internal/api"
	"tug/internal/cli/cmdflag"
	"tug/internal/podview"
)

// Shell completion: "tug completion SHELL" prints a small script that asks
// tug itself for the candidates ("tug __complete WORD..." with the words
// of the command line up to the one being completed), so the script never
// goes stale: commands and flags come from each command's own --help, pod
// names, containers and namespaces from the running agent.

const completionUsage = `usage: tug completion bash|zsh|fish

Prints the shell completion script for SHELL. To load it:
  bash:  source <(tug completion bash)       (or write it to /etc/bash_completion.d/tug)
  zsh:   source <(tug completion zsh)        (or write it as _tug in a directory of $fpath)
  fish:  tug completion fish | source        (or write it to ~/.config/fish/completions/tug.fish)

Commands and flags complete from tug itself; pod, container and namespace
names from the running agent (through --socket when the line gives it).

`

// completionScripts are the scripts of "tug completion", by shell. Each
// calls the tug it completes (the command line's first word) with
// "__complete" and the words up to the cursor, and offers the lines it
// prints.
var completionScripts = map[string]string{
	"bash": `# bash completion for tug
_tug() {
    local IFS=$'\n'
    COMPREPLY=($("${COMP_WORDS[0]}" __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _tug tug
`,
	"zsh": `#compdef tug
# zsh completion for tug
_tug() {
    local -a candidates
    candidates=("${(@f)$("${words[1]}" __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    candidates=(${candidates:#})
    (( ${#candidates} )) && compadd -Q -- "${candidates[@]}"
}
if [ "$funcstack[1]" = "_tug" ]; then
    _tug "$@"
else
    compdef _tug tug
fi
`,
	"fish": `# fish completion for tug
function __tug_complete
    set -l tokens (commandline -opc)
    $tokens[1] __complete $tokens[2..-1] (commandline -ct) 2>/dev/null
end
complete -c tug -f -a '(__tug_complete)'
`,
}

// completionCmd is "tug completion SHELL".
func completionCmd(args []string, stdout, stderr io.Writer) int {
	fs := cmdflag.New("completion")
	pos, code, ok := cmdflag.Parse(fs, args, completionUsage, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 || completionScripts[pos[0]] == "" {
		return cmdflag.UsageError(stderr, completionUsage, "tug completion takes one shell: bash, zsh or fish")
	}
	fmt.Fprint(stdout, completionScripts[pos[0]])
	return 0
}

// podArgCommands take a pod name as their argument.
var podArgCommands = []string{"inspect", "describe", "logs", "exec", "restart", "rollback", "history", "events", "top"}

// Complete writes the completion candidates of the last of words (the one
// being completed; "" after a space), one per line, given all of tug's
// commands. words are the command line's words after "tug". socket is the
// agent's default socket, used unless the line gives --socket.
func Complete(ctx context.Context, all []Command, socket string, words []string, stdout io.Writer) int {
	if len(words) == 0 {
		words = []string{""}
	}
	cur, before := words[len(words)-1], words[:len(words)-1]
	var candidates []string
	switch {
	case len(before) == 0:
		for _, c := range all {
			candidates = append(candidates, c.Name)
		}
	default:
		cmd := slices.IndexFunc(all, func(c Command) bool { return c.Name == before[0] })
		if cmd < 0 {
			return 0
		}
		candidates = completeArgs(ctx, all, all[cmd], socket, before[1:], cur)
	}
	for _, c := range candidates {
		if strings.HasPrefix(c, cur) && !strings.ContainsAny(c, "\n\t") {
			fmt.Fprintln(stdout, c)
		}
	}
	return 0
}

// completeArgs returns the candidates for cur, a word of command c after
// the words before it (the command's name not included).
func completeArgs(ctx context.Context, all []Command, c Command, socket string, before []string, cur string) []string {
	if c.Run == nil { // "help"
		var names []string
		for _, c := range all {
			if len(before) == 0 && c.Run != nil {
				names = append(names, c.Name)
			}
		}
		return names
	}
	if slices.Contains(before, "--") {
		return nil // the command of tug exec: the shell's own business
	}
	if strings.HasPrefix(cur, "-") {
		return commandFlags(ctx, c)
	}
	prev := ""
	if len(before) > 0 {
		prev = before[len(before)-1]
	}
	q := lineQuery(before, socket)
	switch prev {
	case "-o", "--output":
		if c.Name == "sign" {
			return nil
		}
		return slices.Clone(outputFormats)
	case "-n", "--namespace":
		return agentNames(ctx, q, func(v podview.View) []string { return []string{v.Metadata.Namespace} })
	case "-c", "--container":
		return agentNames(ctx, q, func(v podview.View) []string {
			if q.pod != "" && v.Metadata.Name != q.pod {
				return nil
			}
			var names []string
			for _, ct := range v.Spec.Containers {
				names = append(names, ct.Name)
			}
			return names
		})
	}
	if c.Name == "completion" && len(before) == 0 {
		return []string{"bash", "zsh", "fish"}
	}
	if c.Name == "bundle" && len(before) == 0 {
		return []string{"push", "pull"}
	}
	if c.Name == "release" && len(before) == 0 {
		return []string{"push", "sign"}
	}
	if slices.Contains(podArgCommands, c.Name) && q.pod == "" {
		return agentNames(ctx, q, func(v podview.View) []string {
			if q.namespace != "" && v.Metadata.Namespace != q.namespace {
				return nil
			}
			return []string{v.Metadata.Name}
		})
	}
	return nil
}

// lineQuery is what the words typed so far say about the agent to ask:
// its socket, the namespace and the pod named.
type query struct {
	socket, namespace, pod string
}

func lineQuery(before []string, socket string) query {
	q := query{socket: socket}
	for i := 0; i < len(before); i++ {
		w := before[i]
		next := func() string {
			if i+1 < len(before) {
				i++
				return before[i]
			}
			return ""
		}
		switch {
		case w == "--socket":
			q.socket = cmp.Or(next(), q.socket)
		case strings.HasPrefix(w, "--socket="):
			q.socket = strings.TrimPrefix(w, "--socket=")
		case w == "-n" || w == "--namespace":
			q.namespace = next()
		case strings.HasPrefix(w, "--namespace="):
			q.namespace = strings.TrimPrefix(w, "--namespace=")
		case w == "-c" || w == "--container" || w == "-o" || w == "--output" || w == "--tail" || w == "--since":
			next()
		case !strings.HasPrefix(w, "-") && q.pod == "":
			q.pod = w
		}
	}
	return q
}

// agentNames asks the agent for its pods (briefly: a completion must not
// hang on a stuck agent) and returns the sorted, distinct names pick
// takes from them.
func agentNames(ctx context.Context, q query, pick func(podview.View) []string) []string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	list, err := (&api.Client{SocketPath: q.socket}).Pods(ctx)
	if err != nil {
		return nil
	}
	var names []string
	for _, v := range list.Items {
		names = append(names, pick(v)...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// commandFlags returns the long flags (and shorthands) of c, read from the
// flag list its --help prints (the lines after "Flags:", or every line
// when there is no such heading).
func commandFlags(ctx context.Context, c Command) []string {
	var help bytes.Buffer
	c.Run(ctx, []string{"--help"}, &help, io.Discard)
	text := help.String()
	if _, list, ok := strings.Cut(text, "\nFlags:\n"); ok {
		text = list
	}
	var flags []string
	for sc := bufio.NewScanner(strings.NewReader(text)); sc.Scan(); {
		for _, f := range strings.Fields(strings.ReplaceAll(sc.Text(), ",", " ")) {
			if !strings.HasPrefix(f, "-") || f == "-" || f == "--" {
				break
			}
			flags = append(flags, f)
		}
	}
	slices.Sort(flags)
	return slices.Compact(flags)
}
