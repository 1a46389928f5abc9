package specopts

import (
	"strings"

	"tug/internal/pod"
)

// Kubernetes expands $(VAR) references in a container's env values, command
// and args (k8s.io/kubernetes third_party/forked/golang/expansion): $(NAME)
// is replaced by the value of NAME when it is defined (an env value sees only
// the variables defined before it; command and args see all), an undefined
// reference is left as written, and $$ is an escaped $. Only the container's
// own env is visible, not the image's.

// expandEnv expands env in order and returns it as "NAME=value" entries and
// as a map for expanding command and args.
func expandEnv(env []pod.EnvVar) ([]string, map[string]string) {
	vars := make(map[string]string, len(env))
	out := make([]string, 0, len(env))
	for _, e := range env {
		v := expandVars(e.Value, vars)
		vars[e.Name] = v
		out = append(out, e.Name+"="+v)
	}
	return out, vars
}

func expandAll(in []string, vars map[string]string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = expandVars(s, vars)
	}
	return out
}

// expandVars expands $(NAME) references in s from vars.
func expandVars(s string, vars map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$': // escaped
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 { // unterminated: literal
				b.WriteString("$(")
				i++
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}
