// Package config owns tug's agent configuration: its defaults, the YAML
// config file (--config), the command-line flags and their validation.
// Precedence: defaults < config file < flags given on the command line.
//
// Only agent/ imports it; it imports the standard library, yaml.v3 and
// internal/pod (the quantity syntax of --reserved is the manifests') and
// internal/window (the syntax of --update-window and --download-window).
package config

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"tug/internal/redact"
	"tug/internal/window"
)

// Config is the agent's configuration. Flag names keep the kubelet's where
// the meaning is the same; the YAML keys mirror the flag names.
type Config struct {
	// PodManifestPath is the drop-in manifest directory. Default /etc/tug/manifests.
	PodManifestPath string `yaml:"pod-manifest-path"`
	// ManifestURL is a URL polled for pod manifests ("" = none).
	ManifestURL string `yaml:"manifest-url"`
	// ManifestURLHeader holds "Name:Value" headers sent with every request
	// to ManifestURL (repeatable flag). Their values are never logged.
	ManifestURLHeader []string `yaml:"manifest-url-header"`
	// ManifestURLHeaderFile is a file (mode 0600) of "Name: Value" lines
	// sent as headers with every request to ManifestURL, so that secrets
	// stay off the command line ("" = none).
	ManifestURLHeaderFile string `yaml:"manifest-url-header-file"`
	// HTTPCheckFrequency is how often ManifestURL is polled (with ±10%
	// jitter). Default 20s.
	HTTPCheckFrequency time.Duration `yaml:"http-check-frequency"`
	// ManifestURLCA is a PEM file of CA certificates trusted for
	// ManifestURL besides the system roots ("" = system roots only).
	ManifestURLCA string `yaml:"manifest-url-ca"`
	// ManifestURLCAMode is append (ManifestURLCA is trusted besides the
	// system roots) or replace (only ManifestURLCA is trusted). Default
	// append.
	ManifestURLCAMode string `yaml:"manifest-url-ca-mode"`
	// ManifestURLClientCert and ManifestURLClientKey are PEM files of the
	// TLS client certificate presented to ManifestURL (both or neither).
	ManifestURLClientCert string `yaml:"manifest-url-client-cert"`
	ManifestURLClientKey  string `yaml:"manifest-url-client-key"`
	// ManifestVerifyKey lists ed25519 public keys (PEM files, or
	// directories of *.pem files); when set, ManifestURL must serve a
	// signed bundle that one of them verifies (repeatable flag; a single
	// string in the config file works too).
	ManifestVerifyKey StringList `yaml:"manifest-verify-key"`
	// ManifestOCI lists references of bundle artifacts in OCI registries
	// (host/repository:tag or host/repository@sha256:...), each a source
	// whose bundle is checked as ManifestURL's is (repeatable flag; a
	// single string in the config file works too). Default none.
	ManifestOCI StringList `yaml:"manifest-oci"`
	// OCICheckFrequency is how often each ManifestOCI reference is
	// resolved (one HEAD request, with ±10% jitter, longer while the
	// registry fails). Default 1m.
	OCICheckFrequency time.Duration `yaml:"oci-check-frequency"`
	// UpdateWindow is when a new spec from ManifestURL or ManifestOCI is
	// applied: a weekly range ("Mon-Fri 02:00-04:00", "Sat 22:00-Sun
	// 06:00") or "cron:<5 fields> for <duration>", with optional
	// "tz=<zone>" and "jitter=<duration>" (README "Update windows").
	// Outside it the pods keep their spec, and tug its binary (a tug
	// release is switched to only inside it). "" = always.
	UpdateWindow string `yaml:"update-window"`
	// DownloadWindow is when the images of a spec held for UpdateWindow
	// are pulled ahead, and a tug release is fetched and installed ahead
	// (same syntax). "" = always.
	DownloadWindow string `yaml:"download-window"`
	// SelfUpdateOCI is the reference of a tug release in an OCI registry
	// ("tug release push"), polled every OCICheckFrequency: a release that
	// one of ManifestVerifyKey's keys verifies, above the running version,
	// never reverted here, for this node and of this architecture is
	// installed A/B under RootDir/self, tried and committed or reverted
	// (README "Updating tug itself"). Default none.
	SelfUpdateOCI string `yaml:"self-update-oci"`
	// SelfUpdateURL is the same from a URL serving this architecture's
	// signed binary ("{arch}" in it is replaced by the GOARCH). Default
	// none.
	SelfUpdateURL string `yaml:"self-update-url"`
	// SelfUpdateTrial is how long a new tug's health gate must hold
	// before it is committed. Default 2m.
	SelfUpdateTrial time.Duration `yaml:"self-update-trial"`
	// FileSourceWindows holds updates of the manifest directory for the
	// windows too. Default false: a file dropped in applies at once.
	FileSourceWindows bool `yaml:"file-source-windows"`
	// StatusURL is the HTTPS URL the node's status document is POSTed to
	// (docs/status.md); "" = none. http:// only for a loopback host. Its
	// user information and query values are never logged.
	StatusURL string `yaml:"status-url"`
	// StatusURLCA is a PEM file of CA certificates trusted for StatusURL
	// besides the system roots ("" = system roots only).
	StatusURLCA string `yaml:"status-url-ca"`
	// StatusURLClientCert and StatusURLClientKey are PEM files of the TLS
	// client certificate presented to StatusURL (both or neither).
	StatusURLClientCert string `yaml:"status-url-client-cert"`
	StatusURLClientKey  string `yaml:"status-url-client-key"`
	// StatusURLHeaderFile is a file (mode 0600) of "Name: Value" lines
	// sent as headers with every status document ("" = none).
	StatusURLHeaderFile string `yaml:"status-url-header-file"`
	// StatusFrequency is how often the status document is sent when
	// nothing changed, a heartbeat (with ±10% jitter). Default 5m, the
	// kubelet's nodeStatusReportFrequency: a change is sent when it
	// happens, the heartbeat only says the device is there.
	StatusFrequency time.Duration `yaml:"status-frequency"`
	// StatusSigningKey is an ed25519 private key file (as `tug sign
	// --key` reads it); when set, each status document is sent as a
	// signed envelope ("" = unsigned).
	StatusSigningKey string `yaml:"status-signing-key"`
	// StatusCompression is how each status document is encoded on the
	// wire: "gzip" (Content-Encoding: gzip; a receiver that answers 415
	// gets it uncompressed) or "none". Default "gzip".
	StatusCompression string `yaml:"status-compression"`
	// FileCheckFrequency is the safety-net rescan period of the manifest
	// directory (inotify does the fast path). Default 20s.
	FileCheckFrequency time.Duration `yaml:"file-check-frequency"`
	// SyncFrequency is how often every pod is synced again even when
	// nothing was reported. Default 1m.
	SyncFrequency time.Duration `yaml:"sync-frequency"`
	// RootDir is tug's state directory (pod volumes). Default /var/lib/tug.
	RootDir string `yaml:"root-dir"`
	// RunDir holds runtime state that a reboot clears: pinned namespaces.
	// Default /run/tug.
	RunDir string `yaml:"run-dir"`
	// PodLogsDir is where container logs are written. Default /var/log/pods.
	PodLogsDir string `yaml:"pod-logs-dir"`
	// ImageDir holds image archives to import (sideloading). Default
	// /var/lib/tug/images.
	ImageDir string `yaml:"image-dir"`
	// RegistryConfigDir is the root of containerd's certs.d layout that
	// image pulls read registry hosts from: DIR/HOST_PORT_/hosts.toml,
	// DIR/HOST/hosts.toml or DIR/_default/hosts.toml (mirrors, CAs, client
	// certificates), as containerd reads them. A missing directory means
	// containerd's defaults. Default /etc/containerd/certs.d.
	RegistryConfigDir string `yaml:"registry-config-dir"`
	// ImagePullBandwidth caps the download rate of all registry pulls
	// together, in bytes per second, a quantity ("2Mi", "500Ki"); "0" is no
	// cap. Default "0".
	ImagePullBandwidth string `yaml:"image-pull-bandwidth"`
	// HostnameOverride replaces the host name in static pod names. Default:
	// the kernel's host name.
	HostnameOverride string `yaml:"hostname-override"`
	// ContainerdAddress is containerd's socket. Default
	// /run/containerd/containerd.sock.
	ContainerdAddress string `yaml:"containerd-address"`
	// ContainerdNamespace is the containerd namespace of tug's containers
	// and images. Default tug.
	ContainerdNamespace string `yaml:"containerd-namespace"`
	// AllowPrivileged lets containers run privileged. Default false.
	AllowPrivileged bool `yaml:"allow-privileged"`
	// ContainerLogMaxSize is the size at which a container log is rotated, in
	// bytes. Default 10 MiB.
	ContainerLogMaxSize int64 `yaml:"container-log-max-size"`
	// ContainerLogMaxFiles is how many files (current included) a container
	// log keeps. Default 5.
	ContainerLogMaxFiles int `yaml:"container-log-max-files"`
	// ContainerLogDriver is how container output reaches its log: "file"
	// (the shim writes raw files that tug converts) or "binary" (a tug
	// logger process per container, which costs a process and its memory
	// per container), "journald" (the raw files converted into journal
	// entries, no CRI log file) or "file+journald" (both). Default "file".
	ContainerLogDriver string `yaml:"container-log-driver"`
	// LogLevel is debug, info, warn or error. Default info.
	LogLevel string `yaml:"log-level"`
	// PLEGRelistPeriod is how often the container list is read back from
	// containerd; containerd's events only make a relist come sooner.
	// Default 1s.
	PLEGRelistPeriod time.Duration `yaml:"pleg-relist-period"`
	// CrashLoopBackOffInitial is the first delay before an exited container
	// is restarted again (the first restart is immediate). Default 10s.
	CrashLoopBackOffInitial time.Duration `yaml:"crash-loop-back-off-initial"`
	// CrashLoopBackOffMax caps the doubling restart delay. Default 5m.
	CrashLoopBackOffMax time.Duration `yaml:"crash-loop-back-off-max"`
	// CrashLoopBackOffReset: a container that ran this long before it
	// exited restarts at once again. Default 10m.
	CrashLoopBackOffReset time.Duration `yaml:"crash-loop-back-off-reset"`
	// RolloutMinReady is how long a pod's spec must be Ready with no
	// restart to become its last good spec. Default 30s.
	RolloutMinReady time.Duration `yaml:"rollout-min-ready"`
	// RolloutTimeout is how long an updated pod may take to become Ready
	// before it is rolled back to its last good spec; 0 turns rollback
	// off (a pod's tug.io/rollout-timeout annotation overrides it).
	// Default 5m.
	RolloutTimeout time.Duration `yaml:"rollout-timeout"`
	// HealthzBindAddress is the loopback address of /healthz, /readyz and
	// /metrics. Default 127.0.0.1.
	HealthzBindAddress string `yaml:"healthz-bind-address"`
	// HealthzPort is their TCP port; 0 turns the listener off. Default 10248.
	HealthzPort int `yaml:"healthz-port"`
	// RunOnce starts the pods of the manifest directory, waits until each
	// runs or has failed, prints their status and exits (non-zero if any
	// failed). Default false.
	RunOnce bool `yaml:"runonce"`
	// TestFaultWedgeSyncLoop is a test-only fault (the hidden flag
	// --test-fault-wedge-sync-loop, never in a config file): this long
	// after start the sync loop blocks for good, so that the systemd
	// watchdog test sees tug killed. 0: off.
	TestFaultWedgeSyncLoop time.Duration `yaml:"-"`
	// RunOnceTimeout bounds how long --runonce waits. Default 5m.
	RunOnceTimeout time.Duration `yaml:"runonce-timeout"`
	// ImagePullProgressDeadline cuts an image pull that fetches no new
	// byte for this long while it has blobs left to fetch (the name of the
	// kubelet's and docker's old flag for the same thing). Default 1m.
	ImagePullProgressDeadline time.Duration `yaml:"image-pull-progress-deadline"`
	// ImagePullTimeout, if not 0, cuts an image pull that runs this long,
	// progress or not. Default 0: a pull is bounded by its progress only.
	ImagePullTimeout time.Duration `yaml:"image-pull-timeout"`
	// ImagePullOffline is what an imagePullPolicy Always pull does when no
	// registry host can be reached (connection refused, timeout, DNS or
	// TLS handshake failure): "use-cached" runs the image of the same
	// reference that is present, with a PullOfflineUsingCache warning and
	// the tug.io/ImageFromCache pod condition; "fail" fails it with
	// ErrImagePull, as the kubelet does. Default use-cached.
	ImagePullOffline string `yaml:"image-pull-offline"`

	// BridgeName is the Linux bridge pods are connected to. Default tug0.
	BridgeName string `yaml:"bridge-name"`
	// PodCIDR is the range pod addresses are leased from; the bridge holds
	// its first address, the pods' gateway.
	PodCIDR string `yaml:"pod-cidr"`
	// NodeIP is the node address reported as each pod's hostIP. Default:
	// the source address of the default route.
	NodeIP string `yaml:"node-ip"`
	// ResolvConf is the file pods' /etc/resolv.conf starts from ("" =
	// none). Default /etc/resolv.conf.
	ResolvConf string `yaml:"resolv-conf"`
	// CgroupRoot is the cgroup every pod goes below. Default tugpods for
	// the containerd namespace tug, else tugpods-<namespace>: two
	// instances never share a cgroup root (each removes pod cgroups it
	// does not own), so the default follows the instance.
	CgroupRoot string `yaml:"cgroup-root"`
	// CgroupDriver is how cgroups are managed; only cgroupfs (tug writes
	// them itself) for now.
	CgroupDriver string `yaml:"cgroup-driver"`
	// Reserved is what the pods may not use, kept for the system and tug:
	// "cpu=500m,memory=256Mi". The root cgroup is capped at capacity minus
	// this. Default: nothing reserved.
	Reserved string `yaml:"reserved"`
	// MemoryQoS sets memory.min and memory.high (cgroup v2) as the
	// kubelet's MemoryQoS feature does. Default false.
	MemoryQoS bool `yaml:"memory-qos"`
	// PodMaxPids is each pod's process limit, its cgroup's pids.max (the
	// kubelet's --pod-max-pids); -1 means no limit. Default
	// DefaultPodMaxPids: without a limit one pod's fork bomb takes every
	// pid of the node, tug's and the other pods' included.
	PodMaxPids int64 `yaml:"pod-max-pids"`
	// PodPidsLimit is the older name of PodMaxPids, still read from config
	// files (the systemd unit's file had it) and the command line; giving
	// both in one file is an error.
	PodPidsLimit *int64 `yaml:"pod-pids-limit,omitempty"`
	// MaxPods is how many pods tug runs at most; pods beyond it wait with
	// status OutOfpods (0: no limit). Default 110, the kubelet's.
	MaxPods int `yaml:"max-pods"`
	// NodeLabels are the node's labels besides kubernetes.io/hostname, os
	// and arch, as "key=value,...": a pod's nodeSelector and required node
	// affinity are checked against them. Default none.
	NodeLabels string `yaml:"node-labels"`
	// RegisterWithTaints are the node's taints, "key=value:Effect,...": a
	// pod must tolerate each NoSchedule and NoExecute one. Default none.
	RegisterWithTaints string `yaml:"register-with-taints"`

	// DeviceResource declares the node's device resources, each
	// "NAME=GLOB[:ACCESS]" (host device nodes, one unit each, cgroup
	// access a subset of rwm, default rw) or "NAME=cdi:VENDOR/CLASS"
	// (every CDI device of that kind is one unit). Repeatable. Default
	// none.
	DeviceResource []string `yaml:"device-resource"`
	// CDISpecDirs are the directories of CDI specs, watched for changes.
	// Default /etc/cdi and /var/run/cdi.
	CDISpecDirs []string `yaml:"cdi-spec-dirs"`
	// URLAllowedDevices are the devices --manifest-url's (and each
	// --manifest-oci's) pods may use:
	// extended resource names and CDI kinds (vendor.com/class). Default
	// none; the manifest directory's pods may use every device.
	URLAllowedDevices []string `yaml:"url-allowed-devices"`

	// FilePolicy is the Pod Security Standards level (privileged, baseline
	// or restricted) of the manifest directory's pods. Default privileged.
	FilePolicy string `yaml:"file-policy"`
	// URLPolicy is the level of --manifest-url's pods. Default baseline.
	URLPolicy string `yaml:"url-policy"`
	// OCIPolicy is the level of --manifest-oci's pods. Default baseline.
	OCIPolicy string `yaml:"oci-policy"`
	// FileUserNamespaces and URLUserNamespaces say whether the manifest
	// directory's and --manifest-url's (and each --manifest-oci's) pods
	// may run in the node's user namespace: "allowed" (default) or
	// "required" (a pod without hostUsers: false is refused).
	FileUserNamespaces string `yaml:"file-user-namespaces"`
	URLUserNamespaces  string `yaml:"url-user-namespaces"`
	// UserNamespaceRange is the node's host IDs for pods with hostUsers:
	// false, "FIRST/LENGTH" (both multiples of 65536), one block of 65536
	// per pod. Default "": the subordinate IDs of user tug in SubUIDFile
	// and SubGIDFile when it has an entry there, else
	// 1879048192/268304384. tug refuses a range that overlaps another
	// user's entry or login.defs' SUB_UID/SUB_GID range.
	UserNamespaceRange string `yaml:"user-namespace-range"`
	// SubUIDFile, SubGIDFile and LoginDefsFile are where the host says
	// which IDs local users may map into user namespaces of their own.
	// Defaults /etc/subuid, /etc/subgid, /etc/login.defs.
	SubUIDFile    string `yaml:"subuid-file"`
	SubGIDFile    string `yaml:"subgid-file"`
	LoginDefsFile string `yaml:"login-defs-file"`
	// AllowHostStateMounts lets pods mount hostPaths that expose tug's own
	// dirs or containerd's socket (and "/"). Default false.
	AllowHostStateMounts bool `yaml:"allow-host-state-mounts"`
	// SeccompProfileRoot is the directory of Localhost seccomp profiles.
	// Default <root-dir>/seccomp.
	SeccompProfileRoot string `yaml:"seccomp-profile-root"`
	// DefaultSeccomp is the seccomp profile of containers whose manifest
	// names none: runtime-default (containerd's default profile) or
	// unconfined (Kubernetes' default). Default runtime-default.
	DefaultSeccomp string `yaml:"default-seccomp"`

	// Reclaim, the kubelet's flags and defaults.
	// ImageGCHighThresholdPercent: the image filesystem usage (percent) at
	// which unused images are removed; 100 disables. Default 85.
	ImageGCHighThresholdPercent int `yaml:"image-gc-high-threshold"`
	// ImageGCLowThresholdPercent: the usage the image GC frees down to.
	// Default 80.
	ImageGCLowThresholdPercent int `yaml:"image-gc-low-threshold"`
	// MinimumImageTTLDuration: an unused image is kept this long after it
	// was first seen. Default 2m.
	MinimumImageTTLDuration time.Duration `yaml:"minimum-image-ttl-duration"`
	// EvictionHard: hard eviction thresholds, kubelet syntax
	// ("memory.available<100Mi,nodefs.available<10%"); "none" for none.
	// Default (empty): memory.available 10% of the node's memory, at
	// least 48Mi and at most 100Mi, nodefs.available<10%,
	// nodefs.inodesFree<5%, imagefs.available<15%, pid.available<10%.
	EvictionHard string `yaml:"eviction-hard"`
	// EvictionSoft: soft eviction thresholds, same syntax. Default none.
	EvictionSoft string `yaml:"eviction-soft"`
	// EvictionSoftGracePeriod: how long each soft threshold must hold
	// ("memory.available=1m30s"). Default none.
	EvictionSoftGracePeriod string `yaml:"eviction-soft-grace-period"`
	// EvictionPressureTransitionPeriod: how long a node pressure condition
	// stays after its threshold was last met. Default 5m.
	EvictionPressureTransitionPeriod time.Duration `yaml:"eviction-pressure-transition-period"`
	// EvictionMaxPodGracePeriod: the most grace (seconds) a pod evicted for
	// a soft threshold gets; 0 means the pod's own. Default 0.
	EvictionMaxPodGracePeriod int `yaml:"eviction-max-pod-grace-period"`
	// ShimGrouping is which containers share one containerd shim process:
	// pod (every container of a pod) or node (every container of tug's
	// namespace). Default pod.
	ShimGrouping string `yaml:"shim-grouping"`
	// RuntimeClass declares the node's runtime classes, each
	// "NAME=RUNTIME_TYPE[:BINARY]": a pod with runtimeClassName NAME runs
	// its containers with the containerd runtime RUNTIME_TYPE (e.g.
	// io.containerd.runc.v2, io.containerd.kata.v2) and, for
	// io.containerd.runc.v2, the OCI runtime BINARY (an absolute path that
	// must exist when tug starts) instead of runc. A pod naming a class
	// the node does not declare is refused. Repeatable. Default none.
	RuntimeClass []string `yaml:"runtime-class"`
	// PageOutExecutableAfter is when, after start, tug gives back the
	// pages of its own binary that start-up mapped (0: never). Default 1m.
	PageOutExecutableAfter time.Duration `yaml:"page-out-executable-after"`

	// MetricsRemoteWriteURL is a Prometheus remote-write endpoint (http or
	// https) the metrics of /metrics are pushed to ("" = none).
	MetricsRemoteWriteURL string `yaml:"metrics-remote-write-url"`
	// MetricsRemoteWriteHeaderFile is a file (mode 0600) of "Name: Value"
	// lines sent as headers with every push (Authorization...), in the
	// format of ManifestURLHeaderFile ("" = none). Never logged.
	MetricsRemoteWriteHeaderFile string `yaml:"metrics-remote-write-header-file"`
	// MetricsPushInterval is how often the metrics are pushed: one batch
	// each, with the gatherings made since the last (every
	// MetricsSampleInterval). Default 5m, as the status heartbeat.
	MetricsPushInterval time.Duration `yaml:"metrics-push-interval"`
	// MetricsSampleInterval is how often the metrics are gathered: the
	// resolution of what is pushed. More than MetricsPushInterval means
	// MetricsPushInterval. Default 30s.
	MetricsSampleInterval time.Duration `yaml:"metrics-sample-interval"`
	// MetricsBufferSize caps, in bytes, the batches kept on disk (under
	// <root-dir>/remote-write) while the endpoint cannot be reached; the
	// oldest go first beyond it. Default 16 MiB.
	MetricsBufferSize int64 `yaml:"metrics-buffer-size"`
}

