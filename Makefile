# tug's build, lint and test entry points. CI runs `make test` (.ci/run).
#
#   make build        bin/tug for this machine (static, CGO_ENABLED=0)
#   make build-arm64  bin/tug-linux-arm64 (Raspberry Pi OS 64-bit and other arm64 Linux),
#                     stripped
#   make size         build-arm64, failing if the binary is over ARM64_BUDGET (21 MiB)
#   make size-table   what each module adds to the arm64 binary (tools/binsize)
#   make help         this text
#   make lint         gofmt, go vet (with and without the e2e tag), go mod tidy -diff
#                     (go.mod and go.sum as go mod tidy would write them); the
#                     import allow-list (internal/deps_test.go) runs with test-unit
#   make test-unit    unit tests with the race detector: no root, no tags
#   make test-alerts  the Prometheus alerting rules systemd/tug-alerts.yml: promtool check
#                     rules and promtool test rules systemd/tug-alerts.test.yml
#                     (scripts/alerttest.sh; installs Debian's prometheus package for
#                     promtool when it is missing, its server not started)
#   make fuzz         each fuzz target of FUZZ_TARGETS for FUZZ_TIME (20s) from its
#                     committed corpus (testdata/fuzz/<Name>/); a crasher is
#                     written there and fails the run
#   make test         everything CI runs: lint, test-unit, test-alerts, fuzz, build, size, then the
#                     e2e suite (-tags e2e, as root) against the test environment
#                     of scripts/testenv.sh, which is brought down afterwards,
#                     then e2e-containerd2, test-v2, test-arm64, and test-guests: the
#                     systemd guests' stages two at a time (scripts/lanes.sh)
#   make e2e          the e2e suite alone (-tags e2e, -race, as root; packages one at a
#                     time, a package's tests E2E_PARALLEL (8) at once but those of
#                     e2e/parallel_test.go's runsAlone; the ten slowest listed at the
#                     end, the verbose output kept in E2E_LOG): brings the test
#                     environment up, prints the daemons' logs on failure, brings it
#                     down (E2E_TIMEOUT, default 40m)
#   make e2e-containerd2
#                     a named subset of the e2e suite (E2E_CONTAINERD2_TESTS:
#                     containers, init containers, tasks, exec, shims, pulls,
#                     imports, events, logs, snapshot usage, OOM, resize, user
#                     namespaces, adoption, a containerd restart)
#                     against containerd 2.x built from the module source at the
#                     version go.mod requires (scripts/containerd2.sh: built once
#                     into /var/tmp/tug-containerd2/<version>/bin: 1-2.5 min, by
#                     how warm the Go cache is), run by scripts/testenv.sh as a second
#                     environment in /var/tmp/tug-testenv-containerd2 with its own
#                     registry on :5100; brought down afterwards; a name that
#                     matches no test fails the run (E2E_CONTAINERD2_TIMEOUT, 15m)
#   make test-v2      the cgroup tests again on a pure cgroup v2 kernel (this host
#                     is hybrid v1): tug and the test binaries built here, run in a
#                     QEMU guest (scripts/v2guest.sh; software emulation, a few
#                     minutes) by scripts/v2tests.sh. Knobs: E2E_V2_RUN (which e2e
#                     tests, default ^TestQoS), V2_TEST_TIMEOUT (per test binary),
#                     V2G_TIMEOUT (the whole guest run, s), V2G_DIR (kernel,
#                     binaries, runs' logs: /var/tmp/tug-v2guest). Alone:
#                     CI=true make test-v2; check the guest: scripts/v2guest.sh selftest
#   make test-systemd tug under a real systemd in the QEMU guest (Type=notify, READY,
#                     STATUS, the watchdog's kill of a wedged tug, the restart adopting
#                     the pod; journald: tug's priorities, the journald log driver's
#                     entries, tug logs, systemd-journal-upload to -remote;
#                     scripts/systemdtest.sh); part of make test
#   make test-self-update  tug updating itself under the guest's systemd: a
#                     release that exits at start, one that hangs (watchdog),
#                     one that fails its gate, each reverted and never retried,
#                     then a good one committed; the pod keeps its pid
#                     (scripts/selfupdatetest.sh); part of make test
#   make test-self-update-cut  a power cut while tug switches to a release and
#                     the boot after it (scripts/selfupdatecut.sh; two boots,
#                     ~5 min; outside make test: its 45 minutes have no room for it)
#   make test-clock   tug in the QEMU guest booted with its RTC at 1970: the clock
#                     behind said and the reports held until date -s, then sent
#                     with true times; a year's step forward and back while pods
#                     run; then booted with its RTC a year ahead: a certificate
#                     expired by the clock said in words, the URL's pods from
#                     their checkpoint after a SIGKILL, NTP's step back followed
#                     (scripts/clocktest.sh); part of make test
#   make test-powercut  power cuts of a device running tug: the QEMU guest of
#                     test-systemd with a persistent ext4 disk (containerd, tug's
#                     root dir, pod logs, claims), killed hard (SIGKILL of QEMU) at
#                     a seeded random moment CUTS times (default 1, ~2.5 min) while
#                     10 pods write fsync'd records and logs and a URL bundle is
#                     updated or rolled back; after each boot: tug starts, every
#                     pod Running within PC_BOUND, no half-applied bundle, no
#                     acknowledged record lost, CRI logs parse and go on, the status
#                     sequence never goes back (scripts/powercut.sh; SEED replays;
#                     the soak: CUTS=100, results in docs/benchmarks.md)
#   make bench        benchmarks against the real containerd (test environment up):
#                     Go benchmarks incl. PLEG death detection and relist cost (-tags e2e),
#                     pod start-up, pod network and hostNetwork, vs ctr run, ctr with a pod's spec
#                     and podman kube play if installed (bench/benchstart), tug at rest (bench/benchidle),
#                     remote write and status reports vs a plain tug (bench/benchupstream),
#                     network setup per pod vs the same with ip commands (bench/benchnet),
#                     the log drivers' throughput and footprint, file vs binary (bench/benchlogs);
#                     the metrics collector's CPU at 30 pods scraped every 15 s vs tug idle, and
#                     the /metrics scrape time (bench/benchday2; BENCHDAY2_ARGS, by default
#                     -eviction-args with the kubelet's --eviction-hard: the eviction manager and
#                     image GC measured too, against a baseline without them);
#                     PSS of tug and what it runs per pod vs podman kube play, with the floor of
#                     any Go agent on containerd's client beside it (bench/benchfootprint);
#                     probe cost and latency (bench/benchprobe); a rollback vs a plain update of
#                     the same pod (bench/benchrollout); the wire cost of 100 devices polling
#                     a bundle in a registry vs the same bundle at a URL (bench/benchoci);
#                     the bytes, files and fsyncs tug writes to storage a day at rest, with
#                     and without status and remote write, vs a baseline built from
#                     an earlier commit in the same run (bench/benchwear; strace);
#                     the bytes on the wire of a device-day (URL and OCI polls,
#                     status, remote write, all over TLS through counting proxies)
#                     and of one bundle update, at defaults and with the metered
#                     profile, vs a baseline built from an earlier commit in the
#                     same run (bench/benchbytes; iptables);
#                     the programs measure with one kit, bench/internal/kit (PSS and CPU
#                     of process sets, ratios, percentiles, tables, tug in its own netns)
#   make pkgmap       the package map: lines, exported names and job of each package
#   make demo         run the example pods (scripts/demo.sh), make demo-stop
#   make testenv-up / testenv-down   start / stop the test environment by hand
#                     (then: eval "$$(scripts/testenv.sh env)"; go test -tags e2e ./...)
#   make clean        remove bin/

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build
.DELETE_ON_ERROR:

