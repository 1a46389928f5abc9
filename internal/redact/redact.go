package redact

import (
	"net/url"
	"strings"
)

// Mask is what stands in for a secret.
const Mask = "xxxxx"

// URL returns rawURL with its user information and every query value
// replaced by Mask (a query item without "=" is replaced whole) and its
// fragment dropped: what may be logged or shown. A string with none of
// these (a file source's name, "file:/etc/tug/manifests") is returned as
// it is; one that does not parse is replaced whole.
func URL(rawURL string) string {
	if rawURL == "" {
		return ""
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return "<unparsable URL>"
	}
	if u.User == nil && u.RawQuery == "" && !u.ForceQuery && u.Fragment == "" {
		return rawURL
	}
	return Parsed(u)
}

// Parsed is URL for a parsed URL, always in u's normal form (the URL
// source's name); u is not changed.
func Parsed(u *url.URL) string {
	c := *u
	if c.User != nil {
		c.User = url.User(Mask)
	}
	if c.RawQuery != "" {
		parts := strings.Split(c.RawQuery, "&")
		for i, p := range parts {
			if k, _, ok := strings.Cut(p, "="); ok {
				parts[i] = k + "=" + Mask
			} else if p != "" {
				parts[i] = Mask
			}
		}
		c.RawQuery = strings.Join(parts, "&")
	}
	c.ForceQuery = false
	c.Fragment, c.RawFragment = "", ""
	return c.String()
}
