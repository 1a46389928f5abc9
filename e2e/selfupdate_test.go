//go:build e2e

package e2e

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tug/internal/selfupdate"
	"tug/internal/statusreport"
	"tug/internal/testutil"
)

// buildTugVersion builds tug with -X main.version=version (and, when
// fault is not "", the self-update test fault) into dir.
func buildTugVersion(t *testing.T, dir, version, fault string) string {
	t.Helper()
	out := filepath.Join(dir, "tug-"+version)
	ld := "-X main.version=" + version
	if fault != "" {
		ld += " -X main.selfUpdateTestFault=" + fault
	}
	// The flags of testutil's build (the Makefile's BUILDFLAGS): the
	// packages come from the build cache and only the link runs, a few
	// seconds instead of a compile of everything beside the parallel
	// tests (which a pull's stall timer or a probe would feel).
	cmd := exec.Command("go", "build", "-trimpath", "-tags", "grpcnotrace", "-ldflags", ld, "-o", out, "../agent")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build tug %s: %v\n%s", version, err, b)
	}
	return out
}

// releasePush runs "tug release push args..." on the host.
func releasePush(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(tugBin, append([]string{"release", "push"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("tug release push %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// startBinary starts bin (another build of tug) as tg.Start starts tugBin.
func (tg *tug) startBinary(bin string, more ...string) {
	tg.t.Helper()
	if tg.running() {
		tg.t.Fatal("startBinary: tug is already running")
	}
	args := tg.runArgs(more...)
	fmt.Fprintf(tg.out, "==== nsenter --net=%s %s %s\n", tg.netns, bin, strings.Join(args, " "))
	cmd := exec.Command("nsenter", append([]string{"--net=" + tg.netns, bin}, args...)...)
	cmd.Stdout, cmd.Stderr = tg.out, tg.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	tg.startedAt = time.Now()
	if err := cmd.Start(); err != nil {
		tg.t.Fatalf("start tug: %v", err)
	}
	tg.cmd, tg.exited, tg.waitErr = cmd, make(chan struct{}), nil
	go func(exited chan struct{}) {
		err := cmd.Wait()
		tg.waitErr = err
		close(exited)
	}(tg.exited)
}

// TestSelfUpdate publishes tug releases to a registry and follows them
// with --self-update-oci: a release signed by another key, one with no
// binary for this architecture and one older than the committed one are
// refused with their reason; a good one is installed into the A/B
// directory, checked, switched to, and tug exits for its restart; the
// installed binary started again executes the new one, which passes its
// trial and commits it, and the pod keeps its containers and PIDs.
func TestSelfUpdate(t *testing.T) {
	t.Parallel()
	image, _ := testutil.TestImage(t)
	reg := startRegistry(t, registryOpts{})
	dir := t.TempDir()
	_, pub := keyPair(t, dir, "k")
	key := filepath.Join(dir, "k.pem")
	keyPair(t, dir, "other")
	otherKey := filepath.Join(dir, "other.pem")
	v1 := buildTugVersion(t, dir, "1.0-e2e", "")
	v2 := buildTugVersion(t, dir, "2.0-e2e", "")
	v2bytes, err := os.ReadFile(v2)
	must(t, err)
	// The same binary with an arm64 ELF header: a release for another
	// architecture.
	arm := bytes.Clone(v2bytes)
	binary.LittleEndian.PutUint16(arm[18:], uint16(elf.EM_AARCH64))
	armBin := filepath.Join(dir, "tug-arm64")
	must(t, os.WriteFile(armBin, arm, 0o755))
	ref := reg.Ref("tug/release:stable")

	port := freePort(t)
	tg := startTug(t, tugOpts{noStart: true, healthzPort: port, beforeStart: func(tg *tug) { tg.relay(reg.Addr) },
		args: []string{"--self-update-oci", ref, "--manifest-verify-key", pub, "--oci-check-frequency", "1s", "--self-update-trial", "5s"}})
	tg.writeManifest("idle.yaml", shPod("idle", image, idle))
	tg.startBinary(v1)
	uid := tg.uid("idle")
	tg.waitRunningUID(startTimeout, uid, "main", 0)
	before := tg.tasksOf(uid)

	releasePush(t, "--key", otherKey, "--version", "5", v2, ref)
	tg.waitForOutput(30*time.Second, "release not installed", "bad signature")
	releasePush(t, "--key", key, "--version", "6", armBin, ref)
	tg.waitForOutput(30*time.Second, "release not installed", "no binary for this architecture")
	if cur, _ := selfupdate.NewLayout(tg.rootDir).Current(); cur != "" {
		t.Fatalf("a refused release was switched to: %q", cur)
	}

	releasePush(t, "--key", key, "--version", "3", v2, ref)
	select {
	case <-tg.exited:
	case <-time.After(2 * time.Minute):
		t.Fatal("tug did not exit after switching to release 3")
	}
	if tg.waitErr != nil {
		t.Fatalf("tug exited with %v after the switch", tg.waitErr)
	}
	l := selfupdate.NewLayout(tg.rootDir)
	st, err := selfupdate.ReadState(l.StateFile())
	must(t, err)
	cur, _ := l.Current()
	got, _ := os.ReadFile(l.Bin(selfupdate.SlotA))
	if cur != selfupdate.SlotA || st.Trial == nil || st.Trial.Version != 3 || st.Trial.Printed != "2.0-e2e" || !bytes.Equal(got, v2bytes) {
		t.Fatalf("after the switch: current %q, state %+v, slot a holds %d bytes", cur, st, len(got))
	}

	// What systemd does: the installed binary starts again; its launcher
	// executes slot a, which is on trial, passes the gate and commits.
	tg.startBinary(v1)
	tg.waitForOutput(2*time.Minute, "self-update: trial passed; release committed")
	if !strings.Contains(tg.output(), "release 3 on trial, launch 1 of 3") || findLine(tg.output(), "starting tug", "2.0-e2e") == "" {
		t.Fatalf("the launcher did not run release 3's binary")
	}
	if st, err = selfupdate.ReadState(l.StateFile()); err != nil || st.Committed != 3 || st.Good != selfupdate.SlotA || st.Trial != nil {
		t.Fatalf("after the trial: %+v %v", st, err)
	}
	tg.waitFor(30*time.Second, "tug_self_update_state{state=committed} 1", func() (bool, error) {
		mf, _ := tg.scrape(port)
		s := series(mf, "tug_self_update_state", map[string]string{"state": "committed"})
		return len(s) == 1 && s[0].GetGauge().GetValue() == 1, nil
	})
	mf, _ := tg.scrape(port)
	for _, m := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"tug_self_update_state", map[string]string{"state": "committed"}, 1},
		{"tug_self_update_state", map[string]string{"state": "trial"}, 0},
		{"tug_self_update_reverted_total", nil, 0},
		{"tug_build_info", map[string]string{"version": "2.0-e2e"}, 1},
	} {
		s := series(mf, m.name, m.labels)
		if len(s) != 1 || s[0].GetGauge().GetValue()+s[0].GetCounter().GetValue() != m.want {
			t.Errorf("/metrics %s%v: %v, want %v", m.name, m.labels, s, m.want)
		}
	}
	after := tg.tasksOf(uid)
	for id, c := range before {
		if a, ok := after[id]; !ok || a.PID != c.PID {
			t.Errorf("container %s: PID %d before the update, %+v after", id, c.PID, a)
		}
	}

	// A release older than the committed one is refused.
	releasePush(t, "--key", key, "--version", "2", v1, ref)
	tg.waitForOutput(30*time.Second, "release not installed", "older than the one committed")
	if cur, _ := l.Current(); cur != selfupdate.SlotA {
		t.Fatalf("current %q after an older release", cur)
	}
	must(t, tg.Stop())
}

// TestSelfUpdateWave publishes a release whose one wave opens 45 s after
// its push: tug fetches it at once (no download window), installs it into
// the other A/B slot and checks it there, and says that it waits for the
// wave (its log, the status document, /metrics) while it keeps running
// its own binary; it switches to the release (and exits for its restart)
// only once the wave is open, with no second fetch.
func TestSelfUpdateWave(t *testing.T) {
	t.Parallel()
	reg := startRegistry(t, registryOpts{})
	dir := t.TempDir()
	_, pub := keyPair(t, dir, "k")
	key := filepath.Join(dir, "k.pem")
	v2 := buildTugVersion(t, dir, "2.0-wave", "")
	v2bytes, err := os.ReadFile(v2)
	must(t, err)
	ref := reg.Ref("tug/release:waves")

	port := freePort(t)
	tg, rcv, _ := statusTugWith(t, hostname, tugOpts{healthzPort: port, beforeStart: func(tg *tug) { tg.relay(reg.Addr) }},
		"--self-update-oci", ref, "--manifest-verify-key", pub, "--oci-check-frequency", "1s", "--self-update-trial", "5s")
	tg.waitForOutput(time.Minute, "self-update: release not installed", "tug/release:waves")

	pushed := time.Now()
	out := releasePush(t, "--key", key, "--version", "7", "--wave", "name=everyone,after=45s", v2, ref)
	t.Logf("pushed at %s: %s", pushed.Format(time.RFC3339Nano), out)

	tg.waitForOutput(time.Minute, "self-update: release installed ahead, waiting", `wave_name=everyone`)
	// The plan starts at the push, truncated to the second: the wave opens
	// 45 s after that. What follows reads tug while it waits.
	earliest := pushed.Truncate(time.Second).Add(45 * time.Second)
	if time.Now().After(earliest) {
		t.Fatalf("tug installed the release ahead only after its wave opened (%s): the machine is too slow for this test", earliest)
	}
	l := selfupdate.NewLayout(tg.rootDir)
	st, err := selfupdate.ReadState(l.StateFile())
	must(t, err)
	cur, _ := l.Current()
	got, _ := os.ReadFile(l.Bin(selfupdate.SlotA))
	if cur != "" || st.Trial != nil || !bytes.Equal(got, v2bytes) {
		t.Fatalf("installed ahead: current %q (want none), trial %+v, slot a holds %d bytes of the release's %d", cur, st.Trial, len(got), len(v2bytes))
	}
	mf, _ := tg.scrape(port)
	var opens time.Time
	if s := series(mf, "tug_self_update_wave_opens_timestamp_seconds", nil); len(s) == 1 {
		opens = time.Unix(int64(s[0].GetGauge().GetValue()), 0)
	}
	if opens.Before(earliest) || opens.After(earliest.Add(10*time.Second)) {
		t.Fatalf("/metrics: the wave opens at %s, want 45 s after the push at %s", opens, pushed.Format(time.RFC3339Nano))
	}
	for _, m := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"tug_self_update_state", map[string]string{"state": "waiting"}, 1},
		{"tug_self_update_state", map[string]string{"state": "idle"}, 0},
	} {
		if s := series(mf, m.name, m.labels); len(s) != 1 || s[0].GetGauge().GetValue() != m.want {
			t.Errorf("/metrics %s%v: %v, want %v", m.name, m.labels, s, m.want)
		}
	}
	// A document sent while it waits (looked for among all received).
	rcv.waitDoc(tg, time.Minute, 0, "selfUpdate waiting for its wave", func(d statusreport.Document) error {
		su := d.SelfUpdate
		if su == nil || su.Wave == nil {
			return fmt.Errorf("selfUpdate %+v", su)
		}
		if su.State != selfupdate.StateWaiting || su.Version != 7 || su.Slot != selfupdate.SlotA || su.Wave.Index != 1 ||
			su.Wave.Name != "everyone" || !su.Wave.WaveOpens.Equal(opens) || !strings.Contains(su.Wave.Reason, `waiting for wave 1 "everyone"`) {
			return fmt.Errorf("selfUpdate %+v, wave %+v", su, su.Wave)
		}
		return nil
	})

	select {
	case <-tg.exited:
		t.Fatalf("tug exited at %s, before the wave opened at %s", time.Now().Format(time.RFC3339Nano), opens.Format(time.RFC3339))
	case <-time.After(time.Until(opens)):
	}
	select {
	case <-tg.exited:
	case <-time.After(90 * time.Second):
		t.Fatal("tug did not switch to the release within 90 s of its wave's opening")
	}
	if tg.waitErr != nil {
		t.Fatalf("tug exited with %v after the switch", tg.waitErr)
	}
	st, err = selfupdate.ReadState(l.StateFile())
	must(t, err)
	cur, _ = l.Current()
	if cur != selfupdate.SlotA || st.Trial == nil || st.Trial.Version != 7 || st.Trial.Printed != "2.0-wave" {
		t.Fatalf("after the switch: current %q, state %+v", cur, st)
	}
	if n := strings.Count(tg.output(), "self-update: installing a release"); n != 1 {
		t.Errorf("the release was installed %d times, want once (ahead)", n)
	}
	if findLine(tg.output(), "self-update: the release installed ahead may be switched to", "version=7") == "" {
		t.Errorf("no line says the release installed ahead is switched to")
	}
}