export PATH := $(PATH):/usr/local/go/bin
GO ?= go
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
# BUILD_TIME is the commit's time (Unix seconds), not the build's: the
# builds stay reproducible, and tug's time floor (internal/timefloor) starts
# there.
BUILD_TIME ?= $(shell git log -1 --format=%ct 2>/dev/null)
LDFLAGS := -X main.version=$(VERSION) -X main.buildTime=$(BUILD_TIME)
# Every build of tug: grpcnotrace leaves out gRPC's request tracing
# (golang.org/x/net/trace and html/template, which tug never enables);
# -trimpath keeps the build machine's paths out of the binary.
BUILDFLAGS := -trimpath -tags grpcnotrace
# The stripped arm64 binary's budget in bytes (make size): 21 MiB.
ARM64_BUDGET ?= 22020096
TESTENV := scripts/testenv.sh
# The e2e suite and the packages with e2e tests of their own (a file with
# the e2e build tag): the other packages' tests are test-unit's, run once.
E2E_PKGS := ./e2e/... $(sort $(patsubst %/,./%,$(dir $(shell grep -rl --include='*_test.go' '^//go:build.*e2e' internal))))
E2E_TIMEOUT ?= 40m

# e2e-containerd2: the e2e tests run against containerd 2.x too (the 1.6
# daemon of the main environment runs them all). Each name is checked with
# go test -list first, so a renamed test cannot silently drop out.
CONTAINERD2 := scripts/containerd2.sh
E2E_CONTAINERD2_TIMEOUT ?= 15m
E2E_CONTAINERD2_TESTS ?= TestStartFromManifest TestEditRecreatesOnlyChangedContainer \
	TestRemoveCleansEverything TestStopSignal TestStopOverExitedContainer \
	TestInitContainersBeforeApps TestSidecarInitContainer TestPodNetwork \
	TestExecCommand TestProbeExecTimeoutNoLeak TestTop TestEphemeralStorageLimitEviction \
	TestKill9Twenty TestContainerdRestart TestAdoptionRemovesOrphans TestShimGrouping \
	TestPullFromRegistry TestPullEvents TestImportFromImageDir TestImageVolume \
	TestImageRepairAfterDamagedSnapshot \
	TestPullResume TestPullResumeAfterRestart TestPullOffline TestRegistryMirror \
	TestLogsCommand TestMetricsAndEvents TestQoSOOMKilled TestResizeInPlace \
	TestUserNamespacePods
