// Package gitops judges metacel parents as the GitOps tools a platform team runs judge them, so
// that tests can hold the health check metacel ships for them to what they say it does:
//   - Argo CD: ArgoCDHealth runs a Lua health check (deploy/argocd/health.lua) the way Argo CD's
//     util/lua runs resource.customizations health scripts: gopher-lua with only the package,
//     base and table libraries open, the object bound to the global obj, and the status and
//     message of the table the script returns, a status Argo CD does not know being Unknown;
//   - Flux: kstatus (sigs.k8s.io/cli-utils/pkg/kstatus/status, which Flux's fork leaves
//     unchanged) is what Flux reads without more, and FluxHealth evaluates a Kustomization's
//     healthCheckExprs as Flux's runtime/cel StatusEvaluator does: an observedGeneration behind
//     the generation is InProgress, then inProgress, failed and current in that order, none true
//     being InProgress.
//
// Files reads the shipped files and the documentation's copies of them (docs/gitops.md), so that
// the unit tests and the e2e test judge with what users copy.
package gitops
