// Package testutil holds helpers for tug's tests: prerequisites that skip or
// fail with a reason (RequireRoot, RequireContainerd, RequireCommand,
// TestImage, RegistryImage), a per-test containerd namespace whose leaks fail
// the test (Namespace; RemoveContainers and RemoveImages for the test's own
// clean-up, Leftovers to look), a
// logger that writes through t.Log (Logger), code run inside a network
// namespace (InNetns), a TestMain body that builds a program of the
// repository (RunWithBinary) and a certificate authority for TLS tests (CA).
//
// It is test code only. It imports "testing", so it must never be imported by
// non-test code: doing so would register the test flags in the tug binary.
// Besides the standard library it imports only containerd's client (and
// the client's API packages).
//
// The end-to-end prerequisites come from the test environment that
// scripts/testenv.sh starts and describes in its env file
// (eval "$(scripts/testenv.sh env)"):
//
//	TUG_TEST_CONTAINERD      address (socket path) of the private containerd
//	TUG_TEST_IMAGE           docker.io/library/busybox:1.35
//	TUG_TEST_IMAGE_ARCHIVE   OCI archive of TUG_TEST_IMAGE, for import or sideloading
//	TUG_TEST_REGISTRY        127.0.0.1:PORT, a plain-HTTP registry
//	TUG_TEST_REGISTRY_IMAGE  TUG_TEST_IMAGE pushed to that registry
//
// One more, set by hand or by `make test-v2`, never by testenv.sh:
//
//	TUG_TEST_BINARY          a prebuilt tug (./agent): RunWithBinary uses it
//	                         instead of running go build, e.g. in the cgroup v2
//	                         QEMU guest (scripts/v2guest.sh), where compiling
//	                         under software emulation would be slow
//
// When a prerequisite is missing, the Require helpers skip the test with the
// reason, except when the environment variable CI is true: then they fail it,
// because a skipped end-to-end test in CI is an untested capability reported
// as green.
package testutil
