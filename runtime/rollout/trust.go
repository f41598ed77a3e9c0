package rollout

import (
	"errors"
	"fmt"
	"slices"

	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/policystatus"
)

// ErrUntrusted is why a record's stable source must not run: it names a version the runtime
// never loaded from the policy's ConfigMap, or its source is not the version it names.
var ErrUntrusted = errors.New("rollout record not trusted")

// MaxLoadedVersions is how many versions of a policy the loaded list keeps, the ones in use aside.
const MaxLoadedVersions = 8

// Trust decides whether the stable version a record keeps may run. loaded are the versions of
// the policy the runtime loaded from its labelled ConfigMap; source compiles the record's source.
// The record is trusted when its stable version, and its target if any, are among loaded, and its
// source is the stable version it names (IsVersionOf); source is called only once the versions
// are known, so an untrusted source is never compiled. Its error (the source no longer compiles)
// is returned as it is; every other refusal wraps ErrUntrusted.
func Trust(rec Record, loaded []string, source func() (*policy.Compiled, error)) error {
	if !slices.Contains(loaded, rec.Stable) {
		return fmt.Errorf("%w: its stable version %q was never loaded from the policy's ConfigMap", ErrUntrusted, policystatus.ShortVersion(rec.Stable))
	}
	if rec.Target != "" && !slices.Contains(loaded, rec.Target) {
		return fmt.Errorf("%w: its target version %q was never loaded from the policy's ConfigMap", ErrUntrusted, policystatus.ShortVersion(rec.Target))
	}
	got, err := source()
	if err != nil {
		return err
	}
	if !IsVersionOf(rec.Stable, got) {
		return fmt.Errorf("%w: its stored source is version %q, not the stable version %q it names", ErrUntrusted, policystatus.ShortVersion(Version(got)), policystatus.ShortVersion(rec.Stable))
	}
	return nil
}

// Remember adds version to a policy's loaded versions (oldest first) unless it is there, and
// drops the oldest beyond MaxLoadedVersions, never one of keep (the versions in use).
func Remember(loaded []string, version string, keep ...string) []string {
	if slices.Contains(loaded, version) {
		return loaded
	}
	out := append(slices.Clone(loaded), version)
	for i := 0; len(out) > MaxLoadedVersions && i < len(out); {
		if out[i] == version || slices.Contains(keep, out[i]) {
			i++
			continue
		}
		out = slices.Delete(out, i, i+1)
	}
	return out
}
