package kit

import (
	"strings"
	"testing"
)

func TestTable(t *testing.T) {
	tab := Table{Header: []string{"N", "tug", "ratio"}}
	tab.Row(1, "119 ms (103–141)", "1.01")
	tab.Row(30, "1873 ms (1627–2052)", "a|b")
	tests := []struct {
		name     string
		markdown bool
		right    bool
		want     string
	}{
		{name: "text", want: "" +
			"N   tug                  ratio  \n" +
			"1   119 ms (103–141)     1.01   \n" +
			"30  1873 ms (1627–2052)  a|b    \n"},
		{name: "text, right-aligned", right: true, want: "" +
			"   N                  tug  ratio\n" +
			"   1     119 ms (103–141)   1.01\n" +
			"  30  1873 ms (1627–2052)    a|b\n"},
		{name: "markdown", markdown: true, want: "" +
			"| N | tug | ratio |\n" +
			"|---|---|---|\n" +
			"| 1 | 119 ms (103–141) | 1.01 |\n" +
			"| 30 | 1873 ms (1627–2052) | a\\|b |\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab.AlignRight = tt.right
			var b strings.Builder
			if err := tab.Write(&b, tt.markdown); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("got\n%q\nwant\n%q", b.String(), tt.want)
			}
		})
	}
}
