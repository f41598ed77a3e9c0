//go:build e2e

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// buildControllerRuntime builds the controller-runtime baseline of job j (its own Go module,
// test/bench/frameworks, so that the main module needs no controller-runtime) unless built.
func (b *bench) buildControllerRuntime(ctx context.Context, j *job) error {
	if b.o.controllerRuntimeBins == nil {
		b.o.controllerRuntimeBins = map[string]string{}
	}
	if b.o.controllerRuntimeBins[j.name] != "" {
		return nil
	}
	bin := filepath.Join(b.binDir, "controller-runtime-"+j.name)
	args := []string{"build", "-trimpath", "-o", bin, "./" + j.name + "/cmd"}
	logf("in test/bench/frameworks: go %s", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = filepath.Join(b.repo, "test", "bench", "frameworks")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build the controller-runtime %s: %w\n%s", j.name, err, out)
	}
	b.o.controllerRuntimeBins[j.name] = bin
	return nil
}

// ensurePythonKubernetes makes sure Debian's Python has Debian's python3-kubernetes, which the
// Kopf-style baseline imports: installed with apt-get when missing and run as root, else an error
// that says how.
func ensurePythonKubernetes(ctx context.Context) error {
	if pythonHasKubernetes(ctx) {
		return nil
	}
	const install = "apt-get install -y python3-kubernetes"
	if os.Geteuid() != 0 {
		return fmt.Errorf("%s cannot import kubernetes: run `sudo %s` (Debian's package; no Python package index is needed)", pythonBin, install)
	}
	logf("%s", install)
	cmd := exec.CommandContext(ctx, "apt-get", "install", "-y", "python3-kubernetes")
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w\n%s", install, err, out)
	}
	if !pythonHasKubernetes(ctx) {
		return fmt.Errorf("%s cannot import kubernetes after %s", pythonBin, install)
	}
	return nil
}

// pythonHasKubernetes says whether Debian's Python imports kubernetes.
func pythonHasKubernetes(ctx context.Context) bool {
	return exec.CommandContext(ctx, pythonBin, "-c", "import kubernetes").Run() == nil
}
