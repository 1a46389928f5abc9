package kit

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Table is one table of a report: a header row and rows of cells, printed
// as aligned text for the terminal or as markdown for docs/benchmarks.md.
type Table struct {
	Header []string
	Rows   [][]string
	// AlignRight right-aligns the text form's columns (figures).
	AlignRight bool
}

// Row appends a row; cells are formatted with %v.
func (t *Table) Row(cells ...any) {
	row := make([]string, len(cells))
	for i, c := range cells {
		row[i] = fmt.Sprint(c)
	}
	t.Rows = append(t.Rows, row)
}

// Write prints the table as markdown when markdown is set, else as text.
func (t *Table) Write(w io.Writer, markdown bool) error {
	if markdown {
		return t.Markdown(w)
	}
	return t.Text(w)
}

// Text prints the table with its columns aligned, two spaces apart.
func (t *Table) Text(w io.Writer) error {
	var flags uint
	if t.AlignRight {
		flags = tabwriter.AlignRight
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', flags)
	for _, row := range append([][]string{t.Header}, t.Rows...) {
		fmt.Fprintf(tw, "%s\t\n", strings.Join(row, "\t"))
	}
	return tw.Flush()
}

// Markdown prints the table as a markdown table; "|" in a cell is escaped.
func (t *Table) Markdown(w io.Writer) error {
	line := func(cells []string) string {
		esc := make([]string, len(cells))
		for i, c := range cells {
			esc[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		return "| " + strings.Join(esc, " | ") + " |\n"
	}
	var b strings.Builder
	b.WriteString(line(t.Header))
	b.WriteString("|" + strings.Repeat("---|", len(t.Header)) + "\n")
	for _, row := range t.Rows {
		b.WriteString(line(row))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
