package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"

	"k8s.io/klog/v2"
)

// memoryLimitEnv holds the container's memory limit in bytes: the shipped Deployments set it from
// the downward API (resourceFieldRef limits.memory).
const memoryLimitEnv = "METACEL_MEMORY_LIMIT"

// goMemoryLimit returns the soft memory limit for the Go runtime read from getenv: 90 % of
// METACEL_MEMORY_LIMIT, leaving the rest for what the container's limit counts and the Go
// runtime does not (the binary, page cache, the collector's overshoot). It returns 0, leave the
// limit alone, when METACEL_MEMORY_LIMIT is unset or GOMEMLIMIT is set: the runtime has applied
// GOMEMLIMIT already, and a user's choice wins. Anything but a positive integer is an error.
func goMemoryLimit(getenv func(string) string) (int64, error) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, nil
	}
	v := getenv(memoryLimitEnv)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s=%q: want the container's memory limit as a positive number of bytes (or set GOMEMLIMIT to choose Go's memory limit yourself)", memoryLimitEnv, v)
	}
	return n - n/10, nil
}

// setGoMemoryLimit sets the Go runtime's soft memory limit from the environment (see
// goMemoryLimit) and logs it.
func setGoMemoryLimit(ctx context.Context, getenv func(string) string) error {
	limit, err := goMemoryLimit(getenv)
	if err != nil {
		return err
	}
	logger := klog.FromContext(ctx)
	switch {
	case limit > 0:
		debug.SetMemoryLimit(limit)
		logger.Info("Set the Go memory limit", "memoryLimit", limit, "containerMemoryLimit", getenv(memoryLimitEnv))
	case getenv("GOMEMLIMIT") != "":
		logger.Info("Go memory limit from GOMEMLIMIT", "memoryLimit", debug.SetMemoryLimit(-1), "gomemlimit", getenv("GOMEMLIMIT"))
	default:
		logger.V(1).Info("No Go memory limit: neither GOMEMLIMIT nor " + memoryLimitEnv + " is set")
	}
	return nil
}
