package kinds

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadCRDFiles(t *testing.T) {
	crds := filepath.Join("..", "..", "crds")
	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		paths []string
		want  string // the CRDs defined, or the error
	}{
		{"a file", []string{filepath.Join(crds, "myapp.yaml")}, "[myapps.demo.rtfm.co.ua]"},
		{"a directory stands for its files", []string{crds},
			"[configmapsyncs.apps.bixbite.io memcacheds.cache.example.com myapps.demo.rtfm.co.ua myingresses.demo.rtfm.co.ua whalesays.devsectim.io]"},
		{"a directory without a CRD is an error", []string{empty}, "no CustomResourceDefinition found"},
		{"a missing file is an error", []string{filepath.Join(empty, "nothing.yaml")}, "no such file or directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := LoadCRDFiles(tc.paths)
			got := fmt.Sprint(err)
			if err == nil {
				got = fmt.Sprint(c.CRDs())
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}
