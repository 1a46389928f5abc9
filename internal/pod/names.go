package pod

import "strings"

// Name rules, as in Kubernetes (k8s.io/apimachinery/pkg/util/validation):
// the syntax of a name, which the identity of a pod and of its objects
// rests on. Package manifest applies them.

const (
	dns1123LabelMaxLen     = 63
	DNS1123SubdomainMaxLen = 253
	labelValueMaxLen       = 63
	qualifiedNameMaxLen    = 63
	ianaSvcNameMaxLen      = 15

	DNS1123LabelMsg     = "must be a lowercase RFC 1123 label: at most 63 lower case letters, digits or '-', starting and ending with a letter or digit"
	DNS1123SubdomainMsg = "must be a lowercase RFC 1123 subdomain: at most 253 lower case letters, digits, '-' or '.', starting and ending with a letter or digit"
	EnvVarNameMsg       = "must consist of letters, digits, '_', '-' or '.', and must not start with a digit"
	IANASvcNameMsg      = "must be at most 15 lower case letters, digits or '-', with at least one letter, no '--', and not start or end with '-'"
	LabelNameMsg        = "must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
)

func isLowerAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

func isAlnum(c byte) bool { return isLowerAlnum(c) || 'A' <= c && c <= 'Z' }

// IsDNS1123Label reports whether s matches [a-z0-9]([-a-z0-9]*[a-z0-9])? and
// is at most 63 characters.
func IsDNS1123Label(s string) bool {
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

// IsDNS1123Subdomain reports whether s is dot-separated DNS-1123 labels, at
// most 253 characters.
func IsDNS1123Subdomain(s string) bool {
	if s == "" || len(s) > DNS1123SubdomainMaxLen {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if !IsDNS1123Label(label) {
			return false
		}
	}
	return true
}

// IsLabelName reports whether s matches
// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] and is at most 63 characters: the
// name part of a label or annotation key, and a non-empty label value.
func IsLabelName(s string) bool {
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

// QualifiedNameError checks a label or annotation key ("[prefix/]name") and
// returns what is wrong with it, or "".
func QualifiedNameError(key string) string {
	prefix, name, hasPrefix := strings.Cut(key, "/")
	if !hasPrefix {
		name, prefix = prefix, ""
	}
	switch {
	case hasPrefix && !IsDNS1123Subdomain(prefix):
		return "the prefix before '/' " + DNS1123SubdomainMsg
	case strings.Contains(name, "/"):
		return "must contain at most one '/'"
	case !IsLabelName(name):
		return "the name " + LabelNameMsg
	}
	return ""
}

// LabelValueError checks a label value and returns what is wrong with it, or
// "". An empty value is valid.
func LabelValueError(v string) string {
	if v == "" || IsLabelName(v) {
		return ""
	}
	return "a label value " + LabelNameMsg + ", or be empty"
}

// IsIANASvcName reports whether s is a valid port name: at most 15 lower case
// letters, digits and '-', at least one letter, no "--", no '-' at either end.
func IsIANASvcName(s string) bool {
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
