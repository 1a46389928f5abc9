//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"tug/internal/podview"
	"tug/internal/testutil"
)

// The pod network end to end: tug runs in the test's node namespace, which
// is joined by a veth to an "outside" namespace standing for the rest of
// the world (198.18.0.0/24: the node is .1, outside is .2 and the node's
// default route). Nothing leaves these namespaces.
const (
	nodeAddr    = "198.18.0.1"
	outsideAddr = "198.18.0.2"
	outsidePort = "8000"
)

// world is a node namespace with an outside namespace beside it, and an
// HTTP server outside that answers with the address it sees the request
// come from.
type world struct {
	outside string // path of the outside namespace

	mu      sync.Mutex
	callers []string // remote IPs the outside server saw
}

// newWorld links tg's node to a new outside namespace and starts the
// outside server. Call it before tug starts (tugOpts.beforeStart), so that
// tug finds its default route (its hostIP) at start-up.
func newWorld(tg *tug) *world {
	t := tg.t
	w := &world{outside: testutil.NewNetns(t, "tug-out")}
	node, out := netnsName(tg.netns), netnsName(w.outside)
	run(t, "ip", "-n", node, "link", "add", "uplink", "type", "veth", "peer", "name", "downlink", "netns", out)
	run(t, "ip", "-n", node, "addr", "add", nodeAddr+"/24", "dev", "uplink")
	run(t, "ip", "-n", node, "link", "set", "uplink", "up")
	run(t, "ip", "-n", out, "addr", "add", outsideAddr+"/24", "dev", "downlink")
	run(t, "ip", "-n", out, "link", "set", "downlink", "up")
	run(t, "ip", "-n", node, "route", "add", "default", "via", outsideAddr)

	l := listenIn(t, w.outside, "tcp", outsideAddr+":"+outsidePort)
	srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		w.mu.Lock()
		w.callers = append(w.callers, host)
		w.mu.Unlock()
		fmt.Fprintf(rw, "outside saw %s\n", host)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return w
}

func (w *world) seen() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.callers...)
}

// webPod is a pod serving "hello from <hostname>" with busybox httpd on
// port 80, published on hostPort when it is not 0.
func webPod(name, image string, hostPort int) string {
	ports := "      ports:\n        - containerPort: 80\n"
	if hostPort != 0 {
		ports += fmt.Sprintf("          hostPort: %d\n", hostPort)
	}
	script := `mkdir -p /www && echo "hello from $(hostname)" > /www/index.html && httpd -p 80 -h /www && ` + idle
	return shPod(name, image, script) + ports
}

// fetchLoop is a script that asks host:port for / over HTTP every half
// second and prints "got: <last line of the body>" or "failed". (It speaks
// HTTP through nc: the static busybox's wget crashes in glibc's NSS.)
func fetchLoop(host, port string) string {
	return fmt.Sprintf(`trap 'exit 0' TERM; while true; do b=$(printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 2 %s %s | tail -n 1); if [ -n "$b" ]; then echo "got: $b"; else echo failed; fi; sleep 0.5; done`, host, port)
}

// podIP waits until the pod named name reports a pod IP, and returns it.
func (tg *tug) podIPOf(name string) string {
	v := tg.waitPod(startTimeout, name, "a pod IP", func(v *podview.View) error {
		if v.Status.PodIP == "" {
			return fmt.Errorf("no podIP")
		}
		return nil
	})
	return v.Status.PodIP
}

// netState counts what the pod network has in the node: veths on the
// bridge, leases, hostPort rules.
// netState counts what tug has in its node's network namespace; links
// names the links on the bridge, so that a count that is off says which.
type netState struct {
	veths, leases, rules int
	links                string
}