E2E_CONTAINERD2_RUN := ^($(subst $(eval) ,|,$(strip $(E2E_CONTAINERD2_TESTS))))$$

# test-v2: where the guest finds what the host built (not under /run: the
# guest has its own tmpfs there), and its bounds: under TCG the boot takes
# ~10 s and a container start 1-2 s; V2_TEST_TIMEOUT is per test binary (two
# of them), V2G_TIMEOUT (seconds) for the whole guest run.
V2G_DIR ?= /var/tmp/tug-v2guest
V2G_TIMEOUT ?= 900
# V2G_STALL: a guest whose heartbeat stops for this long is frozen (under
# TCG this happens, rarely: no output at all, not even the kernel's
# hung-task warnings, until V2G_TIMEOUT), and is booted again once.
V2G_STALL ?= 120
export V2G_DIR V2G_TIMEOUT V2G_STALL
V2_BIN := $(V2G_DIR)/bin
# The test binaries of test-v2, a directory of their own: v2tests.sh runs
# every one it finds, and the other guest stages build beside them.
V2_TEST_BIN := $(V2_BIN)/v2
V2_IMAGE := docker.io/library/busybox:1.35
V2_ARCHIVE := $(V2G_DIR)/busybox.tar
V2_TEST_TIMEOUT ?= 6m
# The e2e tests that are about cgroups (QoS, pod-level resources, in-place resize, /metrics reading them, memory-pressure eviction reading pod and container usage, the device rules of a container given devices), run in the guest (-test.run); the run
# fails if it matches none.
# benchday2: the eviction manager (the kubelet's default hard thresholds) and
# image GC measured in the same run as the baseline without them.
BENCHDAY2_ARGS ?= -eviction-args '--eviction-hard=memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%,imagefs.available<15%'
E2E_V2_RUN ?= ^TestQoS|^TestPodLevelResources|^TestResize|^TestMetricsAndEvents|^TestMemoryPressureEvictsBestEffortFirst|^TestDeviceCgroupRules

.PHONY: help pkgmap walk build build-arm64 size size-table lint test-unit test-alerts fuzz test e2e e2e-containerd2 test-v2 test-arm64 test-systemd test-self-update test-self-update-cut self-update-releases test-clock test-small-device test-powercut test-guests guest-setup bench demo demo-stop testenv-up testenv-down clean

