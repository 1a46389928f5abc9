package internal_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// allowedImports is the package map of STYLE.md §3 as an allow-list, in
// the spirit of Tailscale's depaware: for every package of the module
// (internal/, agent/, the benchmark programs of bench/ and the test image's
// programs under e2e/), the tug packages and the third-party modules its production code
// may import directly. Anything not listed fails TestImportRules, and so
// does a package with no entry (a new package gets its line here first)
// or an entry naming a package that does not exist. The standard library
// is always allowed, except package testing (only testutil). Test files
// are not checked: they may import testutil and what they test.
//
// tug/internal/redact, a stdlib-only leaf that masks secrets in logs and
// errors, may be imported by every package (everyPackage), and so may
// tug/internal/steptime, a stdlib-only leaf that times the steps of one
// piece of work for a debug line.
var allowedImports = map[string]allowed{
	// The manifest types, defaults, identity, hashes and observed-state
	// types: plain data every package shares, so the standard library only.
	"tug/internal/pod": {},
	// Reading manifests: the strict decoder works on yaml.v3's node tree
	// (positions for file:line:col errors), fills pod's types and
	// validates them with podvalidate.
	"tug/internal/manifest": {internal: []string{"tug/internal/pod", "tug/internal/suggest", "tug/internal/fieldpath", "tug/internal/podvalidate", "tug/internal/cronspec"}, modules: []string{"gopkg.in/yaml.v3"}},
	// The cron schedule syntax and its next times: a leaf of the standard
	// library that manifest (validation) and cronjob (scheduling) share.
	"tug/internal/cronspec": {},
	// Update windows: their syntax and arithmetic over the cron syntax;
	// config (validation), bundle (a bundle's own windows) and windowgate
	// read it.
	"tug/internal/window": {internal: []string{"tug/internal/cronspec"}},
	// Rollout plans and halts of signed bundles: their JSON, validation,
	// the stable hash and the choice of a device's wave; the standard
	// library only, so that bundle, windowgate and the CLI share it.
	"tug/internal/wave": {},
	// Holds a source's updates until the update window opens, between the
	// sources and the pod store: pod's types, the windows, the clock.
	"tug/internal/windowgate": {internal: []string{"tug/internal/pod", "tug/internal/window", "tug/internal/wave", "tug/internal/clock"}},
	// Runs CronJobs between the sources and the pod store: pod's types,
	// the schedule syntax, the injected clock and atomic state writes.
	"tug/internal/cronjob": {internal: []string{"tug/internal/pod", "tug/internal/cronspec", "tug/internal/clock", "tug/internal/atomicfile"}},
	// A pod's rules, over pod's types alone; field paths as Kubernetes
	// writes them; distribution/reference reads image references as the
	// kubelet and containerd do (already in the binary through images).
	"tug/internal/podvalidate": {internal: []string{"tug/internal/pod", "tug/internal/fieldpath"}, modules: []string{"github.com/distribution/reference"}},
	"tug/internal/fieldpath":   {},
	// The status API's shapes (a pod with its status, the pod list, the
	// node, each manifest file's state): plain data made of pod's types.
	"tug/internal/podview": {internal: []string{"tug/internal/pod"}},
	// Resolving a pod's references into values: pure functions of the pod
	// and the objects bound to it.
	"tug/internal/objects": {internal: []string{"tug/internal/pod"}},
	// Leaves: the standard library only.
	"tug/internal/redact":   {},
	"tug/internal/steptime": {},
	"tug/internal/clock":    {},
	// Writing state files atomically (temporary file, fsync, rename):
	// source's checkpoints, rollout's state, remotewrite's buffer.
	"tug/internal/atomicfile": {},
	// Judging the wall clock against tug's build time and the latest time
	// it trusted (persisted atomically); the node condition is pod's type.
	"tug/internal/timefloor": {internal: []string{"tug/internal/clock", "tug/internal/atomicfile", "tug/internal/pod"}, modules: []string{"golang.org/x/sys"}},
	// Gives back the executable's start-up pages (agent and the footprint
	// benchmark's floor).
	"tug/internal/exepages": {},
	// The edit distance of the "did you mean"s: a leaf of the standard
	// library, for manifest and config.
	"tug/internal/suggest": {},
	// The agent's configuration; only agent/ imports it. STYLE.md gives it
	// the standard library and yaml.v3 only; it also imports pod, a leaf
	// of the standard library, so that --reserved is parsed and validated with the
	// manifests' quantity syntax before anything touches the host; pflag
	// for the GNU-style flags of tug run.
	"tug/internal/config": {internal: []string{"tug/internal/pod", "tug/internal/suggest", "tug/internal/window"}, modules: []string{"gopkg.in/yaml.v3", "github.com/spf13/pflag"}},
	// The signed-bundle format: the envelope and its ed25519 keys, and the
	// OCI artifact that carries a bundle (containerd's remotes, already
	// linked for image pulls, with the image-spec types, go-digest and
	// errdefs): what the sources check, "tug sign", "tug bundle" and the
	// signed status documents share.
	"tug/internal/bundle": {internal: []string{"tug/internal/window", "tug/internal/wave"}, modules: []string{
		"github.com/containerd/containerd/v2", "github.com/containerd/errdefs",
		"github.com/opencontainers/go-digest", "github.com/opencontainers/image-spec",
	}},
	// golang.org/x/sys: inotify on the manifest directory (STYLE.md names it);
	// manifest reads what each source fetched. The OCI source speaks to
	// registries through containerd's remotes (already linked for image
	// pulls), with the OCI image-spec types, go-digest and errdefs.
	"tug/internal/source": {internal: []string{"tug/internal/podview", "tug/internal/pod", "tug/internal/manifest", "tug/internal/clock", "tug/internal/atomicfile", "tug/internal/bundle", "tug/internal/timefloor"}, modules: []string{
		"golang.org/x/sys", "github.com/containerd/containerd/v2", "github.com/containerd/errdefs",
		"github.com/opencontainers/go-digest", "github.com/opencontainers/image-spec",
	}},
	"tug/internal/podconfig": {internal: []string{"tug/internal/pod", "tug/internal/clock"}},
	// client_golang: each package owns and registers its metrics.
	"tug/internal/pleg": {internal: []string{"tug/internal/pod", "tug/internal/clock"}, modules: []string{"github.com/prometheus/client_golang"}},
	// The sync loop defines the interfaces of the adapters and never
	// imports them (nor qos: reconcile→qos passed the old deny-list).
	// What a pod's sync does, decided from what it read: pure, over pod.
	"tug/internal/podplan": {internal: []string{"tug/internal/pod", "tug/internal/clock"}},
	// A pod's status and what the API serves: pure, over the pod types,
	// the store's file states and the API's wire types.
	"tug/internal/podstatus": {internal: []string{"tug/internal/pod", "tug/internal/podplan", "tug/internal/podconfig", "tug/internal/podview"}},
	"tug/internal/reconcile": {internal: []string{"tug/internal/podview", "tug/internal/pod", "tug/internal/podplan", "tug/internal/podstatus", "tug/internal/podconfig", "tug/internal/pleg", "tug/internal/clock"},
		modules: []string{"github.com/prometheus/client_golang"}},
	// The labels tug writes on containerd containers and reads back as a
	// pod's container records: pure, over pod.
	"tug/internal/podlabels": {internal: []string{"tug/internal/pod"}},
	// Commands in a container's task: the containerd client, errdefs and
	// runtime-spec for the exec's process.
	"tug/internal/podexec": {modules: []string{"github.com/containerd/containerd/v2", "github.com/containerd/errdefs", "github.com/opencontainers/runtime-spec"}},
	// The containerd adapter. Beyond containerd and runtime-spec (STYLE.md):
	// containerd's API module, errdefs (its error kinds, and their gRPC
	// mapping), typeurl (its event payloads), image-spec and
	// distribution/reference (image names and manifests) are the types
	// containerd's client speaks; x/sys for the log driver's fds and mounts.
	// objects gives the values of env as a container starts.
	"tug/internal/podruntime": {internal: []string{"tug/internal/pod", "tug/internal/objects", "tug/internal/clock",
		"tug/internal/specopts", "tug/internal/podlogs", "tug/internal/podexec", "tug/internal/podlabels", "tug/internal/images", "tug/internal/volume",
		"tug/internal/keylock",
	}, modules: []string{
		"github.com/containerd/containerd/v2", "github.com/containerd/containerd/api",
		"github.com/containerd/errdefs", "github.com/containerd/errdefs/pkg",
		"github.com/containerd/typeurl/v2", "github.com/distribution/reference",
		"github.com/opencontainers/image-spec", "github.com/opencontainers/runtime-spec",
		"golang.org/x/sys",
	}},
	// The host ID blocks of pods in their own user namespace: a leaf of
	// the standard library and pod (the mapping type).
	"tug/internal/userns": {internal: []string{"tug/internal/atomicfile", "tug/internal/pod"}},
	// What a pod's containers mount: containerd's mount package unmounts
	// a pod's tmpfs volumes recursively, its snapshots service makes the
	// views of image volumes (whose images come from images, through an
	// interface), the runtime-spec types are the mounts it returns, x/sys
	// opens paths beneath their root; mountinfo finds the host mount a
	// hostPath is on, for its propagation.
	"tug/internal/volume": {internal: []string{"tug/internal/pod", "tug/internal/objects", "tug/internal/images",
		"tug/internal/podlabels", "tug/internal/keylock", "tug/internal/clock"}, modules: []string{
		"github.com/containerd/containerd/v2", "github.com/containerd/errdefs", "github.com/opencontainers/runtime-spec", "golang.org/x/sys",
		"github.com/moby/sys/mountinfo",
	}},
	// A mutex per key: the standard library only.
	"tug/internal/keylock": {},
	// Images present in containerd's store: the containerd client and the
	// types it speaks (image-spec, distribution/reference for names,
	// errdefs for its error kinds, platforms for the host's platform);
	// registry gives the resolvers of its pulls; x/sys for the syncfs(2)
	// that makes an unpack durable on a containerd 1.x daemon; timefloor
	// says a registry certificate's dates against the clock in words.
	"tug/internal/images": {internal: []string{"tug/internal/pod", "tug/internal/registry", "tug/internal/timefloor"}, modules: []string{
		"github.com/containerd/containerd/v2", "github.com/containerd/errdefs",
		"github.com/containerd/platforms", "github.com/distribution/reference",
		"github.com/opencontainers/image-spec", "golang.org/x/sys",
	}},
	// How registries are reached: containerd's remotes (its docker
	// resolver, and its config package, which reads certs.d's hosts.toml as
	// containerd does) and errdefs for the "no host directory" it expects.
	"tug/internal/registry": {modules: []string{"github.com/containerd/containerd/v2", "github.com/containerd/errdefs"}},
	// The CRI log layout: writing, conversion, reading. x/sys for
	// fallocate, inotify and prlimit; atomicfile writes the pumps' state files durably.
	"tug/internal/podlogs": {internal: []string{"tug/internal/pod", "tug/internal/atomicfile"}, modules: []string{"golang.org/x/sys"}},
	// OCI spec options: containerd's oci package and the spec and image
	// types it speaks; x/sys opens seccomp profiles beneath their root;
	// rootfs and moby's passwd and group parsers resolve the user from the
	// image's files.
	"tug/internal/specopts": {internal: []string{"tug/internal/pod", "tug/internal/rootfs"}, modules: []string{
		"github.com/containerd/containerd/v2", "github.com/opencontainers/image-spec",
		"github.com/opencontainers/runtime-spec", "golang.org/x/sys", "github.com/moby/sys/user",
	}},
	// Files of a container's root file system read from its snapshot's
	// mounts: containerd's mount package for the temporary mount, x/sys
	// for whiteouts and opaque directories.
	"tug/internal/rootfs": {modules: []string{"github.com/containerd/containerd/v2", "golang.org/x/sys"}},
	// The node's devices: the CDI library (spec registry and injection) and
	// the OCI spec types it edits; specopts for the device node type it
	// hands to podruntime; atomicfile writes its allocations durably.
	// fsnotify watches the device directories (hot-plug): the CDI library
	// watches its spec directories with it, so it is linked already.
	"tug/internal/devices": {internal: []string{"tug/internal/pod", "tug/internal/podplan", "tug/internal/specopts", "tug/internal/atomicfile"}, modules: []string{
		"tags.cncf.io/container-device-interface", "github.com/opencontainers/runtime-spec",
		"github.com/fsnotify/fsnotify",
	}},
	// Netlink and netns (STYLE.md), plus google/nftables: the masquerade
	// and hostPort rules are nftables over netlink (docs/decisions.md), and
	// x/sys for the socket options and IFNAMSIZ.
	"tug/internal/network": {internal: []string{"tug/internal/pod"}, modules: []string{
		"github.com/vishvananda/netlink", "github.com/vishvananda/netns",
		"github.com/google/nftables", "golang.org/x/sys",
	}},
	// cgroups/v3 is the design's library; moby/sys/mountinfo finds the
	// cgroup mounts (hybrid hosts), x/sys for statfs and the OOM score.
	"tug/internal/qos": {internal: []string{"tug/internal/pod"}, modules: []string{
		"github.com/containerd/cgroups/v3", "github.com/moby/sys/mountinfo", "golang.org/x/sys",
	}},
	"tug/internal/policy": {internal: []string{"tug/internal/pod"}},
	// client_golang serves /metrics; events for the Event type of GET
	// /events; podlogs reads the logs GET /pods/{ns}/{name}/log serves.
	"tug/internal/api": {internal: []string{"tug/internal/podview", "tug/internal/pod", "tug/internal/events", "tug/internal/podlogs"}, modules: []string{"github.com/prometheus/client_golang"}},

	// Reclaim: image GC and the eviction manager read and act
	// through their own interfaces; the Prometheus client for
	// kubelet_image_garbage_collected_total and kubelet_evictions.
	"tug/internal/reclaim/imagegc":  {internal: []string{"tug/internal/pod", "tug/internal/clock"}, modules: []string{"github.com/prometheus/client_golang"}},
	"tug/internal/reclaim/eviction": {internal: []string{"tug/internal/pod", "tug/internal/clock"}, modules: []string{"github.com/prometheus/client_golang"}},
	// Probes: the handlers dial from inside a pod's netns (x/sys
	// for setns), grpc for grpc.health.v1 (containerd's own version), the
	// Prometheus client for prober_probe_total and _duration_seconds.
	"tug/internal/prober": {internal: []string{"tug/internal/pod", "tug/internal/clock"}, modules: []string{
		"google.golang.org/grpc", "golang.org/x/sys", "github.com/prometheus/client_golang",
	}},
	// The sync loop's hooks: lifecycle handlers run with the probes'
	// actions; the image pre-pull and repair are given the runtime's pull
	// and repair as functions.
	"tug/internal/lifecycle":  {internal: []string{"tug/internal/pod", "tug/internal/prober"}},
	"tug/internal/imagehooks": {internal: []string{"tug/internal/pod", "tug/internal/clock"}},
	"tug/internal/resize":     {internal: []string{"tug/internal/pod", "tug/internal/podplan"}},
	// tug's own log lines, with sd-daemon priorities on the journal's
	// stream: the standard library only.
	"tug/internal/tuglog": {},
	// What tug tells systemd (READY=1, STATUS=, WATCHDOG=1, STOPPING=1):
	// go-systemd's notify protocol and watchdog settings.
	"tug/internal/sdnotify": {internal: []string{"tug/internal/podview", "tug/internal/pod"}, modules: []string{"github.com/coreos/go-systemd/v22"}},
	// Reads container cgroups' usage through cgroups/v3 and
	// exports it with client_golang.
	"tug/internal/cgstats": {internal: []string{"tug/internal/pod"}, modules: []string{
		"github.com/containerd/cgroups/v3", "github.com/prometheus/client_golang",
	}},
	// Rollback of failed updates: above the store and the sync
	// loop, whose types it reads; only agent/ imports it.
	"tug/internal/rollout": {internal: []string{"tug/internal/podview", "tug/internal/pod", "tug/internal/clock", "tug/internal/podconfig", "tug/internal/reconcile", "tug/internal/pleg", "tug/internal/atomicfile"},
		modules: []string{"github.com/prometheus/client_golang"}},
	// The status upstream: builds the document from pod's types, seals it
	// in the bundle envelope, counts its sends with client_golang; only
	// agent/ imports it. atomicfile writes its sequence file durably.
	// tug's update of itself: the A/B layout, its state, the launch
	// guard, the updater and the trial's gate; releases are bundle's
	// envelopes, state files atomicfile's; a release's waves are wave's,
	// the device's windows window's.
	"tug/internal/selfupdate": {internal: []string{"tug/internal/bundle", "tug/internal/atomicfile", "tug/internal/wave", "tug/internal/window"}, modules: []string{"github.com/opencontainers/image-spec"}},
	"tug/internal/statusreport": {internal: []string{"tug/internal/podview", "tug/internal/pod", "tug/internal/clock", "tug/internal/bundle", "tug/internal/atomicfile", "tug/internal/timefloor"},
		modules: []string{"github.com/prometheus/client_golang"}},
	// Metrics pushed by remote write: client_golang's registry is what is
	// gathered, client_model its types; protowire (linked already, through
	// grpc) encodes the requests, checked against Prometheus' prompb in the
	// tests (docs/decisions.md, "Metrics by remote write"), and
	// klauspost/compress's snappy (linked already) compresses them.
	"tug/internal/remotewrite": {internal: []string{"tug/internal/atomicfile", "tug/internal/timefloor"}, modules: []string{
		"github.com/prometheus/client_golang", "github.com/prometheus/client_model",
		"google.golang.org/protobuf", "github.com/klauspost/compress",
	}},
	// The event ring: a leaf over pod.
	"tug/internal/events": {internal: []string{"tug/internal/pod", "tug/internal/clock"}},
	// The agent's client subcommands: api's client and the pod and event
	// types it returns; source for the OCI source's prefix "tug pods"
	// shows; yaml.v3 prints "tug inspect -o yaml"; pflag parses the
	// GNU-style flags; x/sys for the terminal of "tug exec -it" (raw mode,
	// window size). Not config: agent/ passes its defaults.
	"tug/internal/cli": {internal: []string{"tug/internal/podview", "tug/internal/pod", "tug/internal/api", "tug/internal/events",
		"tug/internal/source", "tug/internal/cli/cmdflag", "tug/internal/cli/offline", "tug/internal/fieldpath"}, modules: []string{"gopkg.in/yaml.v3", "github.com/spf13/pflag", "golang.org/x/sys"}},
	// The subcommands on files and bundles: manifest and source read them
	// as the agent would, bundle seals and checks them, policy for
	// "tug validate --policy", registry and containerd's remotes resolver
	// for "tug bundle push" and "pull", as the agent's OCI source uses them.
	"tug/internal/cli/offline": {internal: []string{"tug/internal/pod", "tug/internal/manifest", "tug/internal/source", "tug/internal/bundle",
		"tug/internal/policy", "tug/internal/registry", "tug/internal/cli/cmdflag", "tug/internal/wave"}, modules: []string{"github.com/spf13/pflag", "github.com/containerd/containerd/v2"}},
	// How every subcommand parses its flags.
	"tug/internal/cli/cmdflag": {modules: []string{"github.com/spf13/pflag"}},
	// Test code only: the one package that may import testing; manifest
	// and pod for the parsing helpers of other packages' tests.
	"tug/internal/testutil": {testing: true, internal: []string{"tug/internal/manifest", "tug/internal/pod"}, modules: []string{
		"github.com/containerd/containerd/v2", "github.com/containerd/containerd/api", "github.com/containerd/errdefs",
		"github.com/vishvananda/netlink", "github.com/vishvananda/netns", "golang.org/x/sys",
	}},
	// The only place that builds concrete types and connects them: every
	// internal package but testutil; cli for the client subcommands it
	// dispatches to.
	"tug/agent": {internal: []string{"tug/internal/podview", "tug/internal/cronjob", "tug/internal/window", "tug/internal/windowgate", "tug/internal/cli", "tug/internal/podplan", "tug/internal/podstatus", "tug/internal/podexec",
		"tug/internal/pod", "tug/internal/config", "tug/internal/source",
		"tug/internal/podconfig", "tug/internal/pleg", "tug/internal/reconcile",
		"tug/internal/podruntime", "tug/internal/images", "tug/internal/volume", "tug/internal/network", "tug/internal/qos",
		"tug/internal/policy", "tug/internal/devices", "tug/internal/api", "tug/internal/events", "tug/internal/cgstats", "tug/internal/userns",
		"tug/internal/reclaim/imagegc", "tug/internal/reclaim/eviction",
		"tug/internal/prober", "tug/internal/lifecycle", "tug/internal/imagehooks", "tug/internal/resize", "tug/internal/rollout", "tug/internal/exepages", "tug/internal/podlogs",
		"tug/internal/statusreport", "tug/internal/timefloor", "tug/internal/selfupdate",
		"tug/internal/remotewrite",
		"tug/internal/registry", "tug/internal/sdnotify", "tug/internal/tuglog", "tug/internal/bundle",
	}, modules: []string{
		// The metrics registry (Go and process collectors), the
		// journal's stream check, and pflag's ErrHelp of tug run; containerd's
		// resolver type that the OCI sources are given, and the level of
		// containerd's own logger.
		"github.com/prometheus/client_golang", "github.com/coreos/go-systemd/v22", "github.com/spf13/pflag",
		"github.com/containerd/containerd/v2", "github.com/containerd/log"}},

	// The benchmark programs ("make bench") and their kit: test tooling, run
	// by hand or by make against the test environment, never part of tug.
	// The kit starts and measures tug and containerd: containerd's client,
	// its API (task metrics, events) and typeurl for the events' payloads,
	// mountinfo and x/sys to unmount tug's namespace pins and read /proc;
	// api and pod for tug's status as the programs read it.
	"tug/bench/internal/kit": {internal: []string{"tug/internal/podview", "tug/internal/api", "tug/internal/pod"}, modules: []string{
		"github.com/containerd/containerd/v2", "github.com/containerd/containerd/api", "github.com/containerd/errdefs",
		"github.com/containerd/typeurl/v2", "github.com/moby/sys/mountinfo", "golang.org/x/sys",
	}},
	// Each program measures through the kit; pod for the manifests it writes.
	"tug/bench/benchday2":     {internal: []string{"tug/internal/podview", "tug/bench/internal/kit", "tug/internal/pod"}},
	"tug/bench/benchidle":     {internal: []string{"tug/bench/internal/kit"}, modules: []string{"github.com/containerd/containerd/v2"}},
	"tug/bench/benchupstream": {internal: []string{"tug/bench/internal/kit"}},
	"tug/bench/benchwear":     {internal: []string{"tug/bench/internal/kit"}},
	"tug/bench/benchlogs":     {internal: []string{"tug/bench/internal/kit"}, modules: []string{"github.com/containerd/containerd/v2"}},
	"tug/bench/benchprobe":    {internal: []string{"tug/bench/internal/kit"}},
	"tug/bench/benchrollout":  {internal: []string{"tug/internal/podview", "tug/bench/internal/kit", "tug/internal/pod"}},
	// The OCI and URL sources themselves, polling as N devices would:
	// containerd's docker resolver for the OCI sources and the push.
	"tug/bench/benchoci": {internal: []string{"tug/internal/podview", "tug/bench/internal/kit", "tug/internal/pod", "tug/internal/source", "tug/internal/bundle"},
		modules: []string{"github.com/containerd/containerd/v2"}},
	// A device-day's bytes on the wire: the bundles it pushes (bundle,
	// containerd's docker resolver).
	"tug/bench/benchbytes": {internal: []string{"tug/bench/internal/kit", "tug/internal/bundle"},
		modules: []string{"github.com/containerd/containerd/v2"}},
	// ctr's way of starting a container, with containerd's client, beside tug's.
	"tug/bench/benchstart": {internal: []string{"tug/bench/internal/kit"}, modules: []string{"github.com/containerd/containerd/v2", "golang.org/x/sys"}},
	// What each module adds to a binary: go list and go tool nm, the
	// standard library only.
	"tug/tools/binsize": {},
	// Network setup per pod through package network itself, against the same
	// with ip commands: netlink and x/sys for the comparison's own netns.
	"tug/bench/benchnet": {internal: []string{"tug/bench/internal/kit", "tug/internal/network", "tug/internal/pod"},
		modules: []string{"github.com/vishvananda/netlink", "golang.org/x/sys"}},
	// PSS of tug and its pods against podman: containerd's client and
	// runtime-spec for the shims and specs it inspects, x/sys for /proc.
	"tug/bench/benchfootprint": {internal: []string{"tug/bench/internal/kit", "tug/internal/api", "tug/internal/pod"},
		modules: []string{"github.com/containerd/containerd/v2", "github.com/opencontainers/runtime-spec", "golang.org/x/sys"}},
	// The floor: a Go containerd client making only the PLEG's calls, which
	// gives back its start-up pages as tug does (exepages).
	"tug/bench/benchfootprint/floor": {internal: []string{"tug/internal/exepages"},
		modules: []string{"github.com/containerd/containerd/v2", "github.com/containerd/containerd/api"}},
	// The test image's grpc.health.v1 server (scripts/mkimage.sh builds it).
	"tug/e2e/testimage/grpchealth": {modules: []string{"google.golang.org/grpc"}},
}