func (tg *tug) netState() netState {
	tg.t.Helper()
	node := netnsName(tg.netns)
	var s netState
	for _, line := range strings.Split(run(tg.t, "ip", "-n", node, "-o", "link", "show", "master", "tug0"), "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			s.veths++
			s.links += strings.TrimSuffix(f[1], ":") + " "
		}
	}
	leases, err := os.ReadDir(filepath.Join(tg.rootDir, "network", "leases"))
	if err != nil && !os.IsNotExist(err) {
		tg.t.Fatal(err)
	}
	for _, e := range leases {
		if !strings.HasPrefix(e.Name(), ".") {
			s.leases++
		}
	}
	rules := run(tg.t, "ip", "netns", "exec", node, "nft", "list", "ruleset")
	s.rules = len(dnatRule.FindAllString(rules, -1))
	return s
}

// dnatRule matches a hostPort rule in `nft list ruleset`.
var dnatRule = regexp.MustCompile(`dnat (ip )?to `)

func startNetTug(t *testing.T, args ...string) (*tug, *world) {
	testutil.RequireCommand(t, "nft")
	var w *world
	tg := startTug(t, tugOpts{args: args, beforeStart: func(tg *tug) { w = newWorld(tg) }})
	return tg, w
}

func TestPodNetwork(t *testing.T) {
	t.Parallel()
	tg, w := startNetTug(t)
	tg.writeManifest("server.yaml", webPod("server", tg.image, 8088))
	serverIP := tg.podIPOf("server")
	tg.waitRunning(startTimeout, "server", "main", 0)

	t.Run("status", func(t *testing.T) {
		tg := tg.forTest(t)
		v, err := tg.podView("server")
		if err != nil {
			t.Fatal(err)
		}
		st := v.Status
		if !strings.HasPrefix(st.PodIP, "10.87.0.") || len(st.PodIPs) != 1 || st.PodIPs[0].IP != st.PodIP {
			t.Errorf("podIP %q podIPs %v, want one address of 10.87.0.0/24", st.PodIP, st.PodIPs)
		}
		if st.HostIP != nodeAddr {
			t.Errorf("hostIP %q, want the node's %s", st.HostIP, nodeAddr)
		}
	})

	tg.writeManifest("client.yaml", shPod("client", tg.image, fetchLoop(serverIP, "80")))
	clientIP := tg.podIPOf("client")
	if clientIP == serverIP {
		t.Fatalf("two pods share %s", clientIP)
	}
	t.Run("pod to pod", func(t *testing.T) {
		tg := tg.forTest(t)
		tg.waitLog(startTimeout, "client", "main", 0, "got: hello from server-"+hostname)
	})

	t.Run("outbound NAT", func(t *testing.T) {
		tg := tg.forTest(t)
		tg.writeManifest("out.yaml", shPod("out", tg.image, fetchLoop(outsideAddr, outsidePort)))
		tg.waitLog(startTimeout, "out", "main", 0, "got: outside saw "+nodeAddr)
		for _, ip := range w.seen() {
			if ip != nodeAddr {
				t.Errorf("the outside server saw %s, want only the node's address %s", ip, nodeAddr)
			}
		}
	})

	t.Run("hostPort", func(t *testing.T) {
		tg := tg.forTest(t)
		client := httpClientIn(w.outside, 3*time.Second)
		tg.waitFor(startTimeout, "http://"+nodeAddr+":8088/ from outside", func() (bool, error) {
			body, err := get(client, "http://"+nodeAddr+":8088/")
			if err != nil {
				return false, err
			}
			return strings.Contains(body, "hello from server"), fmt.Errorf("body %q", body)
		})
	})

	t.Run("etc files", func(t *testing.T) {
		tg := tg.forTest(t)
		tg.writeManifest("files.yaml", shPod("files", tg.image, `cat /etc/hosts /etc/resolv.conf; echo files-done; `+idle,
			"  dnsPolicy: None\n  dnsConfig:\n    nameservers: [192.0.2.53]\n    searches: [edge.example]\n"))
		ip := tg.podIPOf("files")
		lines := tg.waitLog(startTimeout, "files", "main", 0, "files-done")
		var text []string
		for _, l := range lines {
			text = append(text, l.Text)
		}
		all := strings.Join(text, "\n")
		for _, want := range []string{"127.0.0.1\tlocalhost", ip + "\tfiles-" + hostname, "nameserver 192.0.2.53", "search edge.example"} {
			if !strings.Contains(all, want) {
				t.Errorf("the pod's /etc files lack %q:\n%s", want, all)
			}
		}
	})

	// tug killed and started again: the same addresses, nothing doubled,
	// and the pods still reach each other.
	before := tg.netState()
	tg.Kill()
	restarted := time.Now()
	tg.Start()
	tg.waitFor(startTimeout, "the pods' IPs after the restart", func() (bool, error) {
		for name, want := range map[string]string{"server": serverIP, "client": clientIP} {
			v, err := tg.podView(name)
			if err != nil {
				return false, err
			}
			if v.Status.PodIP != want {
				return false, fmt.Errorf("%s has %q, had %s", name, v.Status.PodIP, want)
			}
		}
		return true, nil
	})
	// The client keeps reaching the server after the restart.
	tg.waitFor(startTimeout, "a fetch after the restart", func() (bool, error) {
		lines, err := tg.logLines("client", "main", 0)
		if err != nil {
			return false, err
		}
		for _, l := range lines {
			if l.Time.After(restarted) && strings.Contains(l.Text, "got: hello from server-"+hostname) {
				return true, nil
			}
		}
		return false, fmt.Errorf("no fetch logged since the restart")
	})
	if after := tg.netState(); after != before {
		t.Errorf("before the restart %+v, after %+v: want the same veths, leases and rules", before, after)
	}
	if s := tg.netState(); s.veths != 4 || s.leases != 4 || s.rules == 0 {
		t.Errorf("%+v: want 4 veths and leases (server, client, out, files) and the hostPort's rules", s)
	}
}