build:
	CGO_ENABLED=0 $(GO) build $(BUILDFLAGS) -ldflags '$(LDFLAGS)' -o bin/tug ./agent

# The README's install steps name this file, and agent's TestReadmeInstall
# builds with this recipe (make -n build-arm64) and checks the ELF header.
# It is the device's build: stripped of its symbol table and DWARF (-s -w;
# a panic's stack trace keeps its function names and lines).
build-arm64:
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(BUILDFLAGS) -ldflags '-s -w $(LDFLAGS)' -o bin/tug-linux-arm64 ./agent

# size: the device's build against ARM64_BUDGET. size-table: what each
# module adds to it (tools/binsize, from an unstripped build's symbols).
size: build-arm64
	@s=$$(stat -c %s bin/tug-linux-arm64); \
	echo "size: bin/tug-linux-arm64 is $$s bytes, budget $(ARM64_BUDGET)"; \
	[ $$s -le $(ARM64_BUDGET) ] || { echo "size: over budget by $$((s - $(ARM64_BUDGET))) bytes: see make size-table and docs/benchmarks.md"; exit 1; }
size-table:
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(BUILDFLAGS) -o bin/tug-linux-arm64.symbols ./agent
	$(GO) run ./tools/binsize -bin bin/tug-linux-arm64.symbols -goarch arm64 -flags '$(BUILDFLAGS)'

help:
	@sed -n '1,/^$$/s/^# \{0,1\}//p' $(firstword $(MAKEFILE_LIST))

# lint: gofmt, then go vet with the e2e tag, which covers every file (no
# file is built only without it; only the profiling build's are left out).
lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt -l: not formatted:"; echo "$$out"; exit 1; fi
	$(GO) vet -tags e2e ./...
	$(GO) mod tidy -diff

test-unit:
	$(GO) test -race ./...

test-alerts:
	scripts/alerttest.sh

test: lint test-unit test-alerts fuzz build size e2e e2e-containerd2 test-v2 test-arm64 test-guests

# test-guests: the QEMU guest stages of the systemd guest in two lanes at
# once (scripts/lanes.sh); what the guests need from the host is made first
# (packages, kernel, initramfs, image archive). test-v2 and test-arm64 run
# test binaries whose timings do not stand a second guest beside them, and
# run alone, before them. test-small-device and test-powercut, ten pods
# each, share a lane: side by side the power cut's boot missed its bound.
# Side by side in a fresh clone's CI (2026-11-29): small-device 520 s,
# power cut 511 s; self-update 428 s, systemd 211 s, clock ~211 s.
GUEST_LANE_A ?= test-systemd test-self-update test-clock
GUEST_LANE_B ?= test-small-device test-powercut
test-guests: guest-setup
	MAKE='$(MAKE)' scripts/lanes.sh '$(GUEST_LANE_A)' '$(GUEST_LANE_B)'

guest-setup:
	V2G_SYSTEMD=1 scripts/v2guest.sh setup
	scripts/mkimage.sh $(V2_ARCHIVE) $(V2_IMAGE)

# fuzz: the manifest decoder and the parsers of what a URL server sends, each
# fuzzed for a bounded number of inputs (package:Target; go test -fuzz takes
# one at a time). A count, not a duration: Go 1.26's fuzz coordinator can fail
# a duration run with a bare "context deadline exceeded" and no crasher (it
# checks the deadline against its workers' context, which may not be cancelled
# yet; CI failed so twice); a count has no deadline to race. 100000 inputs
# take 8-28 s per target here.
FUZZ_TIME ?= 100000x
FUZZ_TARGETS ?= ./internal/manifest:FuzzParse ./internal/bundle:FuzzEnvelope ./internal/source:FuzzHTTPBody ./internal/source:FuzzReadCheckpoint
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz: $$name ($$pkg) for $(FUZZ_TIME)"; \
		$(GO) test -list "^$$name\$$" $$pkg | grep -x "$$name" >/dev/null || { echo "fuzz: no fuzz target $$name in $$pkg"; exit 1; }; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZ_TIME) -parallel 2 $$pkg || exit 1; \
	done

