package volume

import (
	"errors"
	"strings"
	"testing"

	"tug/internal/pod"
)

func TestResolvConf(t *testing.T) {
	const host = `# generated
nameserver 192.0.2.1
nameserver 192.0.2.2
domain old.example
search lan.example corp.example
options ndots:1 timeout:2
`
	two := "2"
	tests := []struct {
		name   string
		host   string
		policy pod.DNSPolicy
		cfg    *pod.DNSConfig
		want   string
	}{{
		name:   "cluster first is the host's file without cluster DNS",
		host:   host,
		policy: pod.DNSClusterFirst,
		want:   "nameserver 192.0.2.1\nnameserver 192.0.2.2\nsearch lan.example corp.example\noptions ndots:1 timeout:2\n",
	}, {
		name:   "default merges dnsConfig",
		host:   host,
		policy: pod.DNSDefault,
		cfg: &pod.DNSConfig{
			Nameservers: []string{"192.0.2.2", "192.0.2.3", "192.0.2.4"},
			Searches:    []string{"pod.example"},
			Options:     []pod.DNSConfigOption{{Name: "ndots", Value: &two}, {Name: "edns0"}},
		},
		want: "nameserver 192.0.2.1\nnameserver 192.0.2.2\nnameserver 192.0.2.3\nsearch lan.example corp.example pod.example\noptions ndots:2 timeout:2 edns0\n",
	}, {
		name:   "none ignores the host",
		host:   host,
		policy: pod.DNSNone,
		cfg:    &pod.DNSConfig{Nameservers: []string{"2001:db8::53"}},
		want:   "nameserver 2001:db8::53\n",
	}, {
		name:   "no host file",
		policy: pod.DNSClusterFirst,
		want:   "",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(resolvConf([]byte(tt.host), tt.policy, tt.cfg)); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestHostsFile(t *testing.T) {
	got := string(hostsFile("web-node1", "", "10.244.0.7", nil))
	for _, line := range []string{"127.0.0.1\tlocalhost\n", "::1\tlocalhost ip6-localhost ip6-loopback\n", "10.244.0.7\tweb-node1\n"} {
		if !strings.Contains(got, line) {
			t.Errorf("hosts file lacks %q:\n%s", line, got)
		}
	}
	if strings.Contains(string(hostsFile("web-node1", "", "", nil)), "web-node1") {
		t.Error("a pod without an IP is listed")
	}
}

func TestHostsFileFQDNAndAliases(t *testing.T) {
	got := string(hostsFile("box", "box.fleet.edge.svc.cluster.local", "10.244.0.7", []pod.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"registry.local", "mirror.local"}}}))
	for _, want := range []string{"10.244.0.7\tbox.fleet.edge.svc.cluster.local\tbox\n", "# Entries added by HostAliases.\n10.1.2.3\tregistry.local\tmirror.local\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("hosts file lacks %q:\n%s", want, got)
		}
	}
}

func TestCheckEtcWords(t *testing.T) {
	val := func(s string) *string { return &s }
	tests := []struct {
		name    string
		host    string
		aliases []pod.HostAlias
		dns     *pod.DNSConfig
		ok      bool
	}{
		{name: "plain", host: "web", aliases: []pod.HostAlias{{IP: "10.0.0.9", Hostnames: []string{"db.local"}}},
			dns: &pod.DNSConfig{Nameservers: []string{"fe80::1"}, Searches: []string{"example.com"},
				Options: []pod.DNSConfigOption{{Name: "ndots", Value: val("2")}, {Name: "edns0"}, {Name: "rotate", Value: val("")}}}, ok: true},
		{name: "zone with a newline", host: "web", aliases: []pod.HostAlias{{IP: "fe80::1%x\n6.6.6.6 evil", Hostnames: []string{"a"}}}},
		{name: "hostname with a tab", host: "web", aliases: []pod.HostAlias{{IP: "10.0.0.9", Hostnames: []string{"a\tb"}}}},
		{name: "nameserver line", host: "web", dns: &pod.DNSConfig{Nameservers: []string{"1.1.1.1\nnameserver 6.6.6.6"}}},
		{name: "search with a space", host: "web", dns: &pod.DNSConfig{Searches: []string{"a b"}}},
		{name: "option value with a space", host: "web", dns: &pod.DNSConfig{Options: []pod.DNSConfigOption{{Name: "timeout", Value: val("1 attempts:9")}}}},
		{name: "empty option name", host: "web", dns: &pod.DNSConfig{Options: []pod.DNSConfigOption{{Name: ""}}}},
		{name: "non-ASCII", host: "wéb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkEtcWords(tt.host, tt.aliases, tt.dns)
			if tt.ok != (err == nil) {
				t.Fatalf("checkEtcWords = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrEtcValue) {
				t.Errorf("error %v is not ErrEtcValue", err)
			}
		})
	}
}
