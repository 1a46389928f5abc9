// Command binsize says what each module adds to a Go binary: it reads the
// symbol table of an unstripped build (go tool nm -size) and the package list
// of the build (go list -deps), gives every symbol to the package whose path
// is the longest prefix of its name, and sums the packages by module. Symbols
// of no package (the runtime's tables, type and function metadata shared by
// all) are reported as one line. The sums are symbol sizes, not the bytes a
// module's removal would save: the function table (pclntab) and the strings
// that a stripped binary keeps scale with them but are not counted per symbol.
//
//	binsize -bin BINARY -pkg ./agent [-goarch arm64] [-flags '-tags x'] [-top 25]
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
)

func main() {
	bin := flag.String("bin", "", "an unstripped binary built from -pkg")
	pkg := flag.String("pkg", "./agent", "the main package the binary was built from")
	goarch := flag.String("goarch", "", "GOARCH of the binary (for go list)")
	flags := flag.String("flags", "", "the build flags of the binary (for go list: -tags)")
	top := flag.Int("top", 25, "modules to list; the rest are summed")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "binsize: -bin is required")
		os.Exit(2)
	}
	if err := run(*bin, *pkg, *goarch, strings.Fields(*flags), *top); err != nil {
		fmt.Fprintln(os.Stderr, "binsize:", err)
		os.Exit(1)
	}
}

func run(bin, pkg, goarch string, flags []string, top int) error {
	args := append([]string{"list", "-deps", "-f", "{{.ImportPath}} {{if .Module}}{{.Module.Path}}{{else}}std{{end}}"}, flags...)
	list := exec.Command("go", append(args, pkg)...)
	if goarch != "" {
		list.Env = append(os.Environ(), "GOARCH="+goarch)
	}
	out, err := list.Output()
	if err != nil {
		return fmt.Errorf("go list: %w", err)
	}
	modOf := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, mod, _ := strings.Cut(line, " ")
		if mod == "std" {
			mod = "standard library"
		}
		modOf[path] = mod
	}
	nm, err := exec.Command("go", "tool", "nm", "-size", bin).Output()
	if err != nil {
		return fmt.Errorf("go tool nm: %w", err)
	}
	sizes := map[string]int64{}
	var total int64
	sc := bufio.NewScanner(bytes.NewReader(nm))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		// address size type name
		f := strings.Fields(sc.Text())
		if len(f) < 4 || f[2] == "U" {
			continue
		}
		size, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		if f[2] == "D" || f[2] == "B" {
			continue // data and bss: memory at run time, not file bytes
		}
		name := strings.Join(f[3:], " ")
		total += size
		sizes[moduleOf(name, modOf)] += size
	}
	if err := sc.Err(); err != nil {
		return err
	}
	type row struct {
		mod  string
		size int64
	}
	var rows []row
	for m, s := range sizes {
		rows = append(rows, row{m, s})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].size > rows[j].size })
	fi, err := os.Stat(bin)
	if err != nil {
		return err
	}
	fmt.Printf("%s: %d bytes unstripped; %d bytes of text and read-only symbols\n\n", bin, fi.Size(), total)
	fmt.Println("| module | KiB | share |")
	fmt.Println("|---|---:|---:|")
	var rest int64
	for i, r := range rows {
		if i >= top {
			rest += r.size
			continue
		}
		fmt.Printf("| %s | %d | %.1f %% |\n", r.mod, r.size/1024, 100*float64(r.size)/float64(total))
	}
	if rest > 0 {
		fmt.Printf("| %d other modules | %d | %.1f %% |\n", len(rows)-top, rest/1024, 100*float64(rest)/float64(total))
	}
	return nil
}

// moduleOf names the module of a symbol: the module of the longest package
// path its name starts with (after the linker's prefixes), or a shared line.
func moduleOf(name string, modOf map[string]string) string {
	for _, p := range []string{"type:*", "type:", "go:itab.*", "go:itab.", "go:info.", "go:string."} {
		name = strings.TrimPrefix(name, p)
	}
	// A package path ends at the first '.' after its last '/'.
	slash := strings.LastIndex(name, "/")
	if i := strings.IndexByte(name[slash+1:], '.'); i >= 0 {
		if m, ok := modOf[name[:slash+1+i]]; ok {
			return m
		}
	}
	return "runtime tables and shared metadata"
}
