//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// dnsPod is a pod whose hostAliases and dnsConfig end up in its /etc/hosts
// and /etc/resolv.conf; ip, nameserver and option are written into the
// manifest as given (YAML double-quoted scalars), at fixed lines: the
// alias's ip on line 8, the nameservers on line 12, the option on line 14.
func dnsPod(image, ip, nameserver, option string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: dns
spec:
  terminationGracePeriodSeconds: 5
  hostAliases:
    - ip: %s
      hostnames: [fleet.local]
  dnsPolicy: None
  dnsConfig:
    nameservers: ["192.0.2.53", %s]
    options:
      - name: %s
  containers:
    - name: main
      image: %s
      command: ["sh", "-c", %s]
`, ip, nameserver, option, image, q(idle))
}

// TestEtcFilesRefuseInjectedLines: an IPv6 zone or a DNS option holding a
// newline would add lines of the pod's choosing to its /etc/hosts (another
// name for an address) and /etc/resolv.conf (more than three nameservers).
// tug validate refuses such a manifest naming file, line and field; the
// running agent refuses the edit the same way and keeps the last good
// version of the pod, whose files stay as they were.
func TestEtcFilesRefuseInjectedLines(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	hostile := dnsPod(tg.image, q("fe80::1%x\n6.6.6.6 evil"),
		q("fe80::1%x\nnameserver 6.6.6.6\nnameserver 6.6.6.7\nnameserver 6.6.6.8"), q("ndots:1\nnameserver 6.6.6.9"))

	file := filepath.Join(tg.base, "dns.yaml")
	if err := os.WriteFile(file, []byte(hostile), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tugBin, "validate", file).CombinedOutput()
	if err == nil {
		t.Errorf("tug validate accepted the manifest:\n%s", out)
	}
	for _, want := range []string{
		file + ":8:11: spec.hostAliases[0].ip",
		file + ":12:",
		"spec.dnsConfig.nameservers[1]",
		file + ":14:",
		"spec.dnsConfig.options[0].name",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("tug validate's output lacks %q:\n%s", want, out)
		}
	}

	tg.writeManifest("dns.yaml", dnsPod(tg.image, q("10.1.2.3"), q("192.0.2.54"), q("ndots")))
	c0 := tg.waitRunning(startTimeout, "dns", "main", 0)
	etc := filepath.Join(tg.rootDir, "pods", tg.uid("dns"))
	hosts0, err0 := os.ReadFile(filepath.Join(etc, "etc-hosts"))
	resolv0, err1 := os.ReadFile(filepath.Join(etc, "etc-resolv.conf"))
	if err0 != nil || err1 != nil || !strings.Contains(string(hosts0), "10.1.2.3\tfleet.local") {
		t.Fatalf("the good version's files: %q (%v), %q (%v)", hosts0, err0, resolv0, err1)
	}

	tg.writeManifest("dns.yaml", hostile)
	errLine := tg.manifestPath("dns.yaml") + ":8:11: spec.hostAliases[0].ip"
	var hosts, resolv []byte
	tg.waitFor(logTimeout, "the hostile edit refused or applied", func() (bool, error) {
		hosts, _ = os.ReadFile(filepath.Join(etc, "etc-hosts"))
		resolv, _ = os.ReadFile(filepath.Join(etc, "etc-resolv.conf"))
		return strings.Contains(tg.output(), errLine) || strings.Contains(string(hosts), "evil"), nil
	})
	if strings.Contains(string(hosts), "evil") || strings.Contains(string(resolv), "6.6.6.") {
		t.Fatalf("the pod's /etc files hold lines it injected:\n--- etc-hosts\n%s--- etc-resolv.conf\n%s", hosts, resolv)
	}
	if !strings.Contains(tg.output(), errLine) {
		t.Errorf("tug did not report %q", errLine)
	}
	c, ok, err := tg.container(tg.uid("dns"), "main")
	if err != nil || !ok || c.ID != c0.ID || c.PID != c0.PID {
		t.Errorf("the refused edit changed the pod: before %v, after %v (%v, %v)", c0, c, ok, err)
	}
	if string(hosts) != string(hosts0) || string(resolv) != string(resolv0) {
		t.Errorf("the refused edit changed the pod's files:\n%s%s\nwant\n%s%s", hosts, resolv, hosts0, resolv0)
	}
}
