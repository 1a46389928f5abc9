//go:build e2e

package e2e

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// runsAlone names the tests that do not call t.Parallel, and why. Go runs
// them one at a time before all the others; each changes what every other
// test shares (the containerd daemon, a core, the disk's bandwidth) or
// measures a time that the others' load would stretch.
var runsAlone = map[string]string{
	"TestContainerdRestart":     "kills and restarts the shared containerd",
	"TestLogsNoLossAcrossKills": "restarts the shared containerd",
	"TestKill9Twenty":           "wants /healthz within 2 s of each of 20 restarts",
	"TestQoSCPUEnforcement":     "spins one core with two pods to compare their CPU weights",
	"TestLogOutputDiskBound":    "writes logs as fast as the disk takes them",
	"TestCrashLoopBackoffFlags": "measures each restart's back-off to ±700 ms",
	"TestSubPathSymlinkRace":    "flips a symlink at full speed for a minute against as many starts as it can get",
}

// TestSuiteRunsInParallel keeps the suite parallel: every test's first
// statement is t.Parallel(), except those of runsAlone, which have none.
func TestSuiteRunsInParallel(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Name.Name == "TestMain" {
				continue
			}
			test := fn.Name.Name
			seen[test] = true
			first := len(fn.Body.List) > 0 && isParallelCall(fn.Body.List[0])
			_, alone := runsAlone[test]
			switch {
			case alone && first:
				t.Errorf("%s: %s calls t.Parallel but is in runsAlone", fset.Position(fn.Pos()), test)
			case !alone && !first:
				t.Errorf("%s: %s does not start with t.Parallel(); add it, or name it in runsAlone with the reason", fset.Position(fn.Pos()), test)
			}
		}
	}
	for test := range runsAlone {
		if !seen[test] {
			t.Errorf("runsAlone names %s, which is no test of the package", test)
		}
	}
}

// isParallelCall reports whether s is the statement t.Parallel().
func isParallelCall(s ast.Stmt) bool {
	e, ok := s.(*ast.ExprStmt)
	if !ok {
		return false
	}
	call, ok := e.X.(*ast.CallExpr)
	if !ok || len(call.Args) != 0 {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Parallel" {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == "t"
}