// everyPackage lists the tug packages any package may import.
var everyPackage = []string{"tug/internal/redact", "tug/internal/steptime"}

// allowed is one package's line of the allow-list.
type allowed struct {
	internal []string // tug packages it may import
	modules  []string // third-party modules (module paths) whose packages it may import
	testing  bool     // it may depend on package testing
}

// listedPackage is the part of `go list -deps -json` the checker reads.
type listedPackage struct {
	ImportPath string
	Standard   bool
	GoFiles    []string
	Imports    []string
	Deps       []string
	Module     *struct{ Path string }
}

// TestImportRules enforces allowedImports on the real tree.
func TestImportRules(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps",
		"-json=ImportPath,Standard,GoFiles,Imports,Deps,Module", "tug/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, err := range checkImports(strings.NewReader(string(out)), allowedImports) {
		t.Error(err)
	}
}

// checkImports reads the output of `go list -deps -json` over tug's
// packages and returns every import that rules do not allow, every tug
// package without a rule and every rule naming a package that is not in
// the list.
func checkImports(r io.Reader, rules map[string]allowed) []error {
	var errs []error
	pkgs := map[string]listedPackage{}
	var order []string
	dec := json.NewDecoder(r)
	for dec.More() {
		var p listedPackage
		if err := dec.Decode(&p); err != nil {
			return []error{fmt.Errorf("decode go list output: %w", err)}
		}
		pkgs[p.ImportPath] = p
		order = append(order, p.ImportPath)
	}
	isTug := func(path string) bool { return path == "tug" || strings.HasPrefix(path, "tug/") }
	for _, path := range order {
		p := pkgs[path]
		if !isTug(path) || len(p.GoFiles) == 0 { // a directory of tests only
			continue
		}
		rule, ok := rules[path]
		if !ok {
			errs = append(errs, fmt.Errorf("%s has no line in the import allow-list (internal/deps_test.go)", path))
			continue
		}
		if slices.Contains(p.Deps, "testing") && !rule.testing {
			errs = append(errs, fmt.Errorf("%s depends on package testing in production code", path))
		}
		for _, imp := range p.Imports {
			dep, known := pkgs[imp]
			switch {
			case known && dep.Standard:
			case isTug(imp):
				if !slices.Contains(rule.internal, imp) && !slices.Contains(everyPackage, imp) {
					errs = append(errs, fmt.Errorf("%s may not import %s", path, imp))
				}
			case !known || dep.Module == nil:
				errs = append(errs, fmt.Errorf("%s imports %s, which go list does not describe", path, imp))
			case !slices.Contains(rule.modules, dep.Module.Path):
				errs = append(errs, fmt.Errorf("%s may not import %s (module %s)", path, imp, dep.Module.Path))
			}
		}
	}
	for path, rule := range rules {
		for _, name := range append([]string{path}, rule.internal...) {
			if _, ok := pkgs[name]; !ok {
				errs = append(errs, fmt.Errorf("the allow-list names %s, which does not exist", name))
			}
		}
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return slices.CompactFunc(errs, func(a, b error) bool { return a.Error() == b.Error() })
}

// TestCheckImports shows the checker on a fake `go list -deps -json`
// output: each forbidden import, a package without a rule and a rule for a
// package that does not exist is reported.
func TestCheckImports(t *testing.T) {
	rules := map[string]allowed{
		"tug/internal/pod":       {modules: []string{"gopkg.in/yaml.v3"}},
		"tug/internal/redact":    {},
		"tug/internal/reconcile": {internal: []string{"tug/internal/pod"}},
		"tug/internal/qos":       {internal: []string{"tug/internal/pod"}},
		"tug/internal/testutil":  {testing: true},
	}
	std := func(path string, deps ...string) listedPackage {
		return listedPackage{ImportPath: path, Standard: true, GoFiles: []string{"x.go"}, Deps: deps}
	}
	mod := func(path, module string) listedPackage {
		return listedPackage{ImportPath: path, GoFiles: []string{"x.go"}, Module: &struct{ Path string }{module}}
	}
	tug := func(path string, imports ...string) listedPackage {
		return listedPackage{ImportPath: path, GoFiles: []string{"x.go"}, Imports: imports, Module: &struct{ Path string }{"tug"}}
	}
	base := []listedPackage{
		std("fmt"), std("testing", "fmt"),
		mod("gopkg.in/yaml.v3", "gopkg.in/yaml.v3"),
		mod("github.com/vishvananda/netlink", "github.com/vishvananda/netlink"),
		tug("tug/internal/redact", "fmt"),
		tug("tug/internal/pod", "fmt", "gopkg.in/yaml.v3", "tug/internal/redact"),
		tug("tug/internal/qos", "tug/internal/pod"),
		tug("tug/internal/reconcile", "tug/internal/pod", "tug/internal/redact"),
		tug("tug/internal/testutil", "testing"),
		{ImportPath: "tug/internal", Module: &struct{ Path string }{"tug"}}, // tests only
	}
	base[len(base)-2].Deps = []string{"fmt", "testing"}
	tests := []struct {
		name   string
		change func([]listedPackage) []listedPackage
		rules  func(map[string]allowed)
		want   []string // substrings, one per expected error, in order
	}{
		{name: "allowed tree"},
		{
			name: "forbidden internal import",
			change: func(ps []listedPackage) []listedPackage {
				return append(ps, tug("tug/internal/reconcile", "tug/internal/pod", "tug/internal/qos"))
			},
			want: []string{"tug/internal/reconcile may not import tug/internal/qos"},
		},
		{
			name: "forbidden module",
			change: func(ps []listedPackage) []listedPackage {
				return append(ps, tug("tug/internal/reconcile", "github.com/vishvananda/netlink"))
			},
			want: []string{"reconcile may not import github.com/vishvananda/netlink (module github.com/vishvananda/netlink)"},
		},
		{
			name: "testing in production code",
			change: func(ps []listedPackage) []listedPackage {
				p := tug("tug/internal/qos", "testing", "tug/internal/pod")
				p.Deps = []string{"fmt", "testing", "tug/internal/pod"}
				return append(ps, p)
			},
			want: []string{"tug/internal/qos depends on package testing"},
		},
		{
			name: "package without a rule",
			change: func(ps []listedPackage) []listedPackage {
				return append(ps, tug("tug/internal/probe", "tug/internal/pod"))
			},
			want: []string{"tug/internal/probe has no line"},
		},
		{
			name: "rule for a package that does not exist",
			rules: func(r map[string]allowed) {
				r["tug/internal/reclaim"] = allowed{}
				r["tug/internal/qos"] = allowed{internal: []string{"tug/internal/pod", "tug/internal/probe"}}
			},
			want: []string{"names tug/internal/probe, which does not exist", "names tug/internal/reclaim, which does not exist"},
		},
		{
			name:   "import go list does not describe",
			change: func(ps []listedPackage) []listedPackage { return append(ps, tug("tug/internal/pod", "example.com/x")) },
			want:   []string{"tug/internal/pod imports example.com/x, which go list does not describe"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := slices.Clone(base)
			if tt.change != nil {
				ps = tt.change(ps)
			}
			r := map[string]allowed{}
			for k, v := range rules {
				r[k] = v
			}
			if tt.rules != nil {
				tt.rules(r)
			}
			var out strings.Builder
			enc := json.NewEncoder(&out)
			for _, p := range ps {
				if err := enc.Encode(p); err != nil {
					t.Fatal(err)
				}
			}
			errs := checkImports(strings.NewReader(out.String()), r)
			if len(errs) != len(tt.want) {
				t.Fatalf("checkImports = %v; want %d errors %q", errors.Join(errs...), len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("error %d = %q; want it to contain %q", i, errs[i], w)
				}
			}
		})
	}
}