// StringList is a list of strings that a YAML config file may also give
// as a single string (see setField).
type StringList []string

// headerList is a repeatable string flag. The first use on the command
// line replaces what the config file gave; later uses add to it.
type headerList struct {
	list *[]string
	set  bool
}

func (h *headerList) String() string {
	if h.list == nil {
		return ""
	}
	return strings.Join(*h.list, ", ")
}

// Type names the value in "tug run --help".
func (h *headerList) Type() string { return "strings" }

func (h *headerList) Set(v string) error {
	if !h.set {
		*h.list, h.set = nil, true
	}
	*h.list = append(*h.list, v)
	return nil
}

// SocketPath is the API's unix socket: <run-dir>/tug.sock.
func (c *Config) SocketPath() string { return filepath.Join(c.RunDir, "tug.sock") }

// DefaultPodCIDR is the default --pod-cidr: a private range that Docker
// (172.17.0.0/16), Podman and CNI (10.88.0.0/16), k3s (10.42.0.0/16) and
// flannel (10.244.0.0/16) do not use, big enough for 253 pods.
const DefaultPodCIDR = "10.87.0.0/24"

// Default returns the configuration with every default filled in.
func Default() Config {
	return Config{
		PodManifestPath:       "/etc/tug/manifests",
		FileCheckFrequency:    20 * time.Second,
		HTTPCheckFrequency:    20 * time.Second,
		OCICheckFrequency:     time.Minute,
		SelfUpdateTrial:       2 * time.Minute,
		SyncFrequency:         time.Minute,
		RootDir:               "/var/lib/tug",
		RunDir:                "/run/tug",
		PodLogsDir:            "/var/log/pods",
		ImageDir:              "/var/lib/tug/images",
		RegistryConfigDir:     "/etc/containerd/certs.d",
		ImagePullBandwidth:    "0",
		ContainerdAddress:     "/run/containerd/containerd.sock",
		ContainerdNamespace:   "tug",
		ContainerLogMaxSize:   10 << 20,
		MetricsPushInterval:   5 * time.Minute,
		MetricsSampleInterval: 30 * time.Second,
		MetricsBufferSize:     16 << 20,
		ContainerLogMaxFiles:  5,
		ContainerLogDriver:    "file",
		LogLevel:              "info",
		ManifestURLCAMode:     "append",
		StatusFrequency:       5 * time.Minute,
		StatusCompression:     "gzip",

		PLEGRelistPeriod:        time.Second,
		CrashLoopBackOffInitial: 10 * time.Second,
		CrashLoopBackOffMax:     5 * time.Minute,
		CrashLoopBackOffReset:   10 * time.Minute,
		RolloutMinReady:         30 * time.Second,
		RolloutTimeout:          5 * time.Minute,
		HealthzBindAddress:      "127.0.0.1",
		HealthzPort:             10248,
		RunOnceTimeout:          5 * time.Minute,

		ImagePullProgressDeadline: time.Minute,
		ImagePullOffline:          "use-cached",

		BridgeName:   "tug0",
		PodCIDR:      DefaultPodCIDR,
		ResolvConf:   "/etc/resolv.conf",
		CgroupDriver: "cgroupfs",
		PodMaxPids:   DefaultPodMaxPids,
		MaxPods:      110,

		FilePolicy:         "privileged",
		URLPolicy:          "baseline",
		OCIPolicy:          "baseline",
		FileUserNamespaces: "allowed",
		URLUserNamespaces:  "allowed",
		SubUIDFile:         "/etc/subuid",
		SubGIDFile:         "/etc/subgid",
		LoginDefsFile:      "/etc/login.defs",
		CDISpecDirs:        []string{"/etc/cdi", "/var/run/cdi"},
		DefaultSeccomp:     "runtime-default",

		ImageGCHighThresholdPercent:      85,
		ImageGCLowThresholdPercent:       80,
		MinimumImageTTLDuration:          2 * time.Minute,
		EvictionPressureTransitionPeriod: 5 * time.Minute,
		ShimGrouping:                     "pod",
		PageOutExecutableAfter:           time.Minute,
	}
}

