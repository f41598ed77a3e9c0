package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"metacel.dev/metacel/runtime/tree"
)

// nestedTree is a Team whose App is the parent of another policy, with a ConfigMap of its own
// that the next sync updates, and whose other App is missing (deleted since the last sync).
func nestedTree() *tree.Tree {
	ready := []tree.Condition{{Type: "Synced", Status: "True", Reason: "Synced", Message: "1 child applied"},
		{Type: "Ready", Status: "True", Reason: "ChildrenReady", Message: "1 child ready"}}
	notReady := []tree.Condition{{Type: "Synced", Status: "True", Reason: "Synced", Message: "2 children applied"},
		{Type: "Ready", Status: "False", Reason: "ChildrenNotReady", Message: "waiting for App shop/core-api"}}
	app := &tree.Tree{
		Parent: tree.Object{APIVersion: "demo.metacel.dev/v1", Kind: "App", Namespace: "shop", Name: "core-web", UID: "uid-web"},
		Policy: "apps", Version: "2b3c4d5e6f70", Source: "configmap/metacel-system/apps/policy.yaml", Conditions: ready, Ready: true,
		Children: []tree.Child{{ID: "config", Object: tree.Object{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "core-web-config", UID: "uid-config"},
			Exists: true, Ready: true, Next: "update: differs from the live object: applied"}},
	}
	return &tree.Tree{
		Parent: tree.Object{APIVersion: "demo.metacel.dev/v1", Kind: "Team", Namespace: "shop", Name: "core", UID: "uid-core"},
		Policy: "teams", Version: "0a4a19ddb7b6", Source: "configmap/metacel-system/teams/policy.yaml", Conditions: notReady,
		Children: []tree.Child{
			{ID: "web", Object: app.Parent, Exists: true, Ready: true, Tree: app},
			{ID: "api", Object: tree.Object{APIVersion: "demo.metacel.dev/v1", Kind: "App", Namespace: "shop", Name: "core-api"},
				NotReady: "missing", Next: "create: a new child"},
		},
	}
}

func TestTreeShowsAChildsOwnTreeBeneathIt(t *testing.T) {
	tests := []struct {
		name, output, golden string
	}{
		{"text", "text", "nested.txt"},
		{"wide", "wide", "nested-wide.txt"},
		{"json", "json", "nested.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			o := &treeOptions{output: tt.output}
			if err := o.printTree(&out, nestedTree()); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", "tree", tt.golden), out.String())
		})
	}
}

func TestTreeRefusesADepthOutOfRange(t *testing.T) {
	tests := []struct {
		name  string
		depth string
	}{
		{"negative", "-1"},
		{"beyond the cap", "9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := runCLI(t, "tree", "team/core", "--depth", tt.depth, "--kubeconfig", filepath.Join(t.TempDir(), "none"))
			if err == nil || !strings.Contains(err.Error(), "--depth "+tt.depth+": want 0 to 8") {
				t.Errorf("error %v, want --depth refused", err)
			}
		})
	}
}