# e2e: start the test environment, run the e2e suite with its env file and CI
# passed through, print the daemons' logs on failure, and always bring the
# environment down, keeping the suite's exit code. Packages run one at a time
# (-p 1): e2e's TestContainerdRestart kills and restarts the shared containerd.
# Within a package, E2E_PARALLEL tests run at once (e2e/parallel_test.go says
# which run alone). The verbose output is kept in E2E_LOG, and the slowest
# tests are listed at the end (scripts/slowest.sh); on failure, the failed
# tests and their last lines come last of all (scripts/failures.sh), after the
# daemons' logs, where a CI page that keeps only the tail still shows them.
E2E_PARALLEL ?= 8
E2E_LOG ?= /var/tmp/tug-e2e.log
e2e:
	@rc=0; \
	$(TESTENV) up || rc=$$?; \
	if [ $$rc -eq 0 ]; then \
		( eval "$$($(TESTENV) env)"; \
		  set -x; \
		  set -o pipefail; \
		  CI="$${CI:-}" $(GO) test -v -tags e2e -race -p 1 -parallel $(E2E_PARALLEL) -count=1 -timeout $(E2E_TIMEOUT) $(E2E_PKGS) \
		    | tee $(E2E_LOG) ) || rc=$$?; \
		scripts/slowest.sh 10 $(E2E_LOG) || true; \
		if [ $$rc -ne 0 ]; then echo "e2e: FAILED (exit $$rc)"; $(TESTENV) logs || true; fi; \
	fi; \
	$(TESTENV) down || true; \
	if [ $$rc -ne 0 ]; then scripts/failures.sh $(E2E_LOG) || true; echo "e2e: FAILED (exit $$rc)"; fi; \
	exit $$rc

# e2e-containerd2: as e2e, with the environment of scripts/containerd2.sh
# (which builds the daemon first) and only E2E_CONTAINERD2_TESTS, each of
# which must exist (go test -list).
e2e-containerd2:
	@rc=0; \
	listed=$$($(GO) test -tags e2e -race -list '$(E2E_CONTAINERD2_RUN)' ./e2e/ | grep '^Test') || rc=$$?; \
	for t in $(E2E_CONTAINERD2_TESTS); do \
		grep -qx "$$t" <<<"$$listed" || { echo "e2e-containerd2: no test $$t in ./e2e/"; rc=1; }; \
	done; \
	[ $$rc -eq 0 ] && { $(CONTAINERD2) up || rc=$$?; }; \
	if [ $$rc -eq 0 ]; then \
		( eval "$$($(CONTAINERD2) env)"; \
		  set -x; \
		  CI="$${CI:-}" $(GO) test -tags e2e -race -parallel $(E2E_PARALLEL) -count=1 -timeout $(E2E_CONTAINERD2_TIMEOUT) \
		    -run '$(E2E_CONTAINERD2_RUN)' ./e2e/ ) || rc=$$?; \
		if [ $$rc -ne 0 ]; then echo "e2e-containerd2: FAILED (exit $$rc)"; $(CONTAINERD2) logs || true; fi; \
	fi; \
	$(CONTAINERD2) down || true; \
	exit $$rc

# test-v2: build on the host (no -race: TCG is slow enough), boot the guest
# once and run scripts/v2tests.sh in it with CI and the tests' environment
# passed through (the guest's containerd, the image archive, the prebuilt tug).
# The guest's console, with the tests' output, streams here; on failure
# v2guest.sh prints the guest's containerd log and where the run's files are.
test-v2:
	@scripts/v2guest.sh setup
	@scripts/mkimage.sh $(V2_ARCHIVE) $(V2_IMAGE)
	rm -rf $(V2_TEST_BIN) && mkdir -p $(V2_TEST_BIN)
	CGO_ENABLED=0 $(GO) build $(BUILDFLAGS) -ldflags '$(LDFLAGS)' -o $(V2_TEST_BIN)/tug ./agent
	CGO_ENABLED=0 $(GO) test -c -tags e2e -o $(V2_TEST_BIN)/qos.test ./internal/qos
	CGO_ENABLED=0 $(GO) test -c -tags e2e -o $(V2_TEST_BIN)/e2e.test ./e2e
	scripts/v2guest.sh run -- env \
		CI="$${CI:-}" \
		TUG_TEST_CONTAINERD=/run/containerd/containerd.sock \
		TUG_TEST_IMAGE=$(V2_IMAGE) \
		TUG_TEST_IMAGE_ARCHIVE=$(V2_ARCHIVE) \
		TUG_TEST_BINARY=$(V2_TEST_BIN)/tug \
		E2E_V2_RUN='$(value E2E_V2_RUN)' \
		V2_TEST_TIMEOUT=$(V2_TEST_TIMEOUT) \
		scripts/v2tests.sh $(V2_TEST_BIN)

