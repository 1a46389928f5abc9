#!/usr/bin/env bash
# pkgmap.sh: the package map of the module as a Markdown table, one line
# per package: its non-test lines (all lines of its non-test .go files),
# its exported top-level names (what `go doc -short` lists), and the first
# sentence of its doc comment (cut at 120 characters). `make pkgmap` prints it; it is how the size
# rule (no package over 3,000 lines) and a package's surface are checked.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

printf '| package | lines | exported | what it owns |\n|---|---:|---:|---|\n'
go list -f '{{.ImportPath}}	{{.Dir}}	{{join .GoFiles " "}}	{{.Doc}}' ./... |
    while IFS=$'\t' read -r pkg dir files doc; do
        lines=0
        for f in $files; do lines=$((lines + $(wc -l < "$dir/$f"))); done
        exported=$(go doc -short "$pkg" 2>/dev/null | grep -c . || true)
        doc=${doc%%. *}
        [ ${#doc} -le 120 ] || doc="${doc:0:119}…"
        printf '| %s | %d | %d | %s |\n' "${pkg#tug/}" "$lines" "$exported" "$doc"
    done
