package manifest

import "strings"

// Name rules, as in Kubernetes (k8s.io/apimachinery/pkg/util/validation).

const (
	dns1123LabelMaxLen     = 63
	dns1123SubdomainMaxLen = 253
	labelValueMaxLen       = 63
	qualifiedNameMaxLen    = 63
	ianaSvcNameMaxLen      = 15

	dns1123LabelMsg     = "must be a lowercase RFC 1123 label: at most 63 lower case letters, digits or '-', starting and ending with a letter or digit"
	dns1123SubdomainMsg = "must be a lowercase RFC 1123 subdomain: at most 253 lower case letters, digits, '-' or '.', starting and ending with a letter or digit"
	envVarNameMsg       = "must consist of letters, digits, '_', '-' or '.', and must not start with a digit"
	ianaSvcNameMsg      = "must be at most 15 lower case letters, digits or '-', with at least one letter, no '--', and not start or end with '-'"
	labelNameMsg        = "must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
)

func isLowerAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

func isAlnum(c byte) bool { return isLowerAlnum(c) || 'A' <= c && c <= 'Z' }

// isDNS1123Label reports whether s matches [a-z0-9]([-a-z0-9]*[a-z0-9])? and
// is at most 63 characters.
func isDNS1123Label(s string) bool {
	if s == "" || len(s) > dns1123LabelMaxLen || !isLowerAlnum(s[0]) || !isLowerAlnum(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isLowerAlnum(s[i]) && s[i] != '-' {
			return false
		}
	}
	return true
}

// isDNS1123Subdomain reports whether s is dot-separated DNS-1123 labels, at
// most 253 characters.
func isDNS1123Subdomain(s string) bool {
	if s == "" || len(s) > dns1123SubdomainMaxLen {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if !isDNS1123Label(label) {
			return false
		}
	}
	return true
}

// isLabelName reports whether s matches
// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] and is at most 63 characters: the
// name part of a label or annotation key, and a non-empty label value.
func isLabelName(s string) bool {
	if s == "" || len(s) > qualifiedNameMaxLen || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// qualifiedNameError checks a label or annotation key ("[prefix/]name") and
// returns what is wrong with it, or "".
func qualifiedNameError(key string) string {
	prefix, name, hasPrefix := strings.Cut(key, "/")
	if !hasPrefix {
		name, prefix = prefix, ""
	}
	switch {
	case hasPrefix && !isDNS1123Subdomain(prefix):
		return "the prefix before '/' " + dns1123SubdomainMsg
	case strings.Contains(name, "/"):
		return "must contain at most one '/'"
	case !isLabelName(name):
		return "the name " + labelNameMsg
	}
	return ""
}

// labelValueError checks a label value and returns what is wrong with it, or
// "". An empty value is valid.
func labelValueError(v string) string {
	if v == "" || isLabelName(v) {
		return ""
	}
	return "a label value " + labelNameMsg + ", or be empty"
}

// isIANASvcName reports whether s is a valid port name: at most 15 lower case
// letters, digits and '-', at least one letter, no "--", no '-' at either end.
func isIANASvcName(s string) bool {
	if s == "" || len(s) > ianaSvcNameMaxLen || s[0] == '-' || s[len(s)-1] == '-' || strings.Contains(s, "--") {
		return false
	}
	letter := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isLowerAlnum(c) && c != '-' {
			return false
		}
		letter = letter || 'a' <= c && c <= 'z'
	}
	return letter
}
