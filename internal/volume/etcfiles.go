package volume

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"tug/internal/pod"
)

// The files a pod's containers get at /etc/hostname, /etc/hosts and
// /etc/resolv.conf, read-only, each unless a volume is mounted there. They
// live in the pod's directory and are rewritten in place (a running
// container's bind mount keeps the inode) when their content changes. A
// hostNetwork pod shares the node's /etc/hosts, as in Kubernetes.

// Limits of a resolv.conf, as the kubelet applies them.
const (
	maxResolvNameservers = 3
	maxResolvSearches    = 32
)

func (mgr *Manager) hostnamePath(uid string) string {
	return filepath.Join(mgr.podDir(uid), "etc-hostname")
}

func (mgr *Manager) hostsPath(uid string) string {
	return filepath.Join(mgr.podDir(uid), "etc-hosts")
}

func (mgr *Manager) resolvConfPath(uid string) string {
	return filepath.Join(mgr.podDir(uid), "etc-resolv.conf")
}

// writeEtcFiles writes the pod's hostname, hosts (not for hostNetwork) and
// resolv.conf files.
func (mgr *Manager) writeEtcFiles(p *pod.Pod, sb pod.Sandbox) error {
	h, err := Hostname(p)
	if err != nil {
		return err
	}
	if err := checkEtcWords(h, p.Spec.HostAliases, p.Spec.DNSConfig); err != nil {
		return err
	}
	uid := p.Metadata.UID
	if err := writeIfChanged(mgr.hostnamePath(uid), []byte(h+"\n")); err != nil {
		return fmt.Errorf("write hostname file: %w", err)
	}
	if !p.Spec.HostNetwork {
		if err := writeIfChanged(mgr.hostsPath(uid), hostsFile(h, p.FQDN(), sb.IP, p.Spec.HostAliases)); err != nil {
			return fmt.Errorf("write hosts file: %w", err)
		}
	}
	var host []byte
	if p.Spec.DNSPolicy != pod.DNSNone && mgr.cfg.ResolvConf != "" {
		if host, err = os.ReadFile(mgr.cfg.ResolvConf); err != nil {
			return fmt.Errorf("read --resolv-conf: %w", err)
		}
	}
	if err := writeIfChanged(mgr.resolvConfPath(uid), resolvConf(host, p.Spec.DNSPolicy, p.Spec.DNSConfig)); err != nil {
		return fmt.Errorf("write resolv.conf: %w", err)
	}
	return nil
}

// checkEtcWords refuses a value bound for the pod's /etc files that holds
// a space, a control character or a byte outside ASCII: each of them could
// start another word or line of the file (another hosts entry, a fourth
// nameserver). Validation refuses such manifests already; this keeps a
// value that reached the runtime some other way out of the files.
func checkEtcWords(hostname string, aliases []pod.HostAlias, dns *pod.DNSConfig) error {
	words := []string{hostname}
	for _, a := range aliases {
		words = append(words, a.IP)
		words = append(words, a.Hostnames...)
	}
	if dns != nil {
		words = append(words, dns.Nameservers...)
		words = append(words, dns.Searches...)
		for _, o := range dns.Options {
			words = append(words, o.Name)
			if o.Value != nil && *o.Value != "" {
				words = append(words, *o.Value)
			}
		}
	}
	for _, w := range words {
		if w == "" || strings.ContainsFunc(w, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
			return fmt.Errorf("write /etc files: value %q: %w", w, ErrEtcValue)
		}
	}
	return nil
}

// writeIfChanged writes data to path in place, unless the file holds it
// already.
func writeIfChanged(path string, data []byte) error {
	if b, err := os.ReadFile(path); err == nil && bytes.Equal(b, data) {
		return nil
	}
	return os.WriteFile(path, data, 0o644)
}

// hostsFile is the kubelet's managed /etc/hosts: localhost entries, then
// the pod's FQDN (with a subdomain) and hostname at its IP (when it has
// one), then the pod's hostAliases.
func hostsFile(hostname, fqdn, ip string, aliases []pod.HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString("# Kubernetes-managed hosts file (written by tug).\n")
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	switch {
	case ip != "" && fqdn != "":
		fmt.Fprintf(&b, "%s\t%s\t%s\n", ip, fqdn, strings.SplitN(hostname, ".", 2)[0])
	case ip != "":
		fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
	}
	if len(aliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, a := range aliases {
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
		}
	}
	return b.Bytes()
}

// resolvConf builds a pod's resolv.conf as the kubelet does on a node
// without cluster DNS: every policy but None starts from the host's file
// (host), then dnsConfig's nameservers and searches are appended (no
// duplicates, at most 3 nameservers and 32 searches) and its options
// override the host's by name; None uses dnsConfig alone.
func resolvConf(host []byte, policy pod.DNSPolicy, cfg *pod.DNSConfig) []byte {
	var nameservers, searches []string
	var options []pod.DNSConfigOption
	if policy != pod.DNSNone {
		nameservers, searches, options = parseResolvConf(host)
	}
	if cfg != nil {
		nameservers = appendNew(nameservers, cfg.Nameservers...)
		searches = appendNew(searches, cfg.Searches...)
		for _, o := range cfg.Options {
			i := slices.IndexFunc(options, func(h pod.DNSConfigOption) bool { return h.Name == o.Name })
			if i >= 0 {
				options[i] = o
			} else {
				options = append(options, o)
			}
		}
	}
	nameservers = nameservers[:min(len(nameservers), maxResolvNameservers)]
	searches = searches[:min(len(searches), maxResolvSearches)]

	var b bytes.Buffer
	for _, ns := range nameservers {
		fmt.Fprintf(&b, "nameserver %s\n", ns)
	}
	if len(searches) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(searches, " "))
	}
	if len(options) > 0 {
		opts := make([]string, len(options))
		for i, o := range options {
			opts[i] = o.Name
			if o.Value != nil {
				opts[i] += ":" + *o.Value
			}
		}
		fmt.Fprintf(&b, "options %s\n", strings.Join(opts, " "))
	}
	return b.Bytes()
}

// parseResolvConf reads the nameserver, search (and domain) and options
// lines of a resolv.conf; the last search or domain line wins, as in glibc.
func parseResolvConf(data []byte) (nameservers, searches []string, options []pod.DNSConfigOption) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || strings.HasPrefix(f[0], "#") || strings.HasPrefix(f[0], ";") {
			continue
		}
		switch f[0] {
		case "nameserver":
			if len(f) > 1 {
				nameservers = appendNew(nameservers, f[1])
			}
		case "search", "domain":
			searches = appendNew(nil, f[1:]...)
		case "options":
			for _, o := range f[1:] {
				name, value, ok := strings.Cut(o, ":")
				opt := pod.DNSConfigOption{Name: name}
				if ok {
					opt.Value = &value
				}
				options = append(options, opt)
			}
		}
	}
	return nameservers, searches, options
}

// appendNew appends the values not already in list.
func appendNew(list []string, values ...string) []string {
	for _, v := range values {
		if !slices.Contains(list, v) {
			list = append(list, v)
		}
	}
	return list
}
