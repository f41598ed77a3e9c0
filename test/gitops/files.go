package gitops

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"metacel.dev/metacel/runtime/manifest"
)

// The files metacel ships for GitOps tools, relative to the repository's root.
const (
	// ArgoCDScriptFile is the Lua health check of metacel parents.
	ArgoCDScriptFile = "deploy/argocd/health.lua"
	// ArgoCDPolicyScriptFile is the Lua health check of policy ConfigMaps.
	ArgoCDPolicyScriptFile = "deploy/argocd/policy-health.lua"
	// ArgoCDConfigMapFile is the argocd-cm patch holding both.
	ArgoCDConfigMapFile = "deploy/argocd/argocd-cm.yaml"
	// FluxFile holds the Flux Kustomizations that apply policies then parents, with the
	// healthCheckExprs of metacel parents.
	FluxFile = "deploy/flux/metacel.yaml"
	// DocFile is the page that shows them.
	DocFile = "docs/gitops.md"
)

// ReadArgoCDScript reads the Lua health check under root, the repository's root.
func ReadArgoCDScript(root string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, ArgoCDScriptFile))
	return string(data), err
}

// ReadArgoCDPolicyScript reads the Lua health check of policy ConfigMaps under root.
func ReadArgoCDPolicyScript(root string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, ArgoCDPolicyScriptFile))
	return string(data), err
}

// ReadFluxHealthCheckExprs reads the healthCheckExprs of the Kustomizations of FluxFile under
// root, in order.
func ReadFluxHealthCheckExprs(root string) ([]HealthCheckExprs, error) {
	objs, err := manifest.ReadFile(filepath.Join(root, FluxFile))
	if err != nil {
		return nil, err
	}
	var out []HealthCheckExprs
	for _, obj := range objs {
		spec, _ := obj.Object["spec"].(map[string]any)
		data, err := json.Marshal(spec["healthCheckExprs"])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", FluxFile, err)
		}
		var exprs []HealthCheckExprs
		if err := json.Unmarshal(data, &exprs); err != nil {
			return nil, fmt.Errorf("%s: Kustomization %q: healthCheckExprs: %w", FluxFile, obj.GetName(), err)
		}
		out = append(out, exprs...)
	}
	return out, nil
}
