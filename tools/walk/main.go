// Command walk counts the walk a reader takes from the sync loop to a
// container's start: the functions on some call path from
// (*reconcile.Loop).Run to (*podruntime.Runtime).startContainer (which
// calls containerd's task.Start), and with them the functions of tug they
// call directly (what a reader of those functions reads besides), in
// functions, packages and files. The call graph is golang.org/x/tools' VTA
// over the agent's whole program, so calls through interfaces and function
// values reach what they call at run time.
//
// It is a module of its own, so that x/tools stays out of tug's build:
//
//	cd tools/walk && go run . -C ../..
//
// and, for another commit, a worktree of it:
//
//	git worktree add /tmp/base REV && (cd tools/walk && go run . -C /tmp/base)
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"

	"golang.org/x/tools/go/callgraph"
	"golang.org/x/tools/go/callgraph/cha"
	"golang.org/x/tools/go/callgraph/vta"
	"golang.org/x/tools/go/packages"
	"golang.org/x/tools/go/ssa"
	"golang.org/x/tools/go/ssa/ssautil"
)

func main() {
	dir := flag.String("C", "../..", "the repository to measure")
	from := flag.String("from", "(*tug/internal/reconcile.Loop).Run", "where the walk starts")
	to := flag.String("to", "(*tug/internal/podruntime.Runtime).startContainer", "where it ends")
	list := flag.Bool("list", false, "list the functions")
	flag.Parse()
	if err := run(*dir, *from, *to, *list); err != nil {
		fmt.Fprintln(os.Stderr, "walk:", err)
		os.Exit(1)
	}
}

func run(dir, fromName, toName string, list bool) error {
	pkgs, err := packages.Load(&packages.Config{Mode: packages.LoadAllSyntax, Dir: dir}, "./agent")
	if err != nil {
		return err
	}
	if packages.PrintErrors(pkgs) > 0 {
		return fmt.Errorf("the agent does not load in %s", dir)
	}
	prog, _ := ssautil.AllPackages(pkgs, ssa.InstantiateGenerics)
	prog.Build()
	cg := vta.CallGraph(ssautil.AllFunctions(prog), cha.CallGraph(prog))
	cg.DeleteSyntheticNodes()
	var from, to *callgraph.Node
	for f, n := range cg.Nodes {
		switch {
		case f == nil:
		case f.String() == fromName:
			from = n
		case f.String() == toName:
			to = n
		}
	}
	if from == nil || to == nil {
		return fmt.Errorf("%s or %s is not in the call graph", fromName, toName)
	}
	fwd := reach(from, func(n *callgraph.Node) []*callgraph.Node { return ends(n.Out, true) })
	bwd := reach(to, func(n *callgraph.Node) []*callgraph.Node { return ends(n.In, false) })
	onPath := map[*callgraph.Node]bool{}
	read := map[*callgraph.Node]bool{}
	for n := range fwd {
		if !bwd[n] || !tugs(n) {
			continue
		}
		onPath[n], read[n] = true, true
		for _, m := range ends(n.Out, true) {
			if tugs(m) {
				read[m] = true
			}
		}
	}
	fmt.Printf("walk %s -> %s in %s\n", fromName, toName, dir)
	fmt.Printf("  on a call path:          %s\n", count(prog, onPath))
	fmt.Printf("  with what they call:     %s\n", count(prog, read))
	if list {
		var names []string
		for n := range read {
			mark := " "
			if onPath[n] {
				mark = "*"
			}
			names = append(names, mark+" "+n.Func.String())
		}
		sort.Strings(names)
		fmt.Println(strings.Join(names, "\n"))
	}
	return nil
}

// ends returns the callees (out) or callers of edges.
func ends(edges []*callgraph.Edge, out bool) []*callgraph.Node {
	var ns []*callgraph.Node
	for _, e := range edges {
		if out {
			ns = append(ns, e.Callee)
		} else {
			ns = append(ns, e.Caller)
		}
	}
	return ns
}

// tugs reports whether n is a function of tug's own packages.
func tugs(n *callgraph.Node) bool {
	return n.Func != nil && n.Func.Pkg != nil && strings.HasPrefix(n.Func.Pkg.Pkg.Path(), "tug/")
}

// count says how many functions, packages and files set holds.
func count(prog *ssa.Program, set map[*callgraph.Node]bool) string {
	pkgs, files := map[string]bool{}, map[string]bool{}
	for n := range set {
		pkgs[n.Func.Pkg.Pkg.Path()] = true
		if pos := prog.Fset.Position(n.Func.Pos()); pos.IsValid() {
			files[pos.Filename] = true
		}
	}
	return fmt.Sprintf("%d functions, %d packages, %d files", len(set), len(pkgs), len(files))
}

// reach returns the nodes reachable from n through next, n included.
func reach(n *callgraph.Node, next func(*callgraph.Node) []*callgraph.Node) map[*callgraph.Node]bool {
	seen := map[*callgraph.Node]bool{n: true}
	for queue := []*callgraph.Node{n}; len(queue) > 0; queue = queue[1:] {
		for _, m := range next(queue[0]) {
			if !seen[m] {
				seen[m] = true
				queue = append(queue, m)
			}
		}
	}
	return seen
}
