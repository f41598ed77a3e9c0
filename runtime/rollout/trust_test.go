package rollout

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"metacel.dev/metacel/runtime/policy"
)

func TestTrust(t *testing.T) {
	compiles := errors.New("no longer compiles")
	stable, target, forged := compiledNamed("stable", nil), compiledNamed("target", nil), compiledNamed("forged", nil)
	s, tv, f := Version(stable), Version(target), Version(forged)
	annotated := compiledNamed("stable", map[string]string{"team": "payments"})
	earlier := legacyVersion(annotated)
	for _, tt := range []struct {
		name   string
		rec    Record
		loaded []string
		// source is the policy the record's source compiles to (nil: it does not compile)
		source *policy.Compiled
		// untrusted: the refusal wraps ErrUntrusted; compiled: the source was compiled
		wantErr, untrusted, compiled bool
	}{
		{name: "a record of versions loaded from the ConfigMap, its source the stable version, is trusted",
			rec: Record{Phase: RollingOut, Stable: s, Target: tv}, loaded: []string{s, tv}, source: stable, compiled: true},
		{name: "a stable record needs its stable version loaded only",
			rec: Record{Phase: Stable, Stable: s}, loaded: []string{s}, source: stable, compiled: true},
		{name: "a record an earlier runtime wrote, naming the whole policy's hash, is trusted",
			rec: Record{Phase: Stable, Stable: earlier}, loaded: []string{earlier}, source: annotated, compiled: true},
		{name: "a stable version never loaded is refused, its source never compiled",
			rec: Record{Phase: RolledBack, Stable: f, Target: tv}, loaded: []string{s, tv}, source: forged, wantErr: true, untrusted: true},
		{name: "a target never loaded is refused, its source never compiled",
			rec: Record{Phase: RollingOut, Stable: s, Target: f}, loaded: []string{s, tv}, source: stable, wantErr: true, untrusted: true},
		{name: "a source that is not the stable version it names is refused",
			rec: Record{Phase: RolledBack, Stable: s, Target: tv}, loaded: []string{s, tv}, source: forged, wantErr: true, untrusted: true, compiled: true},
		{name: "nothing loaded trusts nothing",
			rec: Record{Phase: Stable, Stable: ""}, wantErr: true, untrusted: true},
		{name: "a trusted source that no longer compiles is an error, not a refusal",
			rec: Record{Phase: RollingOut, Stable: s, Target: tv}, loaded: []string{s, tv}, wantErr: true, compiled: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			compiled := false
			err := Trust(tt.rec, tt.loaded, func() (*policy.Compiled, error) {
				compiled = true
				if tt.source == nil {
					return nil, compiles
				}
				return tt.source, nil
			})
			if (err != nil) != tt.wantErr || errors.Is(err, ErrUntrusted) != tt.untrusted {
				t.Errorf("Trust = %v; want an error %v, untrusted %v", err, tt.wantErr, tt.untrusted)
			}
			if compiled != tt.compiled {
				t.Errorf("the source was compiled: %v, want %v", compiled, tt.compiled)
			}
		})
	}
}

func TestTrustSaysWhichVersionItRefuses(t *testing.T) {
	err := Trust(Record{Stable: strings.Repeat("f", 64)}, []string{"s"}, nil)
	if err == nil || !strings.Contains(err.Error(), `stable version "ffffffffffff" was never loaded`) {
		t.Errorf("Trust = %v", err)
	}
}

func TestRemember(t *testing.T) {
	eight := []string{"1", "2", "3", "4", "5", "6", "7", "8"}
	for _, tt := range []struct {
		name    string
		loaded  []string
		version string
		keep    []string
		want    []string
	}{
		{"a new version goes last", []string{"1"}, "2", nil, []string{"1", "2"}},
		{"a version loaded again stays where it was", []string{"1", "2"}, "1", nil, []string{"1", "2"}},
		{"beyond the bound, the oldest goes", eight, "9", nil, []string{"2", "3", "4", "5", "6", "7", "8", "9"}},
		{"a version in use is never dropped", eight, "9", []string{"1"}, []string{"1", "3", "4", "5", "6", "7", "8", "9"}},
		{"versions in use may exceed the bound", eight, "9", eight, append(slices.Clone(eight), "9")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := slices.Clone(tt.loaded)
			if got := Remember(tt.loaded, tt.version, tt.keep...); !slices.Equal(got, tt.want) {
				t.Errorf("Remember = %v, want %v", got, tt.want)
			}
			if !slices.Equal(tt.loaded, before) {
				t.Errorf("Remember changed its argument: %v, was %v", tt.loaded, before)
			}
		})
	}
}
