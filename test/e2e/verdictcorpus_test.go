//go:build e2e

package e2e

import "strings"

// The corpus of TestOfflineVerdictAgreesWithTheAPIServer: one valid object of each built-in kind
// users put in policies (verdictBases), and mutations of one field each, made by Go code
// (verdictCorpus): every base gets the metadata mutations, every base with a Pod template the Pod
// mutations at its template, and each kind its own.

// verdictBase is a valid object of one kind, as YAML (no namespace: the test sets it). podSpec is
// the path of its Pod spec, where the test merges verdictPodSpec; "" for a kind without one.
type verdictBase struct {
	yaml    string
	podSpec string
}

// verdictMutation changes one field of a base: field, a path of keys and [index]es (an index one
// past the end appends), set to value (removed, to remove it); kinds are the kinds it applies to
// (none: every kind of its group).
type verdictMutation struct {
	id    string
	field string
	value any
	kinds []string
}

// removed is the value of a mutation that removes its field.
var removed = &struct{ removed bool }{true}

type (
	m = map[string]any
	l = []any
)

// The kinds by what they share.
var (
	workloadKinds = []string{"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"}
	replicaKinds  = []string{"Deployment", "StatefulSet", "ReplicaSet"}
)

// verdictPodSpec is the Pod spec of the Pod and of every Pod template.
const verdictPodSpec = `
containers:
- name: web
  image: nginx:1.27
  ports: [{name: http, containerPort: 80, protocol: TCP}]
  env: [{name: LOG_LEVEL, value: info}]
  volumeMounts: [{name: data, mountPath: /data}]
  resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {memory: 128Mi}}
  readinessProbe: {httpGet: {path: /, port: http}}
volumes: [{name: data, emptyDir: {}}]
`

// verdictBases are the valid objects, by kind.
var verdictBases = map[string]verdictBase{
	"Pod": {podSpec: "spec", yaml: `
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec: {}
`},
	"Deployment": {podSpec: "spec.template.spec", yaml: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {}
`},
	"StatefulSet": {podSpec: "spec.template.spec", yaml: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web, labels: {app: web}}
spec:
  serviceName: web
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {}
  volumeClaimTemplates:
  - metadata: {name: state}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
`},
	"DaemonSet": {podSpec: "spec.template.spec", yaml: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: web, labels: {app: web}}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {}
`},
	"ReplicaSet": {podSpec: "spec.template.spec", yaml: `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {}
`},
	"Job": {podSpec: "spec.template.spec", yaml: `
apiVersion: batch/v1
kind: Job
metadata: {name: web, labels: {app: web}}
spec:
  backoffLimit: 3
  template:
    spec: {restartPolicy: Never}
`},
	"CronJob": {podSpec: "spec.jobTemplate.spec.template.spec", yaml: `
apiVersion: batch/v1
kind: CronJob
metadata: {name: web, labels: {app: web}}
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        spec: {restartPolicy: Never}
`},
	"Service": {yaml: `
apiVersion: v1
kind: Service
metadata: {name: web, labels: {app: web}}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http, protocol: TCP}]
`},
	"Ingress": {yaml: `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, labels: {app: web}}
spec:
  rules:
  - host: web.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend: {service: {name: web, port: {number: 80}}}
  tls: [{hosts: [web.example.com], secretName: web-tls}]
`},
	"ConfigMap": {yaml: `
apiVersion: v1
kind: ConfigMap
metadata: {name: web, labels: {app: web}}
data: {LOG_LEVEL: info, config.yaml: "a: 1\n"}
`},
	"Secret": {yaml: `
apiVersion: v1
kind: Secret
metadata: {name: web, labels: {app: web}}
type: Opaque
data: {password: cGFzc3dvcmQ=}
stringData: {username: admin}
`},
	"PersistentVolumeClaim": {yaml: `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: web, labels: {app: web}}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
`},
	"ServiceAccount": {yaml: `
apiVersion: v1
kind: ServiceAccount
metadata: {name: web, labels: {app: web}}
automountServiceAccountToken: false
`},
	"Role": {yaml: `
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: web, labels: {app: web}}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get, list, watch]}]
`},
	"ClusterRole": {yaml: `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: web, labels: {app: web}}
rules:
- {apiGroups: [""], resources: [configmaps], verbs: [get]}
- {nonResourceURLs: [/healthz], verbs: [get]}
`},
	"RoleBinding": {yaml: `
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: web, labels: {app: web}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: web}
subjects: [{kind: ServiceAccount, name: web, namespace: default}]
`},
	"ClusterRoleBinding": {yaml: `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: web, labels: {app: web}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: web}
subjects: [{kind: ServiceAccount, name: web, namespace: default}]
`},
	"NetworkPolicy": {yaml: `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, labels: {app: web}}
spec:
  podSelector: {matchLabels: {app: web}}
  policyTypes: [Ingress, Egress]
  ingress:
  - from:
    - podSelector: {matchLabels: {role: frontend}}
    - ipBlock: {cidr: 10.0.0.0/8, except: [10.1.0.0/16]}
    ports: [{protocol: TCP, port: 80}]
  egress:
  - ports: [{protocol: UDP, port: 53}]
