package redact

import "testing"

func TestURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://fleet.example/pods.yaml", "https://fleet.example/pods.yaml"},
		{"https://user:s3cret@fleet.example/p", "https://xxxxx@fleet.example/p"},
		{"https://tok3n@fleet.example/p", "https://xxxxx@fleet.example/p"},
		{"http://h:8080/p?token=s3cret&device=d1", "http://h:8080/p?token=xxxxx&device=xxxxx"},
		{"http://h/p?s3cret", "http://h/p?xxxxx"},
		{"http://h/p?a=1&&b", "http://h/p?a=xxxxx&&xxxxx"},
		{"http://h/p#s3cret", "http://h/p"},
		{"http://h/p?", "http://h/p"},
		{"", ""},
		{"file:/etc/tug/manifests dir", "file:/etc/tug/manifests dir"},
		{"http://[::1]:1/p\x7f?token=s3cret", "<unparsable URL>"},
	}
	for _, tc := range tests {
		if got := URL(tc.in); got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