// DefaultPodMaxPids is the default --pod-max-pids: room for any ordinary
// pod (an nginx or a JVM runs well under a thousand threads), and an
// eighth of the 32768 pids of a default kernel.pid_max, so that a few
// pods at their limit still leave the node pids.
const DefaultPodMaxPids = 4096

// BindFlags registers one flag per field on fs, writing into c.
func (c *Config) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.PodManifestPath, "pod-manifest-path", c.PodManifestPath, "directory of pod manifests (*.yaml, *.yml, *.json)")
	fs.StringVar(&c.ManifestURL, "manifest-url", c.ManifestURL, "URL polled for pod manifests")
	fs.Var(&headerList{list: &c.ManifestURLHeader}, "manifest-url-header", "Name:Value header for --manifest-url requests (repeatable)")
	fs.DurationVar(&c.HTTPCheckFrequency, "http-check-frequency", c.HTTPCheckFrequency, "polling period of --manifest-url")
	fs.StringVar(&c.ManifestURLHeaderFile, "manifest-url-header-file", c.ManifestURLHeaderFile, "file of \"Name: Value\" header lines for --manifest-url requests (keep it 0600)")
	fs.StringVar(&c.ManifestURLCA, "manifest-url-ca", c.ManifestURLCA, "PEM file of CA certificates for --manifest-url")
	fs.StringVar(&c.ManifestURLCAMode, "manifest-url-ca-mode", c.ManifestURLCAMode, "append: --manifest-url-ca adds to the system roots; replace: only it is trusted")
	fs.StringVar(&c.ManifestURLClientCert, "manifest-url-client-cert", c.ManifestURLClientCert, "PEM client certificate presented to --manifest-url (mTLS)")
	fs.StringVar(&c.ManifestURLClientKey, "manifest-url-client-key", c.ManifestURLClientKey, "PEM key of --manifest-url-client-cert")
	fs.Var(&headerList{list: (*[]string)(&c.ManifestVerifyKey)}, "manifest-verify-key", "ed25519 public key (PEM file, or a directory of *.pem) whose signed bundle --manifest-url and --manifest-oci must serve (repeatable: any one verifies)")
	fs.Var(&headerList{list: (*[]string)(&c.ManifestOCI)}, "manifest-oci", "reference (host/repository:tag or @digest) of a bundle artifact in an OCI registry, polled for pod manifests (repeatable)")
	fs.DurationVar(&c.OCICheckFrequency, "oci-check-frequency", c.OCICheckFrequency, "polling period of each --manifest-oci")
	fs.StringVar(&c.UpdateWindow, "update-window", c.UpdateWindow, "when a new spec from --manifest-url or --manifest-oci is applied, and a tug release switched to: \"Mon-Fri 02:00-04:00\", \"Sat 22:00-Sun 06:00\" or \"cron:0 2 * * * for 2h\", with optional tz=<zone> jitter=<duration> (\"\" = always)")
	fs.StringVar(&c.DownloadWindow, "download-window", c.DownloadWindow, "when the images of a spec waiting for --update-window are pulled ahead, and a tug release fetched and installed ahead (same syntax; \"\" = always)")
	fs.StringVar(&c.SelfUpdateOCI, "self-update-oci", c.SelfUpdateOCI, "reference (host/repository:tag) of a tug release (tug release push) tug updates itself from, verified with --manifest-verify-key")
	fs.StringVar(&c.SelfUpdateURL, "self-update-url", c.SelfUpdateURL, "URL of this architecture's signed tug binary ({arch} is replaced), instead of --self-update-oci")
	fs.DurationVar(&c.SelfUpdateTrial, "self-update-trial", c.SelfUpdateTrial, "how long a new tug's health gate must hold before it is committed")
	fs.BoolVar(&c.FileSourceWindows, "file-source-windows", c.FileSourceWindows, "hold updates of --pod-manifest-path for the windows too")
	fs.StringVar(&c.StatusURL, "status-url", c.StatusURL, "HTTPS URL the node's status document is POSTed to (docs/status.md)")
	fs.StringVar(&c.StatusURLCA, "status-url-ca", c.StatusURLCA, "PEM file of CA certificates for --status-url, besides the system roots")
	fs.StringVar(&c.StatusURLClientCert, "status-url-client-cert", c.StatusURLClientCert, "PEM client certificate presented to --status-url (mTLS)")
	fs.StringVar(&c.StatusURLClientKey, "status-url-client-key", c.StatusURLClientKey, "PEM key of --status-url-client-cert")
	fs.StringVar(&c.StatusURLHeaderFile, "status-url-header-file", c.StatusURLHeaderFile, "file of \"Name: Value\" header lines for --status-url requests (keep it 0600)")
	fs.DurationVar(&c.StatusFrequency, "status-frequency", c.StatusFrequency, "heartbeat period of the status document when nothing changes (±10% jitter)")
	fs.StringVar(&c.StatusSigningKey, "status-signing-key", c.StatusSigningKey, "ed25519 private key (as tug sign --key reads it) that signs each status document")
	fs.StringVar(&c.StatusCompression, "status-compression", c.StatusCompression, "encoding of each status document on the wire: gzip (uncompressed to a receiver that answers 415) or none")
	fs.DurationVar(&c.FileCheckFrequency, "file-check-frequency", c.FileCheckFrequency, "rescan period of the manifest directory")
	fs.DurationVar(&c.SyncFrequency, "sync-frequency", c.SyncFrequency, "period of the full resync of every pod")
	fs.StringVar(&c.RootDir, "root-dir", c.RootDir, "state directory")
	fs.StringVar(&c.RunDir, "run-dir", c.RunDir, "runtime directory (pinned namespaces)")
	fs.StringVar(&c.PodLogsDir, "pod-logs-dir", c.PodLogsDir, "container log directory")
	fs.StringVar(&c.ImageDir, "image-dir", c.ImageDir, "directory of image archives to import")
	fs.StringVar(&c.RegistryConfigDir, "registry-config-dir", c.RegistryConfigDir, "containerd's certs.d directory of registry hosts (HOST/hosts.toml: mirrors, CAs, client certificates); missing: the defaults")
	fs.StringVar(&c.ImagePullBandwidth, "image-pull-bandwidth", c.ImagePullBandwidth, "cap on the download rate of all image pulls together, bytes per second as a quantity, e.g. 2Mi (0: no cap)")
	fs.StringVar(&c.HostnameOverride, "hostname-override", c.HostnameOverride, "host name used in static pod names")
	fs.StringVar(&c.ContainerdAddress, "containerd-address", c.ContainerdAddress, "containerd socket")
	fs.StringVar(&c.ContainerdNamespace, "containerd-namespace", c.ContainerdNamespace, "containerd namespace")
	fs.BoolVar(&c.AllowPrivileged, "allow-privileged", c.AllowPrivileged, "allow privileged containers")
	fs.Int64Var(&c.ContainerLogMaxSize, "container-log-max-size", c.ContainerLogMaxSize, "rotate a container log at this many bytes")
	fs.IntVar(&c.ContainerLogMaxFiles, "container-log-max-files", c.ContainerLogMaxFiles, "log files kept per container attempt, the current one included")
	fs.StringVar(&c.ContainerLogDriver, "container-log-driver", c.ContainerLogDriver, "how container output reaches its log: file (converted by tug), binary (a logger process per container), journald (journal entries, no log file) or file+journald (both)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error")
	fs.DurationVar(&c.PLEGRelistPeriod, "pleg-relist-period", c.PLEGRelistPeriod, "period of the container relist (containerd events make it come sooner)")
	fs.DurationVar(&c.RolloutMinReady, "rollout-min-ready", c.RolloutMinReady, "how long a pod must be Ready with no restart for its spec to become its last good spec")
	fs.DurationVar(&c.RolloutTimeout, "rollout-timeout", c.RolloutTimeout, "how long an updated pod may take to become Ready before it is rolled back to its last good spec (0: no rollback)")
	fs.DurationVar(&c.CrashLoopBackOffInitial, "crash-loop-back-off-initial", c.CrashLoopBackOffInitial, "first restart delay of a crashing container (it doubles)")
	fs.DurationVar(&c.CrashLoopBackOffMax, "crash-loop-back-off-max", c.CrashLoopBackOffMax, "maximum restart delay of a crashing container")
	fs.DurationVar(&c.CrashLoopBackOffReset, "crash-loop-back-off-reset", c.CrashLoopBackOffReset, "a container that ran this long restarts at once again")
	fs.StringVar(&c.HealthzBindAddress, "healthz-bind-address", c.HealthzBindAddress, "loopback address of /healthz, /readyz, /metrics")
	fs.IntVar(&c.HealthzPort, "healthz-port", c.HealthzPort, "TCP port of /healthz, /readyz, /metrics (0: off)")
	fs.BoolVar(&c.RunOnce, "runonce", c.RunOnce, "start the pods, wait until each runs or failed, print their status and exit")
	fs.DurationVar(&c.RunOnceTimeout, "runonce-timeout", c.RunOnceTimeout, "how long --runonce waits")
	fs.DurationVar(&c.ImagePullProgressDeadline, "image-pull-progress-deadline", c.ImagePullProgressDeadline, "cut an image pull that fetches no new byte for this long")
	fs.DurationVar(&c.ImagePullTimeout, "image-pull-timeout", c.ImagePullTimeout, "cut an image pull that runs this long, progress or not (0: no bound)")
	fs.StringVar(&c.ImagePullOffline, "image-pull-offline", c.ImagePullOffline, "what an imagePullPolicy Always pull does when no registry host can be reached: use-cached (run the image present, with a warning and the tug.io/ImageFromCache condition) or fail (ErrImagePull, as the kubelet)")
	fs.StringVar(&c.BridgeName, "bridge-name", c.BridgeName, "Linux bridge the pods are connected to")
	fs.StringVar(&c.PodCIDR, "pod-cidr", c.PodCIDR, "IPv4 range of pod addresses (the bridge holds the first)")
	fs.StringVar(&c.NodeIP, "node-ip", c.NodeIP, "node address reported as hostIP (default: source address of the default route)")
	fs.StringVar(&c.ResolvConf, "resolv-conf", c.ResolvConf, "file pods' resolv.conf starts from (\"\": none)")
	fs.StringVar(&c.CgroupRoot, "cgroup-root", c.CgroupRoot, "cgroup every pod goes below (default tugpods, or tugpods-<containerd-namespace> for a namespace other than tug)")
	fs.StringVar(&c.CgroupDriver, "cgroup-driver", c.CgroupDriver, "cgroup driver (cgroupfs)")
	fs.StringVar(&c.Reserved, "reserved", c.Reserved, "resources kept from the pods, e.g. cpu=500m,memory=256Mi")
	fs.BoolVar(&c.MemoryQoS, "memory-qos", c.MemoryQoS, "set memory.min and memory.high like the kubelet's MemoryQoS (cgroup v2)")
	fs.Int64Var(&c.PodMaxPids, "pod-max-pids", c.PodMaxPids, "maximum processes per pod, the pod cgroup's pids.max (-1: no limit)")
	fs.Int64Var(&c.PodMaxPids, "pod-pids-limit", c.PodMaxPids, "older name of --pod-max-pids")
	fs.IntVar(&c.MaxPods, "max-pods", c.MaxPods, "maximum pods run at once; others wait (0: no limit)")
	fs.StringVar(&c.NodeLabels, "node-labels", c.NodeLabels, "node labels key=value,... that pods' nodeSelector and node affinity are checked against (besides kubernetes.io/hostname, os and arch)")
	fs.StringVar(&c.RegisterWithTaints, "register-with-taints", c.RegisterWithTaints, "node taints key=value:Effect,... that pods must tolerate")
	fs.StringArrayVar(&c.DeviceResource, "device-resource", c.DeviceResource, "declare a device resource NAME=GLOB[:ACCESS] (host device nodes, access rw by default) or NAME=cdi:VENDOR/CLASS (repeatable)")
	fs.StringSliceVar(&c.CDISpecDirs, "cdi-spec-dirs", c.CDISpecDirs, "directories of CDI specs, watched for changes")
	fs.StringSliceVar(&c.URLAllowedDevices, "url-allowed-devices", c.URLAllowedDevices, "extended resources and CDI kinds (vendor.com/class) --manifest-url's and --manifest-oci's pods may use (default none)")
	fs.StringVar(&c.FilePolicy, "file-policy", c.FilePolicy, "Pod Security Standards level of the manifest directory's pods: privileged, baseline or restricted")
	fs.StringVar(&c.URLPolicy, "url-policy", c.URLPolicy, "Pod Security Standards level of --manifest-url's pods: privileged, baseline or restricted")
	fs.StringVar(&c.OCIPolicy, "oci-policy", c.OCIPolicy, "Pod Security Standards level of --manifest-oci's pods: privileged, baseline or restricted")
	fs.StringVar(&c.FileUserNamespaces, "file-user-namespaces", c.FileUserNamespaces, "whether the manifest directory's pods must run in a user namespace of their own (hostUsers: false): allowed or required")
	fs.StringVar(&c.URLUserNamespaces, "url-user-namespaces", c.URLUserNamespaces, "whether --manifest-url's and --manifest-oci's pods must run in a user namespace of their own (hostUsers: false): allowed or required")
	fs.StringVar(&c.UserNamespaceRange, "user-namespace-range", c.UserNamespaceRange, "host IDs given to pods with hostUsers: false, FIRST/LENGTH (multiples of 65536), 65536 per pod (default: user tug's entry of --subuid-file and --subgid-file, else 1879048192/268304384)")
	fs.StringVar(&c.SubUIDFile, "subuid-file", c.SubUIDFile, "the host's subordinate user IDs: the user namespace range must overlap no other user's entry")
	fs.StringVar(&c.SubGIDFile, "subgid-file", c.SubGIDFile, "the host's subordinate group IDs: the user namespace range must overlap no other user's entry")
	fs.StringVar(&c.LoginDefsFile, "login-defs-file", c.LoginDefsFile, "the host's login.defs: the user namespace range must overlap neither SUB_UID_MIN..SUB_UID_MAX nor SUB_GID_MIN..SUB_GID_MAX")
	fs.BoolVar(&c.AllowHostStateMounts, "allow-host-state-mounts", c.AllowHostStateMounts, "allow hostPaths that expose tug's dirs, containerd's socket or /")
	fs.StringVar(&c.SeccompProfileRoot, "seccomp-profile-root", c.SeccompProfileRoot, "directory of Localhost seccomp profiles (default <root-dir>/seccomp)")
	fs.StringVar(&c.DefaultSeccomp, "default-seccomp", c.DefaultSeccomp, "seccomp profile of containers that name none: runtime-default or unconfined")
	fs.IntVar(&c.ImageGCHighThresholdPercent, "image-gc-high-threshold", c.ImageGCHighThresholdPercent, "image filesystem usage percent at which unused images are removed (100: never)")
	fs.IntVar(&c.ImageGCLowThresholdPercent, "image-gc-low-threshold", c.ImageGCLowThresholdPercent, "image filesystem usage percent the image GC frees down to")
	fs.DurationVar(&c.MinimumImageTTLDuration, "minimum-image-ttl-duration", c.MinimumImageTTLDuration, "minimum age of an unused image before it is removed")
	fs.StringVar(&c.EvictionHard, "eviction-hard", c.EvictionHard, "hard eviction thresholds, e.g. memory.available<100Mi,nodefs.available<10% (default: the kubelet's, memory.available 10% of the node's memory within 48Mi-100Mi, and pid.available<10%; none: none)")
	fs.StringVar(&c.EvictionSoft, "eviction-soft", c.EvictionSoft, "soft eviction thresholds, same syntax as --eviction-hard")
	fs.StringVar(&c.EvictionSoftGracePeriod, "eviction-soft-grace-period", c.EvictionSoftGracePeriod, "grace period of each soft threshold, e.g. memory.available=1m30s")
	fs.DurationVar(&c.EvictionPressureTransitionPeriod, "eviction-pressure-transition-period", c.EvictionPressureTransitionPeriod, "how long a node pressure condition stays after its threshold was last met")
	fs.IntVar(&c.EvictionMaxPodGracePeriod, "eviction-max-pod-grace-period", c.EvictionMaxPodGracePeriod, "maximum grace period (seconds) of a pod evicted for a soft threshold (0: the pod's own)")
	fs.StringVar(&c.ShimGrouping, "shim-grouping", c.ShimGrouping, "containers that share one containerd shim: pod or node")
	fs.StringArrayVar(&c.RuntimeClass, "runtime-class", c.RuntimeClass, "declare a runtime class NAME=RUNTIME_TYPE[:BINARY], e.g. nvidia=io.containerd.runc.v2:/usr/bin/nvidia-container-runtime (repeatable)")
	fs.DurationVar(&c.PageOutExecutableAfter, "page-out-executable-after", c.PageOutExecutableAfter, "how long after start tug gives back the pages of its own binary that start-up mapped (0: never)")
	fs.StringVar(&c.MetricsRemoteWriteURL, "metrics-remote-write-url", c.MetricsRemoteWriteURL, "Prometheus remote-write endpoint (http or https) the metrics are pushed to")
	fs.StringVar(&c.MetricsRemoteWriteHeaderFile, "metrics-remote-write-header-file", c.MetricsRemoteWriteHeaderFile, "file of \"Name: Value\" header lines for remote-write requests (keep it 0600)")
	fs.DurationVar(&c.MetricsPushInterval, "metrics-push-interval", c.MetricsPushInterval, "how often the metrics are pushed to --metrics-remote-write-url, one request holding the gatherings since the last")
	fs.DurationVar(&c.MetricsSampleInterval, "metrics-sample-interval", c.MetricsSampleInterval, "how often the metrics are gathered for --metrics-remote-write-url (at most --metrics-push-interval)")
	fs.Int64Var(&c.MetricsBufferSize, "metrics-buffer-size", c.MetricsBufferSize, "bytes of unsent metrics kept on disk while the remote-write endpoint is unreachable (the oldest go first)")
}

