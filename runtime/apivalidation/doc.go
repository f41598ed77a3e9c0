// Package apivalidation validates objects of the built-in kinds users put in policies as the API
// server validates a create, with the API server's own code, so that a child the cluster would
// refuse is refused offline (`metacel validate`, `render`, `test`, `plan`) and by the runtime
// before it sends the request, in the API server's words.
//
// Validate takes an unstructured object and returns the API server's field errors
// (field.ErrorList), nil for a valid object and for a kind it does not know (Knows). It knows Pod,
// Service, ConfigMap, Secret, PersistentVolumeClaim, ServiceAccount, ResourceQuota, LimitRange and
// Namespace; Deployment, StatefulSet, DaemonSet and ReplicaSet; Job and CronJob; Ingress and
// NetworkPolicy; PodDisruptionBudget; HorizontalPodAutoscaler; Role, ClusterRole, RoleBinding and
// ClusterRoleBinding, in every version the API server serves. The object is decoded into its
// versioned type, defaulted and converted to the internal type as the API server decodes a
// request (k8s.io/kubernetes/pkg/api/legacyscheme and pkg/apis/<group>/install), prepared as the
// kind's registry strategy prepares a create (a Job's generated selector, a Service's
// clusterIPs), and checked by the validation package of its API group
// (k8s.io/kubernetes/pkg/apis/<group>/validation) with the options the strategy gives it, then
// its metadata by apimachinery's generic checks. So names by kind (a DNS-1123 subdomain or label,
// 63 or 253 characters), namespaces, label keys and values, annotation keys and their 256 KiB,
// ports and their names, protocols and targetPorts, a workload's selector against its template's
// labels, a CronJob's schedule and time zone (robfig/cron, as the API server parses them),
// container, env var and volume names, mounts of declared volumes and the rest are what the API
// server of the release in go.mod says, feature gates at their defaults. Refuse validates an
// object and gives the API server's error (`Deployment.apps "web" is invalid: ...`), nil for one
// it accepts, and Fix the fix of the errors authors meet most.
//
// Not checked: what admission decides (quotas, LimitRanges, PriorityClasses, PodSecurity,
// webhooks, ValidatingAdmissionPolicies), what needs the cluster's state (a name taken, a
// Service's requested clusterIP or nodePort already allocated), an update's rules against the old
// object (runtime/policy checks immutable fields), and a cluster whose feature gates or release
// differ from go.mod's (a Service name starting with a digit is valid from 1.36, where
// RelaxedServiceNameValidation is on by default).
//
// Why k8s.io/kubernetes, and not rules retyped from apimachinery's validators: its validation
// packages are the API server's, with its wording, and they cost little. Measured on this module
// (k8s.io/* v0.36.3, k8s.io/kubernetes v1.36.3, go build ./cmd/metacel):
//
//	                                  before       after
//	modules (go list -m all)          144          222 (+78; 7 new in go.mod's require)
//	packages built into metacel       889          954
//	binary                            59.1 MB      65.4 MB (+10.8%)
//	build, empty build cache          122 s        168 s (+37%, two shared cores)
//	start (metacel version)           unchanged, within noise
//
// The registry strategies themselves (k8s.io/kubernetes/pkg/registry/<group>/<resource>) would
// spare the few lines of options in kinds.go, but bring the API server's storage with them: a
// binary of 104.8 MB (+77%). So kinds.go calls each strategy's validation as its Validate does,
// and names the strategy. k8s.io/kubernetes requires its staging modules at v0.0.0: go.mod
// replaces each with its release (v0.36.3), and moves with the other k8s.io modules.
//
// Validating one Deployment costs about 0.1 ms (BenchmarkValidateADeployment); a render checks
// each child it renders, except one the cluster already holds exactly as rendered.
package apivalidation