# test-systemd: tug under a real systemd (PID 1 of the QEMU guest, booted
# with V2G_SYSTEMD=1): the repository's unit (systemd-analyze verify), READY=1 and STATUS=, a kill
# by the watchdog when the sync loop is wedged (the hidden test fault), the
# restart adopting the pod, then journald: tug's error lines at priority err,
# the journald log driver's entries and fields, tug logs reading them, and
# systemd-journal-upload shipping them to systemd-journal-remote
# (scripts/systemdtest.sh). A few minutes under TCG.
test-systemd:
	@scripts/v2guest.sh setup
	@scripts/mkimage.sh $(V2_ARCHIVE) $(V2_IMAGE)
	mkdir -p $(V2_BIN)
	CGO_ENABLED=0 $(GO) build $(BUILDFLAGS) -ldflags '$(LDFLAGS)' -o $(V2_BIN)/tug-systemd ./agent
	V2G_SYSTEMD=1 scripts/v2guest.sh run -- env CI="$${CI:-}" sh scripts/systemdtest.sh \
		$(V2_BIN)/tug-systemd $(CURDIR)/systemd/tug.service $(V2_ARCHIVE) $(V2_IMAGE)

# test-self-update: tug updating itself under a real systemd (the guest of
# test-systemd): release 1 installed with the repository's unit, releases
# 3 (exits at start), 4 (never feeds the watchdog) and 5 (fails its health
# gate) served in turn at --self-update-url, each reverted with no person
# and never tried again, then release 2 committed after its 30 s trial; the
# pod's task keeps its pid throughout (scripts/selfupdatetest.sh; the bad
# releases are builds with main.selfUpdateTestFault).
# test-self-update-cut: a power cut (SIGKILL of QEMU) at a seeded moment
# while tug switches to release 2, and a boot from the persistent disk that
# must start tug, run the pod and commit release 2 (scripts/selfupdatecut.sh;
# SEED replays). Two boots, about 2 to 5 minutes; outside make test, whose
# 45 minutes have no room for it.
SU_BIN := $(V2_BIN)/selfupdate
self-update-releases:
	@scripts/v2guest.sh setup
	@scripts/mkimage.sh $(V2_ARCHIVE) $(V2_IMAGE)
	rm -rf $(SU_BIN) && mkdir -p $(SU_BIN)
	CGO_ENABLED=0 $(GO) build $(BUILDFLAGS) -ldflags '$(LDFLAGS) -X main.version=selfupdate-1' -o $(SU_BIN)/tug-1 ./agent
	CGO_ENABLED=0 $(GO) build $(BUILDFLAGS) -ldflags '$(LDFLAGS) -X main.version=selfupdate-2' -o $(SU_BIN)/tug-2 ./agent
	CGO_ENABLED=0 $(GO) build $(BUILDFLAGS) -ldflags '$(LDFLAGS) -X main.version=selfupdate-3 -X main.selfUpdateTestFault=exit' -o $(SU_BIN)/tug-3 ./agent
	CGO_ENABLED=0 $(GO) build $(BUILDFLAGS) -ldflags '$(LDFLAGS) -X main.version=selfupdate-4 -X main.selfUpdateTestFault=hang' -o $(SU_BIN)/tug-4 ./agent
	CGO_ENABLED=0 $(GO) build $(BUILDFLAGS) -ldflags '$(LDFLAGS) -X main.version=selfupdate-5 -X main.selfUpdateTestFault=gate' -o $(SU_BIN)/tug-5 ./agent
	openssl genpkey -algorithm ed25519 -out $(SU_BIN)/key.pem
	openssl pkey -in $(SU_BIN)/key.pem -pubout -out $(SU_BIN)/key.pub.pem
	for v in 2 3 4 5; do $(SU_BIN)/tug-1 release sign --key $(SU_BIN)/key.pem --version $$v $(SU_BIN)/tug-$$v || exit 1; done