// Validate checks the configuration and returns every problem at once.
func (c *Config) Validate() error {
	var errs []error
	for name, p := range map[string]string{
		"pod-manifest-path": c.PodManifestPath, "root-dir": c.RootDir, "run-dir": c.RunDir,
		"pod-logs-dir": c.PodLogsDir, "image-dir": c.ImageDir, "containerd-address": c.ContainerdAddress,
	} {
		if !filepath.IsAbs(p) {
			errs = append(errs, fmt.Errorf("%s: %q must be an absolute path", name, p))
		}
	}
	if c.RegistryConfigDir != "" && !filepath.IsAbs(c.RegistryConfigDir) {
		errs = append(errs, fmt.Errorf("registry-config-dir: %q must be an absolute path", c.RegistryConfigDir))
	}
	if _, err := parseBandwidth(c.ImagePullBandwidth); err != nil {
		errs = append(errs, err)
	}
	if c.ManifestURL != "" {
		if u, err := url.Parse(c.ManifestURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("manifest-url: %q is not an http or https URL", redact.URL(c.ManifestURL)))
		}
	}
	for i, h := range c.ManifestURLHeader {
		if name, _, ok := strings.Cut(h, ":"); !ok || strings.TrimSpace(name) == "" {
			// Not echoed: it may be a secret pasted without its name.
			errs = append(errs, fmt.Errorf("manifest-url-header: entry %d is not Name:Value", i+1))
		}
	}
	switch c.ManifestURLCAMode {
	case "append":
	case "replace":
		if c.ManifestURLCA == "" {
			errs = append(errs, fmt.Errorf("manifest-url-ca-mode: replace needs manifest-url-ca"))
		}
	default:
		errs = append(errs, fmt.Errorf("manifest-url-ca-mode: %q is not append or replace", c.ManifestURLCAMode))
	}
	if (c.ManifestURLClientCert == "") != (c.ManifestURLClientKey == "") {
		errs = append(errs, fmt.Errorf("manifest-url-client-cert, manifest-url-client-key: give both or neither"))
	}
	if c.StatusURL != "" {
		if err := checkStatusURL(c.StatusURL); err != nil {
			errs = append(errs, err)
		}
	}
	if (c.StatusURLClientCert == "") != (c.StatusURLClientKey == "") {
		errs = append(errs, fmt.Errorf("status-url-client-cert, status-url-client-key: give both or neither"))
	}
	if c.StatusFrequency <= 0 {
		errs = append(errs, fmt.Errorf("status-frequency: must be positive"))
	}
	if c.StatusCompression != "gzip" && c.StatusCompression != "none" {
		errs = append(errs, fmt.Errorf("status-compression: %q is not gzip or none", c.StatusCompression))
	}
	if c.HTTPCheckFrequency <= 0 {
		errs = append(errs, fmt.Errorf("http-check-frequency: must be positive"))
	}
	if c.OCICheckFrequency <= 0 {
		errs = append(errs, fmt.Errorf("oci-check-frequency: must be positive"))
	}
	if _, err := window.Parse(c.UpdateWindow); err != nil {
		errs = append(errs, fmt.Errorf("update-window: %w", err))
	}
	if _, err := window.Parse(c.DownloadWindow); err != nil {
		errs = append(errs, fmt.Errorf("download-window: %w", err))
	}
	if c.SelfUpdateOCI != "" || c.SelfUpdateURL != "" {
		switch {
		case c.SelfUpdateOCI != "" && c.SelfUpdateURL != "":
			errs = append(errs, fmt.Errorf("self-update-oci and self-update-url: give one"))
		case len(c.ManifestVerifyKey) == 0:
			errs = append(errs, fmt.Errorf("self-update-oci, self-update-url: need manifest-verify-key (a release is always verified)"))
		}
		if c.SelfUpdateOCI != "" {
			if err := checkOCIRef(c.SelfUpdateOCI); err != nil {
				errs = append(errs, fmt.Errorf("self-update-oci: %w", err))
			}
		}
		if u, err := url.Parse(c.SelfUpdateURL); c.SelfUpdateURL != "" && (err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "") {
			errs = append(errs, fmt.Errorf("self-update-url: %q is not an http(s) URL", c.SelfUpdateURL))
		}
	}
	if c.SelfUpdateTrial <= 0 {
		errs = append(errs, fmt.Errorf("self-update-trial: must be positive"))
	}
	seenOCI := map[string]bool{}
	for _, ref := range c.ManifestOCI {
		if err := checkOCIRef(ref); err != nil {
			errs = append(errs, err)
		} else if seenOCI[ref] {
			errs = append(errs, fmt.Errorf("manifest-oci: %q given twice", ref))
		}
		seenOCI[ref] = true
	}
	if c.FileCheckFrequency <= 0 {
		errs = append(errs, fmt.Errorf("file-check-frequency: must be positive"))
	}
	if c.SyncFrequency <= 0 {
		errs = append(errs, fmt.Errorf("sync-frequency: must be positive"))
	}
	if c.ContainerdNamespace == "" {
		errs = append(errs, fmt.Errorf("containerd-namespace: required"))
	}
	if c.ContainerLogMaxSize < 1024 {
		errs = append(errs, fmt.Errorf("container-log-max-size: at least 1024 bytes"))
	}
	if c.MaxPods < 0 {
		errs = append(errs, fmt.Errorf("max-pods: must not be negative"))
	}
	switch c.ContainerLogDriver {
	case "file", "binary", "journald", "file+journald":
	default:
		errs = append(errs, fmt.Errorf("container-log-driver: %q is not file, binary, journald or file+journald", c.ContainerLogDriver))
	}
	if c.ContainerLogMaxFiles < 1 {
		errs = append(errs, fmt.Errorf("container-log-max-files: at least 1"))
	}
	for name, d := range map[string]time.Duration{
		"pleg-relist-period": c.PLEGRelistPeriod, "crash-loop-back-off-initial": c.CrashLoopBackOffInitial,
		"crash-loop-back-off-max": c.CrashLoopBackOffMax, "crash-loop-back-off-reset": c.CrashLoopBackOffReset,
		"runonce-timeout": c.RunOnceTimeout, "image-pull-progress-deadline": c.ImagePullProgressDeadline,
	} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s: must be positive", name))
		}
	}
	if c.PageOutExecutableAfter < 0 {
		errs = append(errs, fmt.Errorf("page-out-executable-after: must not be negative (0: never)"))
	}
	if c.ImagePullTimeout < 0 {
		errs = append(errs, fmt.Errorf("image-pull-timeout: must not be negative (0: no bound)"))
	}
	switch c.ImagePullOffline {
	case "use-cached", "fail":
	default:
		errs = append(errs, fmt.Errorf("image-pull-offline: %q is not use-cached or fail", c.ImagePullOffline))
	}
	if c.RolloutMinReady < 0 {
		errs = append(errs, fmt.Errorf("rollout-min-ready: must not be negative"))
	}
	if c.RolloutTimeout < 0 {
		errs = append(errs, fmt.Errorf("rollout-timeout: must not be negative (0 turns rollback off)"))
	}
	if c.CrashLoopBackOffMax < c.CrashLoopBackOffInitial {
		errs = append(errs, fmt.Errorf("crash-loop-back-off-max: below crash-loop-back-off-initial"))
	}
	if c.HealthzPort < 0 || c.HealthzPort > 65535 {
		errs = append(errs, fmt.Errorf("healthz-port: %d is not a port", c.HealthzPort))
	}
	if ip := net.ParseIP(c.HealthzBindAddress); ip == nil || !ip.IsLoopback() {
		errs = append(errs, fmt.Errorf("healthz-bind-address: %q is not a loopback address (tug has no authentication yet)", c.HealthzBindAddress))
	}
	if len(c.BridgeName) == 0 || len(c.BridgeName) > 15 || strings.ContainsAny(c.BridgeName, "/ \t") {
		errs = append(errs, fmt.Errorf("bridge-name: %q is not a network interface name (1-15 characters)", c.BridgeName))
	}
	if _, err := parsePodCIDR(c.PodCIDR); err != nil {
		errs = append(errs, err)
	}
	if _, err := netip.ParseAddr(c.NodeIP); c.NodeIP != "" && err != nil {
		errs = append(errs, fmt.Errorf("node-ip: %q is not an IP address", c.NodeIP))
	}
	if _, err := parseReserved(c.Reserved); err != nil {
		errs = append(errs, err)
	}
	if c.ResolvConf != "" && !filepath.IsAbs(c.ResolvConf) {
		errs = append(errs, fmt.Errorf("resolv-conf: %q must be an absolute path", c.ResolvConf))
	}
	if root := c.cgroupRoot(); strings.Contains(root, "..") {
		errs = append(errs, fmt.Errorf("cgroup-root: %q is not a cgroup name", root))
	}
	if c.CgroupDriver != "cgroupfs" {
		errs = append(errs, fmt.Errorf("cgroup-driver: %q is not supported (only cgroupfs)", c.CgroupDriver))
	}
	if c.PodMaxPids < -1 || c.PodMaxPids == 0 {
		errs = append(errs, fmt.Errorf("pod-max-pids: %d must be positive, or -1 for no limit", c.PodMaxPids))
	}
	for name, level := range map[string]string{"file-policy": c.FilePolicy, "url-policy": c.URLPolicy, "oci-policy": c.OCIPolicy} {
		switch level {
		case "privileged", "baseline", "restricted":
		default:
			errs = append(errs, fmt.Errorf("%s: %q is not privileged, baseline or restricted", name, level))
		}
	}
	for name, v := range map[string]string{"file-user-namespaces": c.FileUserNamespaces, "url-user-namespaces": c.URLUserNamespaces} {
		if v != "allowed" && v != "required" {
			errs = append(errs, fmt.Errorf("%s: %q is not allowed or required", name, v))
		}
	}
	if err := validUserNamespaceRange(c.UserNamespaceRange); err != nil {
		errs = append(errs, fmt.Errorf("user-namespace-range: %w", err))
	}
	for name, path := range map[string]string{"subuid-file": c.SubUIDFile, "subgid-file": c.SubGIDFile, "login-defs-file": c.LoginDefsFile} {
		if !filepath.IsAbs(path) {
			errs = append(errs, fmt.Errorf("%s: %q must be an absolute path", name, path))
		}
	}
	if c.SeccompProfileRoot != "" && !filepath.IsAbs(c.SeccompProfileRoot) {
		errs = append(errs, fmt.Errorf("seccomp-profile-root: %q must be an absolute path", c.SeccompProfileRoot))
	}
	if c.DefaultSeccomp != "runtime-default" && c.DefaultSeccomp != "unconfined" {
		errs = append(errs, fmt.Errorf("default-seccomp: %q is not runtime-default or unconfined", c.DefaultSeccomp))
	}
	if c.ShimGrouping != "pod" && c.ShimGrouping != "node" {
		errs = append(errs, fmt.Errorf("shim-grouping: %q is not pod or node", c.ShimGrouping))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log-level: %q is not debug, info, warn or error", c.LogLevel))
	}
	if c.ImageGCHighThresholdPercent < 1 || c.ImageGCHighThresholdPercent > 100 || c.ImageGCLowThresholdPercent < 1 || c.ImageGCLowThresholdPercent > c.ImageGCHighThresholdPercent {
		errs = append(errs, fmt.Errorf("image-gc-high-threshold %d, image-gc-low-threshold %d: want 1 <= low <= high <= 100", c.ImageGCHighThresholdPercent, c.ImageGCLowThresholdPercent))
	}
	if c.MetricsRemoteWriteURL != "" {
		if u, err := url.Parse(c.MetricsRemoteWriteURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("metrics-remote-write-url: %q is not an http or https URL", redact.URL(c.MetricsRemoteWriteURL)))
		}
	}
	if c.MetricsPushInterval < time.Second {
		errs = append(errs, fmt.Errorf("metrics-push-interval: at least 1s"))
	}
	if c.MetricsSampleInterval < time.Second {
		errs = append(errs, fmt.Errorf("metrics-sample-interval: at least 1s"))
	}
	if c.MetricsBufferSize < 64<<10 {
		errs = append(errs, fmt.Errorf("metrics-buffer-size: at least 65536 bytes"))
	}
	if c.MinimumImageTTLDuration < 0 || c.EvictionPressureTransitionPeriod < 0 || c.EvictionMaxPodGracePeriod < 0 {
		errs = append(errs, errors.New("minimum-image-ttl-duration, eviction-pressure-transition-period and eviction-max-pod-grace-period may not be negative"))
	}
	return errors.Join(errs...)
}

