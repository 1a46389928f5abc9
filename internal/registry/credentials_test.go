package registry

import (
	"encoding/base64"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseDockerConfig(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	tests := []struct {
		name    string
		config  string
		host    string
		want    Auth
		found   bool
		wantErr string
	}{
		{name: "auth field", config: `{"auths":{"reg.example:5000":{"auth":"` + b64("u:p:w") + `"}}}`, host: "reg.example:5000", want: Auth{"u", "p:w"}, found: true},
		{name: "username and password", config: `{"auths":{"reg.example":{"username":"u","password":"p"}}}`, host: "reg.example", want: Auth{"u", "p"}, found: true},
		{name: "URL key", config: `{"auths":{"http://127.0.0.1:5000/v2/":{"username":"u","password":"p"}}}`, host: "127.0.0.1:5000", want: Auth{"u", "p"}, found: true},
		{name: "Docker Hub's names", config: `{"auths":{"https://index.docker.io/v1/":{"username":"u","password":"p"}}}`, host: "docker.io", want: Auth{"u", "p"}, found: true},
		{name: "other host", config: `{"auths":{"reg.example":{"username":"u","password":"p"}}}`, host: "other.example"},
		{name: "bad base64", config: `{"auths":{"reg.example":{"auth":"%%%"}}}`, wantErr: "invalid base64"},
		{name: "no colon", config: `{"auths":{"reg.example":{"auth":"` + b64("secretonly") + `"}}}`, wantErr: "not user:password"},
		{name: "not JSON, content not quoted", config: `{"auths": hunter2`, wantErr: "invalid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := ParseDockerConfig([]byte(tt.config))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "secretonly") {
					t.Fatalf("error %v, want one saying %q and quoting nothing", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, found := a.Lookup(tt.host)
			if got != tt.want || found != tt.found {
				t.Errorf("Lookup(%q) = %v, %v; want %v, %v", tt.host, got, found, tt.want, tt.found)
			}
		})
	}
}

func TestFileCredentialsReadsEachTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	creds := FileCredentials(path, slog.New(slog.DiscardHandler))
	if u, s, err := creds("reg.example"); u != "" || s != "" || err != nil {
		t.Fatalf("missing file: %q %q %v, want anonymous", u, s, err)
	}
	if err := os.WriteFile(path, []byte(`{"auths":{"reg.example":{"username":"u","password":"p"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if u, s, _ := creds("reg.example"); u != "u" || s != "p" {
		t.Fatalf("after writing the file: %q %q, want u p", u, s)
	}
	if err := os.WriteFile(path, []byte(`not json`), 0o600); err != nil {
		t.Fatal(err)
	}
	if u, s, err := creds("reg.example"); u != "" || s != "" || err != nil {
		t.Fatalf("unreadable file: %q %q %v, want anonymous", u, s, err)
	}
}