`},
	"PodDisruptionBudget": {yaml: `
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, labels: {app: web}}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
`},
	"HorizontalPodAutoscaler": {yaml: `
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, labels: {app: web}}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 5
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}
`},
	"ResourceQuota": {yaml: `
apiVersion: v1
kind: ResourceQuota
metadata: {name: web, labels: {app: web}}
spec:
  hard: {pods: "10", requests.cpu: "4", requests.memory: 8Gi, limits.memory: 16Gi}
`},
	"LimitRange": {yaml: `
apiVersion: v1
kind: LimitRange
metadata: {name: web, labels: {app: web}}
spec:
  limits:
  - type: Container
    default: {cpu: 500m, memory: 256Mi}
    defaultRequest: {cpu: 100m, memory: 64Mi}
    max: {cpu: "2", memory: 1Gi}
    min: {cpu: 50m, memory: 32Mi}
`},
	"Namespace": {yaml: `
apiVersion: v1
kind: Namespace
metadata: {name: web, labels: {app: web}}
`},
}

// longName returns a valid-looking name of n characters.
func longName(n int) string { return "w" + strings.Repeat("e", n-2) + "b" }

// metaMutations apply to every base: names, labels, annotations, finalizers, unknown fields.
var metaMutations = []verdictMutation{
	{id: "name-uppercase", field: "metadata.name", value: "Web"},
	{id: "name-underscore", field: "metadata.name", value: "web_app"},
	{id: "name-dot", field: "metadata.name", value: "web.app"},
	{id: "name-starts-with-digit", field: "metadata.name", value: "1web"},
	{id: "name-leading-dash", field: "metadata.name", value: "-web"},
	{id: "name-trailing-dash", field: "metadata.name", value: "web-"},
	{id: "name-slash", field: "metadata.name", value: "web/app"},
	{id: "name-63-chars", field: "metadata.name", value: longName(63)},
	{id: "name-64-chars", field: "metadata.name", value: longName(64)},
	{id: "name-77-chars", field: "metadata.name", value: longName(77)},
	{id: "name-253-chars", field: "metadata.name", value: longName(253)},
	{id: "name-254-chars", field: "metadata.name", value: longName(254)},
	{id: "name-missing", field: "metadata.name", value: removed},
	{id: "name-number", field: "metadata.name", value: 5},
	{id: "label-key-space", field: "metadata.labels", value: m{"bad key": "web"}},
	{id: "label-key-uppercase-prefix", field: "metadata.labels", value: m{"Example.com/app": "web"}},
	{id: "label-key-64-chars", field: "metadata.labels", value: m{longName(64): "web"}},
	{id: "label-key-prefixed", field: "metadata.labels", value: m{"app.kubernetes.io/name": "web"}},
	{id: "label-value-email", field: "metadata.labels", value: m{"owner": "ops@example.com"}},
	{id: "label-value-64-chars", field: "metadata.labels", value: m{"app": longName(64)}},
	{id: "label-value-leading-dash", field: "metadata.labels", value: m{"app": "-web"}},
	{id: "label-value-empty", field: "metadata.labels", value: m{"app": ""}},
	{id: "label-value-number", field: "metadata.labels", value: m{"replicas": 3}},
	{id: "annotation-key-space", field: "metadata.annotations", value: m{"bad key": "x"}},
	{id: "annotation-value-number", field: "metadata.annotations", value: m{"example.com/n": 1}},
	{id: "annotations-200KiB", field: "metadata.annotations", value: m{"example.com/blob": strings.Repeat("a", 200<<10)}},
	{id: "annotations-over-256KiB", field: "metadata.annotations", value: m{"example.com/blob": strings.Repeat("a", 257<<10)}},
	{id: "finalizer-valid", field: "metadata.finalizers", value: l{"example.com/cleanup"}},
	{id: "finalizer-space", field: "metadata.finalizers", value: l{"bad finalizer"}},
	{id: "metadata-unknown-field", field: "metadata.nmae", value: "web"},
	{id: "unknown-field", field: "extra", value: m{}},
}

// podMutations apply to the Pod spec of every base that has one, at its path.
var podMutations = []verdictMutation{
	{id: "container-name-uppercase", field: "containers[0].name", value: "Web"},
	{id: "container-name-missing", field: "containers[0].name", value: removed},
	{id: "container-names-duplicate", field: "containers[1]", value: m{"name": "web", "image": "busybox"}},
	{id: "container-second", field: "containers[1]", value: m{"name": "sidecar", "image": "busybox"}},
	{id: "containers-empty", field: "containers", value: l{}},
	{id: "image-missing", field: "containers[0].image", value: removed},
	{id: "image-whitespace", field: "containers[0].image", value: " nginx:1.27"},
	{id: "container-port-80800", field: "containers[0].ports[0].containerPort", value: 80800},
	{id: "container-port-0", field: "containers[0].ports[0].containerPort", value: 0},
	{id: "container-port-string", field: "containers[0].ports[0].containerPort", value: "80"},
	{id: "container-port-name-16-chars", field: "containers[0].ports[0].name", value: "http-metrics-abc"},
	{id: "container-port-name-uppercase", field: "containers[0].ports[0].name", value: "HTTP"},
	{id: "container-port-name-digits", field: "containers[0].ports[0].name", value: "8080"},
	{id: "container-port-names-duplicate", field: "containers[0].ports[1]", value: m{"name": "http", "containerPort": 81}},
	{id: "container-port-protocol", field: "containers[0].ports[0].protocol", value: "HTTP"},
	{id: "host-port-70000", field: "containers[0].ports[0].hostPort", value: 70000},
	{id: "env-name-equals", field: "containers[0].env[0].name", value: "LOG=LEVEL"},
	{id: "env-name-empty", field: "containers[0].env[0].name", value: ""},
	{id: "env-name-dash", field: "containers[0].env[0].name", value: "LOG-LEVEL"},
	{id: "env-value-and-valueFrom", field: "containers[0].env[0].valueFrom", value: m{"fieldRef": m{"fieldPath": "metadata.name"}}},
	{id: "env-valueFrom-two-sources", field: "containers[0].env[1]", value: m{"name": "TOKEN", "valueFrom": m{
		"secretKeyRef": m{"name": "web", "key": "token"}, "configMapKeyRef": m{"name": "web", "key": "token"}}}},
	{id: "env-fieldPath-unknown", field: "containers[0].env[1]", value: m{"name": "X", "valueFrom": m{"fieldRef": m{"fieldPath": "spec.bogus"}}}},
	{id: "volume-name-uppercase", field: "volumes[0].name", value: "Data"},
	{id: "volume-two-sources", field: "volumes[0].configMap", value: m{"name": "web"}},
	{id: "volume-no-source", field: "volumes[0].emptyDir", value: removed},
	{id: "volume-names-duplicate", field: "volumes[1]", value: m{"name": "data", "emptyDir": m{}}},
	{id: "mount-of-no-volume", field: "containers[0].volumeMounts[0].name", value: "cache"},
	{id: "mount-path-missing", field: "containers[0].volumeMounts[0].mountPath", value: removed},
	{id: "mount-path-relative", field: "containers[0].volumeMounts[0].mountPath", value: "data"},
	{id: "restartPolicy-enum", field: "restartPolicy", value: "Sometimes"},
	{id: "restartPolicy-OnFailure", field: "restartPolicy", value: "OnFailure"},
	{id: "restartPolicy-Always", field: "restartPolicy", value: "Always"},
	{id: "imagePullPolicy-enum", field: "containers[0].imagePullPolicy", value: "Sometimes"},
	{id: "dnsPolicy-enum", field: "dnsPolicy", value: "Bogus"},
	{id: "cpu-malformed", field: "containers[0].resources.requests.cpu", value: "1.5.5"},
	{id: "memory-1Gib", field: "containers[0].resources.limits.memory", value: "1Gib"},
	{id: "memory-negative", field: "containers[0].resources.requests.memory", value: "-64Mi"},
	{id: "requests-over-limits", field: "containers[0].resources.requests.memory", value: "256Mi"},
	{id: "resource-name-space", field: "containers[0].resources.requests", value: m{"bad name": "1"}},
	{id: "probe-two-handlers", field: "containers[0].readinessProbe.exec", value: m{"command": l{"true"}}},
	{id: "probe-port-70000", field: "containers[0].readinessProbe.httpGet.port", value: 70000},
	{id: "probe-failureThreshold-negative", field: "containers[0].readinessProbe.failureThreshold", value: -1},
	{id: "activeDeadlineSeconds-0", field: "activeDeadlineSeconds", value: 0},
	{id: "hostname-underscore", field: "hostname", value: "web_1"},
	{id: "nodeSelector-value-space", field: "nodeSelector", value: m{"disk": "fast ssd"}},
	{id: "toleration-operator-enum", field: "tolerations", value: l{m{"key": "k", "operator": "Equals", "value": "v"}}},
	{id: "toleration-Exists-with-value", field: "tolerations", value: l{m{"key": "k", "operator": "Exists", "value": "v"}}},
	{id: "runAsUser-negative", field: "securityContext.runAsUser", value: -1},
	{id: "container-unknown-field", field: "containers[0].imagePullPolcy", value: "Always"},
}

// kindMutations are each kind's own.
var kindMutations = []verdictMutation{
	// workloads
	{id: "selector-mismatch", field: "spec.selector.matchLabels", value: m{"app": "other"}, kinds: workloadKinds},
	{id: "selector-missing", field: "spec.selector", value: removed, kinds: workloadKinds},
	{id: "selector-empty", field: "spec.selector", value: m{}, kinds: workloadKinds},
	{id: "selector-operator-enum", field: "spec.selector", value: m{"matchExpressions": l{m{"key": "app", "operator": "Is", "values": l{"web"}}}}, kinds: workloadKinds},
	{id: "selector-expression", field: "spec.selector", value: m{"matchExpressions": l{m{"key": "app", "operator": "In", "values": l{"web"}}}}, kinds: workloadKinds},
	{id: "template-labels-missing", field: "spec.template.metadata.labels", value: removed, kinds: workloadKinds},
	{id: "template-label-value-email", field: "spec.template.metadata.labels", value: m{"app": "web", "owner": "ops@example.com"}, kinds: workloadKinds},
	{id: "replicas-negative", field: "spec.replicas", value: -1, kinds: replicaKinds},
	{id: "replicas-string", field: "spec.replicas", value: "2", kinds: replicaKinds},
	{id: "minReadySeconds-negative", field: "spec.minReadySeconds", value: -1, kinds: workloadKinds},
	{id: "revisionHistoryLimit-negative", field: "spec.revisionHistoryLimit", value: -1, kinds: []string{"Deployment", "StatefulSet", "DaemonSet"}},
	{id: "strategy-enum", field: "spec.strategy", value: m{"type": "Sometimes"}, kinds: []string{"Deployment"}},
	{id: "strategy-Recreate-with-rollingUpdate", field: "spec.strategy", value: m{"type": "Recreate", "rollingUpdate": m{"maxSurge": 1}}, kinds: []string{"Deployment"}},
	{id: "rollingUpdate-both-zero", field: "spec.strategy", value: m{"type": "RollingUpdate", "rollingUpdate": m{"maxSurge": 0, "maxUnavailable": 0}}, kinds: []string{"Deployment"}},
	{id: "maxUnavailable-150-percent", field: "spec.strategy", value: m{"type": "RollingUpdate", "rollingUpdate": m{"maxUnavailable": "150%"}}, kinds: []string{"Deployment"}},
	{id: "maxSurge-word", field: "spec.strategy", value: m{"type": "RollingUpdate", "rollingUpdate": m{"maxSurge": "abc"}}, kinds: []string{"Deployment"}},
	{id: "minReadySeconds-over-progressDeadline", field: "spec.minReadySeconds", value: 700, kinds: []string{"Deployment"}},
	{id: "podManagementPolicy-enum", field: "spec.podManagementPolicy", value: "Sometimes", kinds: []string{"StatefulSet"}},
	{id: "updateStrategy-enum", field: "spec.updateStrategy", value: m{"type": "Sometimes"}, kinds: []string{"StatefulSet", "DaemonSet"}},
	{id: "updateStrategy-OnDelete-with-rollingUpdate", field: "spec.updateStrategy", value: m{"type": "OnDelete", "rollingUpdate": m{"partition": 1}}, kinds: []string{"StatefulSet"}},
	{id: "partition-negative", field: "spec.updateStrategy", value: m{"type": "RollingUpdate", "rollingUpdate": m{"partition": -1}}, kinds: []string{"StatefulSet"}},
	{id: "serviceName-underscore", field: "spec.serviceName", value: "web_svc", kinds: []string{"StatefulSet"}},
	{id: "claim-template-name-uppercase", field: "spec.volumeClaimTemplates[0].metadata.name", value: "State", kinds: []string{"StatefulSet"}},
	{id: "claim-template-storage-missing", field: "spec.volumeClaimTemplates[0].spec.resources", value: removed, kinds: []string{"StatefulSet"}},
	{id: "claim-retention-enum", field: "spec.persistentVolumeClaimRetentionPolicy", value: m{"whenDeleted": "Sometimes"}, kinds: []string{"StatefulSet"}},
	{id: "daemonset-both-zero", field: "spec.updateStrategy", value: m{"type": "RollingUpdate", "rollingUpdate": m{"maxSurge": 0, "maxUnavailable": 0}}, kinds: []string{"DaemonSet"}},
	// Job
	{id: "completions-negative", field: "spec.completions", value: -1, kinds: []string{"Job"}},
	{id: "parallelism-negative", field: "spec.parallelism", value: -1, kinds: []string{"Job"}},
	{id: "backoffLimit-negative", field: "spec.backoffLimit", value: -1, kinds: []string{"Job"}},
	{id: "activeDeadline-0", field: "spec.activeDeadlineSeconds", value: 0, kinds: []string{"Job"}},
	{id: "ttl-negative", field: "spec.ttlSecondsAfterFinished", value: -1, kinds: []string{"Job"}},
	{id: "completionMode-enum", field: "spec.completionMode", value: "Sometimes", kinds: []string{"Job"}},
	{id: "Indexed-without-completions", field: "spec.completionMode", value: "Indexed", kinds: []string{"Job"}},
	{id: "selector-without-manualSelector", field: "spec.selector", value: m{"matchLabels": m{"app": "web"}}, kinds: []string{"Job"}},
	{id: "suspend-string", field: "spec.suspend", value: "yes", kinds: []string{"Job"}},
	{id: "podFailurePolicy-action-enum", field: "spec.podFailurePolicy", value: m{"rules": l{m{"action": "Bogus", "onExitCodes": m{"operator": "In", "values": l{1}}}}}, kinds: []string{"Job"}},
	{id: "podReplacementPolicy-enum", field: "spec.podReplacementPolicy", value: "Sometimes", kinds: []string{"Job"}},
	// CronJob
	{id: "schedule-six-fields", field: "spec.schedule", value: "0 0 * * * *", kinds: []string{"CronJob"}},
	{id: "schedule-four-fields", field: "spec.schedule", value: "0 0 * *", kinds: []string{"CronJob"}},
	{id: "schedule-minute-61", field: "spec.schedule", value: "61 * * * *", kinds: []string{"CronJob"}},
	{id: "schedule-words", field: "spec.schedule", value: "every five minutes", kinds: []string{"CronJob"}},
	{id: "schedule-empty", field: "spec.schedule", value: "", kinds: []string{"CronJob"}},
	{id: "schedule-every", field: "spec.schedule", value: "@every 5m", kinds: []string{"CronJob"}},
	{id: "schedule-hourly", field: "spec.schedule", value: "@hourly", kinds: []string{"CronJob"}},
	{id: "schedule-day-names", field: "spec.schedule", value: "0 9 * * MON-FRI", kinds: []string{"CronJob"}},
	{id: "schedule-TZ-prefix", field: "spec.schedule", value: "TZ=UTC 0 * * * *", kinds: []string{"CronJob"}},
	{id: "timeZone-unknown", field: "spec.timeZone", value: "Mars/Olympus", kinds: []string{"CronJob"}},
	{id: "timeZone-Berlin", field: "spec.timeZone", value: "Europe/Berlin", kinds: []string{"CronJob"}},
	{id: "concurrencyPolicy-enum", field: "spec.concurrencyPolicy", value: "Sometimes", kinds: []string{"CronJob"}},
	{id: "startingDeadline-negative", field: "spec.startingDeadlineSeconds", value: -1, kinds: []string{"CronJob"}},
	{id: "jobsHistoryLimit-negative", field: "spec.successfulJobsHistoryLimit", value: -1, kinds: []string{"CronJob"}},
	{id: "name-53-chars", field: "metadata.name", value: longName(53), kinds: []string{"CronJob"}},
	// Service
	{id: "port-80800", field: "spec.ports[0].port", value: 80800, kinds: []string{"Service"}},
	{id: "port-0", field: "spec.ports[0].port", value: 0, kinds: []string{"Service"}},
	{id: "targetPort-70000", field: "spec.ports[0].targetPort", value: 70000, kinds: []string{"Service"}},
	{id: "targetPort-underscore", field: "spec.ports[0].targetPort", value: "http_port", kinds: []string{"Service"}},
	{id: "targetPort-16-chars", field: "spec.ports[0].targetPort", value: "http-metrics-abc", kinds: []string{"Service"}},
	{id: "targetPort-digits", field: "spec.ports[0].targetPort", value: "8080", kinds: []string{"Service"}},
	{id: "ports-duplicate", field: "spec.ports[1]", value: m{"name": "http2", "port": 80, "protocol": "TCP"}, kinds: []string{"Service"}},
	{id: "port-unnamed-second", field: "spec.ports[1]", value: m{"port": 81}, kinds: []string{"Service"}},
	{id: "port-names-duplicate", field: "spec.ports[1]", value: m{"name": "http", "port": 81}, kinds: []string{"Service"}},
	{id: "port-protocol-enum", field: "spec.ports[0].protocol", value: "HTTP", kinds: []string{"Service"}},
	{id: "appProtocol-space", field: "spec.ports[0].appProtocol", value: "bad proto", kinds: []string{"Service"}},
	{id: "nodePort-on-ClusterIP", field: "spec.ports[0].nodePort", value: 80, kinds: []string{"Service"}},
	{id: "type-enum", field: "spec.type", value: "Bogus", kinds: []string{"Service"}},
	{id: "ExternalName-without-externalName", field: "spec.type", value: "ExternalName", kinds: []string{"Service"}},
	{id: "clusterIP-malformed", field: "spec.clusterIP", value: "not-an-ip", kinds: []string{"Service"}},
	{id: "clusterIP-None", field: "spec.clusterIP", value: "None", kinds: []string{"Service"}},
	{id: "sessionAffinity-enum", field: "spec.sessionAffinity", value: "Sticky", kinds: []string{"Service"}},
	{id: "service-selector-value-space", field: "spec.selector", value: m{"app": "web app"}, kinds: []string{"Service"}},
	{id: "ports-empty", field: "spec.ports", value: l{}, kinds: []string{"Service"}},
	{id: "externalTrafficPolicy-on-ClusterIP", field: "spec.externalTrafficPolicy", value: "Local", kinds: []string{"Service"}},
	{id: "ipFamilyPolicy-enum", field: "spec.ipFamilyPolicy", value: "Bogus", kinds: []string{"Service"}},
	// Ingress
	{id: "pathType-enum", field: "spec.rules[0].http.paths[0].pathType", value: "Bogus", kinds: []string{"Ingress"}},
	{id: "pathType-missing", field: "spec.rules[0].http.paths[0].pathType", value: removed, kinds: []string{"Ingress"}},
	{id: "path-relative", field: "spec.rules[0].http.paths[0].path", value: "api", kinds: []string{"Ingress"}},
	{id: "path-regex-Prefix", field: "spec.rules[0].http.paths[0].path", value: "/api/(.*)", kinds: []string{"Ingress"}},
	{id: "host-uppercase", field: "spec.rules[0].host", value: "Web.example.com", kinds: []string{"Ingress"}},
	{id: "host-with-port", field: "spec.rules[0].host", value: "web.example.com:80", kinds: []string{"Ingress"}},
	{id: "host-ip", field: "spec.rules[0].host", value: "10.0.0.1", kinds: []string{"Ingress"}},
	{id: "host-wildcard", field: "spec.rules[0].host", value: "*.example.com", kinds: []string{"Ingress"}},
	{id: "host-two-wildcards", field: "spec.rules[0].host", value: "*.*.example.com", kinds: []string{"Ingress"}},
	{id: "backend-port-70000", field: "spec.rules[0].http.paths[0].backend.service.port", value: m{"number": 70000}, kinds: []string{"Ingress"}},
	{id: "backend-port-name-and-number", field: "spec.rules[0].http.paths[0].backend.service.port", value: m{"name": "http", "number": 80}, kinds: []string{"Ingress"}},
	{id: "backend-port-empty", field: "spec.rules[0].http.paths[0].backend.service.port", value: m{}, kinds: []string{"Ingress"}},
	{id: "backend-service-and-resource", field: "spec.rules[0].http.paths[0].backend.resource", value: m{"apiGroup": "example.com", "kind": "Bucket", "name": "web"}, kinds: []string{"Ingress"}},
	{id: "backend-service-underscore", field: "spec.rules[0].http.paths[0].backend.service.name", value: "web_svc", kinds: []string{"Ingress"}},
	{id: "rules-empty", field: "spec.rules", value: l{}, kinds: []string{"Ingress"}},
	{id: "tls-host-underscore", field: "spec.tls[0].hosts", value: l{"web_example"}, kinds: []string{"Ingress"}},
	{id: "ingressClassName-underscore", field: "spec.ingressClassName", value: "nginx_1", kinds: []string{"Ingress"}},
	// ConfigMap and Secret
	{id: "data-key-space", field: "data", value: m{"bad key": "x"}, kinds: []string{"ConfigMap", "Secret"}},
	{id: "data-key-dot", field: "data", value: m{".": "eA=="}, kinds: []string{"ConfigMap", "Secret"}},
	{id: "data-key-dotdot", field: "data", value: m{"..": "eA=="}, kinds: []string{"ConfigMap", "Secret"}},
	{id: "data-key-slash", field: "data", value: m{"a/b": "eA=="}, kinds: []string{"ConfigMap", "Secret"}},
	{id: "data-value-number", field: "data", value: m{"replicas": 3}, kinds: []string{"ConfigMap", "Secret"}},
	{id: "data-over-1MiB", field: "data", value: m{"big": strings.Repeat("eHh4", 400<<10)}, kinds: []string{"ConfigMap", "Secret"}},
	{id: "immutable-string", field: "immutable", value: "true", kinds: []string{"ConfigMap", "Secret"}},
	{id: "binaryData-same-key", field: "binaryData", value: m{"LOG_LEVEL": "aW5mbw=="}, kinds: []string{"ConfigMap"}},
	{id: "binaryData-not-base64", field: "binaryData", value: m{"blob": "not base64!"}, kinds: []string{"ConfigMap"}},
	{id: "data-not-base64", field: "data", value: m{"password": "not base64!"}, kinds: []string{"Secret"}},
	{id: "stringData-key-space", field: "stringData", value: m{"bad key": "x"}, kinds: []string{"Secret"}},
	{id: "type-tls-without-keys", field: "type", value: "kubernetes.io/tls", kinds: []string{"Secret"}},
	{id: "type-dockerconfigjson-without-key", field: "type", value: "kubernetes.io/dockerconfigjson", kinds: []string{"Secret"}},
	{id: "type-ssh-auth-without-key", field: "type", value: "kubernetes.io/ssh-auth", kinds: []string{"Secret"}},
	{id: "type-sa-token-without-annotation", field: "type", value: "kubernetes.io/service-account-token", kinds: []string{"Secret"}},
	{id: "type-custom", field: "type", value: "example.com/custom", kinds: []string{"Secret"}},
	// PersistentVolumeClaim
	{id: "accessModes-empty", field: "spec.accessModes", value: l{}, kinds: []string{"PersistentVolumeClaim"}},
	{id: "accessModes-enum", field: "spec.accessModes", value: l{"ReadWriteSometimes"}, kinds: []string{"PersistentVolumeClaim"}},
	{id: "storage-1Gib", field: "spec.resources.requests.storage", value: "1Gib", kinds: []string{"PersistentVolumeClaim"}},
	{id: "storage-negative", field: "spec.resources.requests.storage", value: "-1Gi", kinds: []string{"PersistentVolumeClaim"}},
	{id: "storage-zero", field: "spec.resources.requests.storage", value: "0", kinds: []string{"PersistentVolumeClaim"}},
	{id: "storage-missing", field: "spec.resources.requests", value: m{}, kinds: []string{"PersistentVolumeClaim"}},
	{id: "storage-limit-below-request", field: "spec.resources.limits", value: m{"storage": "500Mi"}, kinds: []string{"PersistentVolumeClaim"}},
	{id: "volumeMode-enum", field: "spec.volumeMode", value: "Bogus", kinds: []string{"PersistentVolumeClaim"}},
	{id: "storageClassName-underscore", field: "spec.storageClassName", value: "fast_ssd", kinds: []string{"PersistentVolumeClaim"}},
	{id: "dataSource-without-name", field: "spec.dataSource", value: m{"kind": "PersistentVolumeClaim"}, kinds: []string{"PersistentVolumeClaim"}},
	{id: "pvc-selector-operator-enum", field: "spec.selector", value: m{"matchExpressions": l{m{"key": "tier", "operator": "Is", "values": l{"fast"}}}}, kinds: []string{"PersistentVolumeClaim"}},
	// ServiceAccount
	{id: "automount-string", field: "automountServiceAccountToken", value: "false", kinds: []string{"ServiceAccount"}},
	{id: "imagePullSecret-underscore", field: "imagePullSecrets", value: l{m{"name": "registry_key"}}, kinds: []string{"ServiceAccount"}},
	{id: "secret-name-empty", field: "secrets", value: l{m{"name": ""}}, kinds: []string{"ServiceAccount"}},
	// Role and ClusterRole
	{id: "verbs-empty", field: "rules[0].verbs", value: l{}, kinds: []string{"Role", "ClusterRole"}},
	{id: "verbs-missing", field: "rules[0].verbs", value: removed, kinds: []string{"Role", "ClusterRole"}},
	{id: "verbs-string", field: "rules[0].verbs", value: "get", kinds: []string{"Role", "ClusterRole"}},
	{id: "apiGroups-missing", field: "rules[0].apiGroups", value: removed, kinds: []string{"Role", "ClusterRole"}},
	{id: "resources-missing", field: "rules[0].resources", value: removed, kinds: []string{"Role", "ClusterRole"}},
	{id: "rules-empty", field: "rules", value: l{}, kinds: []string{"Role", "ClusterRole"}},
	{id: "nonResourceURLs-in-Role", field: "rules[0].nonResourceURLs", value: l{"/healthz"}, kinds: []string{"Role"}},
	{id: "nonResourceURLs-with-resources", field: "rules[1].resources", value: l{"pods"}, kinds: []string{"ClusterRole"}},
	{id: "nonResourceURL-relative", field: "rules[1].nonResourceURLs", value: l{"healthz"}, kinds: []string{"ClusterRole"}},
	{id: "aggregation-label-key-space", field: "aggregationRule", value: m{"clusterRoleSelectors": l{m{"matchLabels": m{"bad key": "x"}}}}, kinds: []string{"ClusterRole"}},
	// RoleBinding and ClusterRoleBinding
	{id: "roleRef-kind-Pod", field: "roleRef.kind", value: "Pod", kinds: []string{"RoleBinding", "ClusterRoleBinding"}},
	{id: "roleRef-apiGroup-apps", field: "roleRef.apiGroup", value: "apps", kinds: []string{"RoleBinding", "ClusterRoleBinding"}},
	{id: "roleRef-name-missing", field: "roleRef.name", value: removed, kinds: []string{"RoleBinding", "ClusterRoleBinding"}},
	{id: "roleRef-missing", field: "roleRef", value: removed, kinds: []string{"RoleBinding", "ClusterRoleBinding"}},
	{id: "subject-kind-enum", field: "subjects[0].kind", value: "Person", kinds: []string{"RoleBinding", "ClusterRoleBinding"}},
	{id: "subject-name-missing", field: "subjects[0].name", value: removed, kinds: []string{"RoleBinding", "ClusterRoleBinding"}},
	{id: "subject-sa-name-underscore", field: "subjects[0].name", value: "web_sa", kinds: []string{"RoleBinding", "ClusterRoleBinding"}},
	{id: "subject-user-email", field: "subjects[1]", value: m{"kind": "User", "name": "jane@example.com", "apiGroup": "rbac.authorization.k8s.io"}, kinds: []string{"RoleBinding", "ClusterRoleBinding"}},
	{id: "subject-group-without-apiGroup", field: "subjects[1]", value: m{"kind": "Group", "name": "devs"}, kinds: []string{"RoleBinding", "ClusterRoleBinding"}},
	{id: "subject-sa-without-namespace", field: "subjects[0].namespace", value: removed, kinds: []string{"RoleBinding", "ClusterRoleBinding"}},
	{id: "roleRef-kind-Role", field: "roleRef.kind", value: "Role", kinds: []string{"ClusterRoleBinding"}},
	// NetworkPolicy
	{id: "podSelector-missing", field: "spec.podSelector", value: removed, kinds: []string{"NetworkPolicy"}},
	{id: "podSelector-value-space", field: "spec.podSelector.matchLabels", value: m{"app": "web app"}, kinds: []string{"NetworkPolicy"}},
	{id: "policyTypes-enum", field: "spec.policyTypes", value: l{"Sideways"}, kinds: []string{"NetworkPolicy"}},
	{id: "cidr-33", field: "spec.ingress[0].from[1].ipBlock.cidr", value: "10.0.0.0/33", kinds: []string{"NetworkPolicy"}},
	{id: "except-outside-cidr", field: "spec.ingress[0].from[1].ipBlock.except", value: l{"192.168.0.0/16"}, kinds: []string{"NetworkPolicy"}},
	{id: "ipBlock-with-podSelector", field: "spec.ingress[0].from[1].podSelector", value: m{}, kinds: []string{"NetworkPolicy"}},
	{id: "netpol-port-70000", field: "spec.ingress[0].ports[0].port", value: 70000, kinds: []string{"NetworkPolicy"}},
	{id: "netpol-port-underscore", field: "spec.ingress[0].ports[0].port", value: "http_port", kinds: []string{"NetworkPolicy"}},
	{id: "netpol-protocol-enum", field: "spec.ingress[0].ports[0].protocol", value: "HTTP", kinds: []string{"NetworkPolicy"}},
	{id: "endPort-below-port", field: "spec.ingress[0].ports[0].endPort", value: 79, kinds: []string{"NetworkPolicy"}},
	// PodDisruptionBudget
	{id: "minAvailable-and-maxUnavailable", field: "spec.maxUnavailable", value: 1, kinds: []string{"PodDisruptionBudget"}},
	{id: "minAvailable-negative", field: "spec.minAvailable", value: -1, kinds: []string{"PodDisruptionBudget"}},
	{id: "minAvailable-150-percent", field: "spec.minAvailable", value: "150%", kinds: []string{"PodDisruptionBudget"}},
	{id: "minAvailable-50-percent", field: "spec.minAvailable", value: "50%", kinds: []string{"PodDisruptionBudget"}},
	{id: "pdb-selector-operator-enum", field: "spec.selector", value: m{"matchExpressions": l{m{"key": "app", "operator": "Is", "values": l{"web"}}}}, kinds: []string{"PodDisruptionBudget"}},
	{id: "unhealthyPodEvictionPolicy-enum", field: "spec.unhealthyPodEvictionPolicy", value: "Sometimes", kinds: []string{"PodDisruptionBudget"}},
	// HorizontalPodAutoscaler
	{id: "minReplicas-0", field: "spec.minReplicas", value: 0, kinds: []string{"HorizontalPodAutoscaler"}},
	{id: "maxReplicas-below-min", field: "spec.maxReplicas", value: 1, kinds: []string{"HorizontalPodAutoscaler"}},
	{id: "maxReplicas-missing", field: "spec.maxReplicas", value: removed, kinds: []string{"HorizontalPodAutoscaler"}},
	{id: "scaleTargetRef-kind-missing", field: "spec.scaleTargetRef.kind", value: removed, kinds: []string{"HorizontalPodAutoscaler"}},
	{id: "scaleTargetRef-name-slash", field: "spec.scaleTargetRef.name", value: "web/app", kinds: []string{"HorizontalPodAutoscaler"}},
	{id: "metric-type-enum", field: "spec.metrics[0].type", value: "Bogus", kinds: []string{"HorizontalPodAutoscaler"}},
	{id: "target-type-enum", field: "spec.metrics[0].resource.target.type", value: "Percent", kinds: []string{"HorizontalPodAutoscaler"}},
	{id: "averageUtilization-missing", field: "spec.metrics[0].resource.target.averageUtilization", value: removed, kinds: []string{"HorizontalPodAutoscaler"}},
	{id: "averageUtilization-0", field: "spec.metrics[0].resource.target.averageUtilization", value: 0, kinds: []string{"HorizontalPodAutoscaler"}},
	{id: "selectPolicy-enum", field: "spec.behavior", value: m{"scaleDown": m{"selectPolicy": "Sometimes"}}, kinds: []string{"HorizontalPodAutoscaler"}},
	{id: "stabilizationWindow-4000", field: "spec.behavior", value: m{"scaleDown": m{"stabilizationWindowSeconds": 4000}}, kinds: []string{"HorizontalPodAutoscaler"}},
	// ResourceQuota
	{id: "hard-1Gib", field: "spec.hard", value: m{"requests.memory": "1Gib"}, kinds: []string{"ResourceQuota"}},
	{id: "hard-negative", field: "spec.hard", value: m{"pods": "-1"}, kinds: []string{"ResourceQuota"}},
	{id: "hard-key-space", field: "spec.hard", value: m{"bad key": "1"}, kinds: []string{"ResourceQuota"}},
	{id: "hard-pods-fraction", field: "spec.hard", value: m{"pods": "1.5"}, kinds: []string{"ResourceQuota"}},
	{id: "scopes-enum", field: "spec.scopes", value: l{"Sometimes"}, kinds: []string{"ResourceQuota"}},
	{id: "scopes-conflicting", field: "spec.scopes", value: l{"Terminating", "NotTerminating"}, kinds: []string{"ResourceQuota"}},
	{id: "scopeSelector-operator-enum", field: "spec.scopeSelector", value: m{"matchExpressions": l{m{"scopeName": "PriorityClass", "operator": "Is", "values": l{"high"}}}}, kinds: []string{"ResourceQuota"}},
	// LimitRange
	{id: "limit-type-enum", field: "spec.limits[0].type", value: "Bogus", kinds: []string{"LimitRange"}},
	{id: "max-below-min", field: "spec.limits[0].max.memory", value: "16Mi", kinds: []string{"LimitRange"}},
	{id: "default-above-max", field: "spec.limits[0].default.memory", value: "2Gi", kinds: []string{"LimitRange"}},
	{id: "defaultRequest-above-default", field: "spec.limits[0].defaultRequest.cpu", value: "1", kinds: []string{"LimitRange"}},
	{id: "Pod-with-default", field: "spec.limits[0].type", value: "Pod", kinds: []string{"LimitRange"}},
	{id: "ratio-below-1", field: "spec.limits[0].maxLimitRequestRatio", value: m{"cpu": "0.5"}, kinds: []string{"LimitRange"}},
	{id: "min-cpu-malformed", field: "spec.limits[0].min.cpu", value: "50mm", kinds: []string{"LimitRange"}},
	// Namespace
	{id: "spec-finalizer-space", field: "spec.finalizers", value: l{"bad finalizer"}, kinds: []string{"Namespace"}},
	{id: "spec-finalizer-kubernetes", field: "spec.finalizers", value: l{"kubernetes"}, kinds: []string{"Namespace"}},
}