test-self-update: self-update-releases
	V2G_SYSTEMD=1 scripts/v2guest.sh run -- env CI="$${CI:-}" sh scripts/selfupdatetest.sh \
		$(SU_BIN)/tug-1 $(SU_BIN) $(SU_BIN)/key.pub.pem $(CURDIR)/systemd/tug.service $(V2_ARCHIVE) $(V2_IMAGE)

test-self-update-cut: self-update-releases
	scripts/selfupdatecut.sh $(SU_BIN) $(CURDIR)/systemd/tug.service $(V2_ARCHIVE) $(V2_IMAGE)

# test-clock: tug with a wrong clock, in the guest booted with its
# real-time clock at 1970 (V2G_RTC): the pods run, tug says the clock is
# behind (Warn, node event, ClockBehind) and holds its status documents and
# remote-write samples; date -s sets the true time and they arrive with true
# times; then a step of a year forward and back while the pods run fires no
# back-off early or late and fails no probe (scripts/clocktest.sh, a
# receiver in the guest: scripts/clockrecv.py). Then the guest booted with
# its real-time clock a year ahead: a certificate expired by the clock said
# in words, the URL's pods from their checkpoint, NTP's step back followed.
# About 5 minutes under TCG, both boots.
test-clock:
	@scripts/v2guest.sh setup
	@scripts/mkimage.sh $(V2_ARCHIVE) $(V2_IMAGE)
	mkdir -p $(V2_BIN)
	CGO_ENABLED=0 $(GO) build $(BUILDFLAGS) -ldflags '$(LDFLAGS)' -o $(V2_BIN)/tug-clock ./agent
	V2G_RTC=1970-01-01T00:00:00 scripts/v2guest.sh run -- env CI="$${CI:-}" sh scripts/clocktest.sh behind \
		$(V2_BIN)/tug-clock $(V2_ARCHIVE) $(V2_IMAGE) "$$(date +%s)"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 180 -subj /CN=clocktest \
		-addext subjectAltName=IP:127.0.0.1 -keyout $(V2_BIN)/clock-tls.key -out $(V2_BIN)/clock-tls.crt 2>/dev/null
	V2G_RTC=$$(date -u -d '+1 year' +%FT%T) scripts/v2guest.sh run -- env CI="$${CI:-}" sh scripts/clocktest.sh ahead \
		$(V2_BIN)/tug-clock $(V2_ARCHIVE) $(V2_IMAGE) "$$(date +%s)" $(V2_BIN)/clock-tls.crt $(V2_BIN)/clock-tls.key

# test-arm64: a subset of the e2e suite on arm64, in a QEMU aarch64 guest
# (software emulation) with Debian's arm64 kernel, containerd, runc and
# busybox (scripts/arm64guest.sh, scripts/arm64tests.sh): tug and the e2e
# test binary cross-compiled, the arm64 test image, a registry in the guest.
# E2E_ARM64_RUN: a pod's start, the pod network and a hostPort with the
# adoption of the pods after a SIGKILL of tug, restart policies and the
# crash loop's restarts, probes, logs, cgroup limits and an OOM kill, a pull
# from the registry, adoption of orphans, signed URL bundles and the OCI
# source. The tests that time restarts or answers to the second are left
# out: emulation stretches them past their bounds. About 6 minutes.
E2E_ARM64_RUN ?= ^(TestStartFromManifest|TestPodNetwork|TestHostPortLoopback|TestRestartPolicies|TestProbeLivenessRestartsHungServer|TestLogsCommand|TestQoSCgroupTree|TestQoSOOMKilled|TestPullFromRegistry|TestAdoptionRemovesOrphans|TestURLSignedBundles|TestOCISource)$$
test-arm64:
	E2E_ARM64_RUN='$(E2E_ARM64_RUN)' CI="$${CI:-}" scripts/arm64tests.sh

