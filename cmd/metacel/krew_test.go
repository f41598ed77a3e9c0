package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// krewPlugin is the part of krew's Plugin manifest (krew.googlecontainertools.github.com/v1alpha2)
// that krew reads to install a plugin.
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		ShortDescription string `json:"shortDescription"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			SHA256 string `json:"sha256"`
			Bin    string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

// TestTheKrewManifestInstallsKubectlMetacelOnEachPlatform: deploy/krew/metacel.yaml is a krew
// Plugin named metacel whose platforms are linux and darwin on amd64 and arm64, each the archive
// of the release naming (a placeholder host) with a sha256 of the form krew checks and the binary
// kubectl-metacel; the completion helper it tells of asks kubectl-metacel.
func TestTheKrewManifestInstallsKubectlMetacelOnEachPlatform(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repo, "deploy", "krew", "metacel.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var p krewPlugin
	if err := yaml.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	if p.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || p.Kind != "Plugin" || p.Metadata.Name != "metacel" ||
		!regexp.MustCompile(`^v\d+\.\d+\.\d+$`).MatchString(p.Spec.Version) || p.Spec.ShortDescription == "" {
		t.Errorf("not a krew Plugin named metacel with a version: %s %s %q %q", p.APIVersion, p.Kind, p.Metadata.Name, p.Spec.Version)
	}
	var platforms []string
	for _, pl := range p.Spec.Platforms {
		goos, arch := pl.Selector.MatchLabels["os"], pl.Selector.MatchLabels["arch"]
		platforms = append(platforms, goos+"/"+arch)
		want := fmt.Sprintf("https://RELEASES.example/metacel/%[1]s/kubectl-metacel_%[1]s_%[2]s_%[3]s.tar.gz", p.Spec.Version, goos, arch)
		if pl.URI != want {
			t.Errorf("%s/%s: uri %q, want %q", goos, arch, pl.URI, want)
		}
		if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(pl.SHA256) {
			t.Errorf("%s/%s: sha256 %q, want 64 hexadecimal digits", goos, arch, pl.SHA256)
		}
		if pl.Bin != "kubectl-metacel" {
			t.Errorf("%s/%s: bin %q, want kubectl-metacel", goos, arch, pl.Bin)
		}
	}
	slices.Sort(platforms)
	if want := []string{"darwin/amd64", "darwin/arm64", "linux/amd64", "linux/arm64"}; !slices.Equal(platforms, want) {
		t.Errorf("platforms %q, want %q", platforms, want)
	}
	script, err := os.ReadFile(filepath.Join(repo, "deploy", "krew", "kubectl_complete-metacel"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), `exec kubectl-metacel __complete "$@"`) || !strings.Contains(string(data), `exec kubectl-metacel __complete "$@"`) {
		t.Errorf("the completion helper, and the manifest's caveats, must run kubectl-metacel __complete:\n%s", script)
	}
}