// Redacted returns a copy of c that may be logged: the manifest and
// remote-write URLs' user information and query values and the headers' values are replaced
// by "xxxxx".
func (c Config) Redacted() Config {
	c.ManifestURL = redact.URL(c.ManifestURL)
	c.MetricsRemoteWriteURL = redact.URL(c.MetricsRemoteWriteURL)
	hdrs := make([]string, len(c.ManifestURLHeader))
	for i, h := range c.ManifestURLHeader {
		name, _, _ := strings.Cut(h, ":")
		hdrs[i] = name + ": " + redact.Mask
	}
	c.ManifestURLHeader = hdrs
	c.StatusURL = redact.URL(c.StatusURL)
	return c
}

// checkStatusURL accepts an https URL, or an http one to a loopback host
// (a relay on the device itself): the status document crosses networks,
// and unlike a signed bundle nothing else protects what it reveals.
func checkStatusURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("status-url: %q is not an https URL", redact.URL(raw))
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if ip := net.ParseIP(u.Hostname()); u.Hostname() == "localhost" || (ip != nil && ip.IsLoopback()) {
			return nil
		}
		return fmt.Errorf("status-url: %q: http only to a loopback host; use https", redact.URL(raw))
	}
	return fmt.Errorf("status-url: %q is not an https URL", redact.URL(raw))
}

