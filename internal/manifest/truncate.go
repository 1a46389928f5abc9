package manifest

import (
	"reflect"
	"strings"

	"tug/internal/pod"
)

// truncateArgs returns args with every value that format quotes (%q), as
// manifest values are, passed through pod.Truncate if it is a string (or
// string-kinded, such as a Protocol). tug's own texts, printed with %s,
// stay whole.
func truncateArgs(format string, args []any) []any {
	var out []any
	n := 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		for i < len(format) && strings.IndexByte("+-# 0123456789.", format[i]) >= 0 {
			i++
		}
		if i >= len(format) || format[i] == '%' {
			continue
		}
		if format[i] == 'q' && n < len(args) && args[n] != nil {
			if v := reflect.ValueOf(args[n]); v.Kind() == reflect.String && len(v.String()) > pod.MaxEcho {
				if out == nil {
					out = append([]any(nil), args...)
				}
				out[n] = pod.Truncate(v.String())
			}
		}
		n++
	}
	if out == nil {
		return args
	}
	return out
}
