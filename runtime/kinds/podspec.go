package kinds

import "k8s.io/apimachinery/pkg/runtime/schema"

// PodSpecPaths are, by kind, the paths of the pod spec of each built-in kind that holds one:
// where the API server rewrites a pod spec as it stores it (render's stored forms), and where a
// cache keeps what such a rewrite reads (policy's projection).
var PodSpecPaths = map[schema.GroupKind][]string{
	{Kind: "Pod"}:                        {"spec"},
	{Kind: "PodTemplate"}:                {"template", "spec"},
	{Kind: "ReplicationController"}:      {"spec", "template", "spec"},
	{Group: "apps", Kind: "Deployment"}:  {"spec", "template", "spec"},
	{Group: "apps", Kind: "ReplicaSet"}:  {"spec", "template", "spec"},
	{Group: "apps", Kind: "StatefulSet"}: {"spec", "template", "spec"},
	{Group: "apps", Kind: "DaemonSet"}:   {"spec", "template", "spec"},
	{Group: "batch", Kind: "Job"}:        {"spec", "template", "spec"},
	{Group: "batch", Kind: "CronJob"}:    {"spec", "jobTemplate", "spec", "template", "spec"},
}
