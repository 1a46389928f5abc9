package kit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// BuildRev builds ./agent of commit rev of the repository the benchmark
// runs in (git archive, no work tree of the repository touched) into
// dir/tug-base: the second tug of a same-run comparison.
func BuildRev(ctx context.Context, rev, dir string) (string, error) {
	src := filepath.Join(dir, "base-src")
	if err := os.MkdirAll(src, 0o700); err != nil {
		return "", err
	}
	sh := fmt.Sprintf("git archive --format=tar %q | tar -x -C %q", rev, src)
	if out, err := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", sh).CombinedOutput(); err != nil {
		return "", fmt.Errorf("git archive %s: %w\n%s", rev, err, out)
	}
	bin := filepath.Join(dir, "tug-base")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-tags", "grpcnotrace", "-o", bin, "./agent")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %w\n%s", rev, err, out)
	}
	return bin, nil
}