// DefaultCgroupRoot is the cgroup root of the instance whose containerd
// namespace is ns when --cgroup-root is not given.
func DefaultCgroupRoot(ns string) string {
	if ns == "tug" {
		return "tugpods"
	}
	return "tugpods-" + ns
}

// cgroupRoot is CgroupRoot, or its default for the instance when unset.
func (c Config) cgroupRoot() string {
	if c.CgroupRoot == "" {
		return DefaultCgroupRoot(c.ContainerdNamespace)
	}
	return c.CgroupRoot
}

// testFaultFlag is the hidden test-only flag of Config.TestFaultWedgeSyncLoop.
const testFaultFlag = "test-fault-wedge-sync-loop"

// Parse builds the configuration from the command line of "tug run":
// defaults, then the --config file if one is named, then the flags given.
func Parse(name string, args []string) (Config, error) {
	var file string
	first := pflag.NewFlagSet(name, pflag.ContinueOnError)
	first.SetOutput(io.Discard)
	first.StringVar(&file, "config", "", "")
	probe := Default()
	probe.BindFlags(first)
	first.Duration(testFaultFlag, 0, "")
	if err := first.Parse(args); err != nil {
		return Config{}, err // pflag.ErrHelp after -h: the caller prints PrintFlags
	}
	c := Default()
	if file != "" {
		if err := c.Load(file); err != nil {
			return Config{}, err
		}
	}
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.String("config", file, "YAML config file whose keys mirror the flags")
	c.BindFlags(fs)
	fs.DurationVar(&c.TestFaultWedgeSyncLoop, testFaultFlag, 0, "") // hidden: not in BindFlags, so not in help
	fs.Lookup(testFaultFlag).Hidden = true
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	c.CgroupRoot = c.cgroupRoot()
	return c, c.Validate()
}

// PrintFlags writes the flags of "tug run", --config included, with their
// defaults and help texts.
func PrintFlags(w io.Writer) {
	fs := pflag.NewFlagSet("tug run", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.String("config", "", "YAML config file whose keys mirror the flags")
	c := Default()
	c.BindFlags(fs)
	fmt.Fprint(w, "Flags:\n"+fs.FlagUsages())
}

// checkOCIRef checks the shape of a --manifest-oci reference: a registry
// host, a repository and a tag or digest, no scheme (the source parses it
// fully).
func checkOCIRef(ref string) error {
	host, rest, ok := strings.Cut(ref, "/")
	last := rest[strings.LastIndex(rest, "/")+1:]
	if !ok || host == "" || rest == "" || strings.Contains(ref, "://") || strings.ContainsAny(ref, " \t\n") ||
		(!strings.Contains(last, ":") && !strings.Contains(rest, "@")) {
		return fmt.Errorf("manifest-oci: %q is not host/repository:tag or host/repository@digest", ref)
	}
	return nil
}