# test-small-device: the systemd guest with 256 MiB of memory
# (V2G_MEM=256) and a fresh disk for containerd's and tug's files: the
# repository's unit and tug's default thresholds, 10
# pods on the pod network that start and stay, tug's memory protected, a
# growing pod evicted before the kernel's OOM killer acts, and the memory of
# tug, containerd and the shims (scripts/smalldevice.sh).
test-small-device:
	@V2G_SYSTEMD=1 scripts/v2guest.sh setup
	@scripts/mkimage.sh $(V2_ARCHIVE) $(V2_IMAGE)
	mkdir -p $(V2_BIN)
	CGO_ENABLED=0 $(GO) build $(BUILDFLAGS) -ldflags '-s -w $(LDFLAGS)' -o $(V2_BIN)/tug-small ./agent
	rm -f $(V2G_DIR)/small-device.img
	V2G_SYSTEMD=1 V2G_MEM=256 V2G_DISK=$(V2G_DIR)/small-device.img V2G_DISK_SIZE=2048 \
		scripts/v2guest.sh run -- env CI="$${CI:-}" sh scripts/smalldevice.sh \
		$(V2_BIN)/tug-small $(CURDIR)/systemd/tug.service $(V2_ARCHIVE) $(V2_IMAGE)

# test-powercut: CUTS power cuts (SIGKILL of QEMU at a seeded random moment)
# of the systemd guest with a persistent disk, each boot checked
# (scripts/powercut.sh, scripts/powercut-guest.sh). SEED replays a run.
CUTS ?= 1
export CUTS
test-powercut:
	@V2G_SYSTEMD=1 scripts/v2guest.sh setup
	@scripts/mkimage.sh $(V2_ARCHIVE) $(V2_IMAGE)
	mkdir -p $(V2_BIN)
	CGO_ENABLED=0 $(GO) build $(BUILDFLAGS) -ldflags '$(LDFLAGS)' -o $(V2_BIN)/tug-powercut ./agent
	scripts/powercut.sh $(V2_BIN)/tug-powercut $(CURDIR)/systemd/tug.service $(V2_ARCHIVE) $(V2_IMAGE)

# pkgmap: every package with its lines, exported names and job (the size
# rule: no package over 3,000 lines of non-test code).
pkgmap:
	@scripts/pkgmap.sh

# walk: the functions, packages and files a reader crosses from the sync
# loop to a container's start (tools/walk, a module of its own: x/tools
# stays out of tug's build). WALK_REPO measures another checkout.
WALK_REPO ?= $(CURDIR)
walk:
	cd tools/walk && $(GO) run . -C $(WALK_REPO)

bench:
	@rc=0; \
	$(TESTENV) up || rc=$$?; \
	if [ $$rc -eq 0 ]; then \
		( eval "$$($(TESTENV) env)"; \
		  set -x; \
		  $(GO) test -tags e2e -p 1 -run='^$$' -bench=. -benchmem ./internal/... && \
		  $(GO) run ./bench/benchstart && \
		  $(GO) run ./bench/benchidle && \
		  $(GO) run ./bench/benchupstream && \
		  $(GO) run ./bench/benchlogs && \
		  $(GO) run ./bench/benchnet && \
		  $(GO) run ./bench/benchday2 $(BENCHDAY2_ARGS) && \
		  $(GO) run ./bench/benchfootprint && \
		  $(GO) run ./bench/benchprobe && \
		  $(GO) run ./bench/benchrollout && \
		  $(GO) run ./bench/benchoci && \
		  $(GO) run ./bench/benchwear && \
		  $(GO) run ./bench/benchbytes ) || rc=$$?; \
	fi; \
	$(TESTENV) down || true; \
	exit $$rc

demo:
	scripts/demo.sh

demo-stop:
	scripts/demo.sh stop

testenv-up:
	$(TESTENV) up

testenv-down:
	$(TESTENV) down

clean:
	rm -rf bin
