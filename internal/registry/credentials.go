package registry

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"strings"
)

// Auth is one registry's user name and password (or token).
type Auth struct{ User, Secret string }

// Auths are the credentials of a docker config.json (or a Secret's
// .dockerconfigjson) by registry host. They are never logged.
type Auths map[string]Auth

// dockerConfig is the part of docker's config.json tug reads.
type dockerConfig struct {
	Auths map[string]struct {
		Auth     string `json:"auth"`
		Username string `json:"username"`
		Password string `json:"password"`
	} `json:"auths"`
}

// ParseDockerConfig reads a config.json into credentials by registry
// host. Its errors never quote the content.
func ParseDockerConfig(data []byte) (Auths, error) {
	var dc dockerConfig
	if err := json.Unmarshal(data, &dc); err != nil {
		return nil, errors.New("not a docker config.json: invalid JSON")
	}
	out := Auths{}
	for key, a := range dc.Auths {
		c := Auth{User: a.Username, Secret: a.Password}
		if a.Auth != "" {
			dec, err := base64.StdEncoding.DecodeString(a.Auth)
			if err != nil {
				return nil, fmt.Errorf("auths[%q].auth: invalid base64", key)
			}
			u, p, ok := strings.Cut(string(dec), ":")
			if !ok {
				return nil, fmt.Errorf("auths[%q].auth: not user:password", key)
			}
			c = Auth{User: u, Secret: p}
		}
		out[authHost(key)] = c
	}
	return out, nil
}

// Lookup returns the credentials of host, a host a resolver asks about.
func (a Auths) Lookup(host string) (Auth, bool) {
	c, ok := a[authHost(host)]
	return c, ok
}

// authHost turns a config.json key ("https://index.docker.io/v1/",
// "registry.example:5000", "http://127.0.0.1:5000/") into the host the
// resolver asks about.
func authHost(key string) string {
	if strings.Contains(key, "://") {
		if u, err := url.Parse(key); err == nil {
			key = u.Host
		}
	}
	key, _, _ = strings.Cut(key, "/")
	switch key {
	case "index.docker.io", "docker.io", "registry-1.docker.io":
		return "registry-1.docker.io"
	}
	return key
}

// FileCredentials answers auth from the docker config.json at path, read
// at each challenge so that a change applies without a restart; a missing
// file means anonymous, an unreadable one is logged (never its content)
// and means anonymous too.
func FileCredentials(path string, log *slog.Logger) Credentials {
	return func(host string) (string, string, error) {
		a, err := ReadDockerConfig(path)
		if err != nil {
			log.Warn("registry credentials unreadable; going on without them", "file", path, "err", err)
			return "", "", nil
		}
		c, _ := a.Lookup(host)
		return c.User, c.Secret, nil
	}
}

// ReadDockerConfig reads the docker config.json at path; a missing file
// gives no credentials and no error.
func ReadDockerConfig(path string) (Auths, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return ParseDockerConfig(data)
}