// get fetches url and returns the body of a 200 answer.
func get(c *http.Client, url string) (string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", resp.Status, b)
	}
	return string(b), err
}

func TestPodNetworkNoLeaks(t *testing.T) {
	t.Parallel()
	tg, _ := startNetTug(t)
	// A pod that stays, so the bridge and the rules of others exist.
	tg.writeManifest("stay.yaml", webPod("stay", tg.image, 8089))
	tg.waitRunning(startTimeout, "stay", "main", 0)
	before := tg.netState()
	mountsBefore, err := mountsUnder(tg.runDir)
	if err != nil {
		t.Fatal(err)
	}

	const cycles = 200
	start := time.Now()
	for i := range cycles {
		// idle traps SIGTERM from its first instruction: each stop is quick.
		tg.writeManifest("cycle.yaml", shPod("cycle", tg.image, idle)+fmt.Sprintf("      ports:\n        - containerPort: 80\n          hostPort: %d\n", 9000+i%100))
		uid := tg.uid("cycle")
		tg.waitRunningUID(startTimeout, uid, "main", 0)
		if err := os.Remove(tg.manifestPath("cycle.yaml")); err != nil {
			t.Fatal(err)
		}
		tg.waitFor(removeTimeout, fmt.Sprintf("cycle %d: the pod to be removed", i), func() (bool, error) {
			cs, err := tg.podContainers(uid)
			if err != nil || len(cs) > 0 {
				return false, fmt.Errorf("containers: %d, %v", len(cs), err)
			}
			if s, err := exists(filepath.Join(tg.runDir, "ns", uid)); s != "" || err != nil {
				return false, fmt.Errorf("namespaces: %q, %v", s, err)
			}
			if s := tg.netState(); s != before {
				return false, fmt.Errorf("network %+v, before %+v", s, before)
			}
			return true, nil
		})
	}
	t.Logf("%d create/delete cycles in %v", cycles, time.Since(start).Round(time.Millisecond))
	after := tg.netState()
	if after != before {
		t.Errorf("after %d cycles %+v, before %+v", cycles, after, before)
	}
	mountsAfter, err := mountsUnder(tg.runDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(mountsAfter) != len(mountsBefore) {
		t.Errorf("mounts under the run dir: %d before, %d after", len(mountsBefore), len(mountsAfter))
	}
}

func TestPodNetworkFullRange(t *testing.T) {
	t.Parallel()
	// A /29 has 5 addresses for pods (the network, the gateway and the
	// broadcast address are never leased); 7 pods want one each.
	tg, _ := startNetTug(t, "--pod-cidr", "10.87.0.0/29")
	const pods = 7
	for i := range pods {
		tg.writeManifest(fmt.Sprintf("p%d.yaml", i), shPod(fmt.Sprintf("p%d", i), tg.image, idle))
	}
	var out string
	tg.waitFor(startTimeout, "5 pods running and 2 reporting the full range", func() (bool, error) {
		var code int
		out, _, code = tg.runCLI("pods")
		if code != 0 {
			return false, fmt.Errorf("tug pods exited %d", code)
		}
		running := strings.Count(out, "Running")
		full := strings.Count(out, "no free address in 10.87.0.0/29")
		return running == 5 && full == 2, fmt.Errorf("%d running, %d full:\n%s", running, full, out)
	})
	t.Logf("tug pods:\n%s", out)
	if s := tg.netState(); s.leases != 5 || s.veths != 5 {
		t.Errorf("%+v, want 5 leases and veths", s)
	}

	// Removing a running pod frees its address for a waiting one.
	var freed string
	for i := range pods {
		if v, err := tg.podView(fmt.Sprintf("p%d", i)); err == nil && v.Status.PodIP != "" {
			freed = fmt.Sprintf("p%d", i)
			break
		}
	}
	if err := os.Remove(tg.manifestPath(freed + ".yaml")); err != nil {
		t.Fatal(err)
	}
	tg.waitFor(startTimeout, "a waiting pod to get the freed address", func() (bool, error) {
		out, _, _ = tg.runCLI("pods")
		running := strings.Count(out, "Running")
		return running == 5 && strings.Count(out, "no free address") == 1, fmt.Errorf("%d running:\n%s", running, out)
	})
}

// TestPodNetworkOrphansRemovedAtStart: what a crash left of a pod that is
// gone (its lease, its veth) is removed once tug starts again.
func TestPodNetworkOrphansRemovedAtStart(t *testing.T) {
	t.Parallel()
	const ghost = "00000000-0000-4000-8000-0000000000bb"
	tg, _ := startNetTug(t)
	tg.Stop()
	// A crash left a veth (found by its alias) and a lease of a pod that no
	// manifest has any more.
	node := netnsName(tg.netns)
	run(t, "ip", "-n", node, "link", "add", "vethghost0", "type", "veth", "peer", "name", "vethghost1")
	// The alias names the instance: the test's containerd namespace.
	run(t, "ip", "-n", node, "link", "set", "vethghost0", "alias", "tug-pod:"+tg.ns+":"+ghost)
	lease := filepath.Join(tg.rootDir, "network", "leases", "10.87.0.77")
	if err := os.MkdirAll(filepath.Dir(lease), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lease, []byte(ghost+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tg.Start()
	tg.writeManifest("live.yaml", shPod("live", tg.image, idle))
	tg.waitRunning(startTimeout, "live", "main", 0)
	tg.waitFor(removeTimeout, "the ghost's lease and veth to be removed", func() (bool, error) {
		if _, err := os.Stat(lease); err == nil {
			return false, fmt.Errorf("lease %s is still there", lease)
		}
		out := run(t, "ip", "-n", node, "-o", "link", "show")
		if strings.Contains(out, "vethghost0") {
			return false, fmt.Errorf("veth vethghost0 is still there")
		}
		return true, nil
	})
	if s := tg.netState(); s.leases != 1 || s.veths != 1 {
		t.Errorf("%+v: want the live pod's lease and veth only", s)
	}
}
