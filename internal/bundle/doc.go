// Package bundle owns the format of tug's signed bundles, which the URL
// and OCI sources check, "tug sign", "tug verify" and "tug bundle" write
// and read, and the status reporter seals its documents in:
//
//   - the envelope (envelope.go): magic, signed JSON header (version,
//     expiry, node selector, the body's sha256, windows, the rollout plan
//     and halt of package wave), ed25519 signature, body;
//   - the keys (keys.go): ed25519 public and private keys in PEM or raw
//     base64, and the verify keys of a configuration (LoadPublicKeys);
//   - the check of a served body (open.go, Open), one function for every
//     reader so that they agree;
//   - the OCI artifact that carries a bundle in a registry (artifact.go):
//     its layout, and fetching and pushing it with digest and size checks
//     through a containerd resolver its caller gives it.
//
// It imports window and wave, containerd's core/remotes, errdefs, the OCI image-spec
// and go-digest types, and the standard library.
package bundle
