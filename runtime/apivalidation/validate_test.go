package apivalidation

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

func object(t *testing.T, text string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(text), &u.Object); err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	return u
}

// podSpec is a valid pod spec, for the kinds that hold one.
const podSpec = `{containers: [{name: app, image: nginx, ports: [{name: http, containerPort: 8080}], volumeMounts: [{name: data, mountPath: /data}], env: [{name: MODE, value: x}]}], volumes: [{name: data, emptyDir: {}}]}`

// valid holds a valid object of each kind Validate knows, as a policy would write it.
var valid = map[string]string{
	"Pod":                     `{apiVersion: v1, kind: Pod, metadata: {name: web-0, namespace: shop, labels: {app: web}}, spec: ` + podSpec + `}`,
	"Service":                 `{apiVersion: v1, kind: Service, metadata: {name: web}, spec: {selector: {app: web}, ports: [{name: http, port: 80, targetPort: http}, {name: metrics, port: 9090, protocol: TCP}]}}`,
	"ConfigMap":               `{apiVersion: v1, kind: ConfigMap, metadata: {name: web-config, annotations: {example.com/owner: ops@example.com}}, data: {app.properties: "a=b"}}`,
	"Secret":                  `{apiVersion: v1, kind: Secret, metadata: {name: web-secret}, type: Opaque, stringData: {password: s3cr3t}}`,
	"PersistentVolumeClaim":   `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}`,
	"ServiceAccount":          `{apiVersion: v1, kind: ServiceAccount, metadata: {name: web}}`,
	"ResourceQuota":           `{apiVersion: v1, kind: ResourceQuota, metadata: {name: quota}, spec: {hard: {pods: "10", requests.cpu: "4"}}}`,
	"LimitRange":              `{apiVersion: v1, kind: LimitRange, metadata: {name: limits}, spec: {limits: [{type: Container, default: {cpu: 500m}, defaultRequest: {cpu: 100m}}]}}`,
	"Namespace":               `{apiVersion: v1, kind: Namespace, metadata: {name: team-a}}`,
	"Deployment":              `{apiVersion: apps/v1, kind: Deployment, metadata: {name: web}, spec: {replicas: 2, selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web, tier: front}}, spec: ` + podSpec + `}}}`,
	"StatefulSet":             `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: db}, spec: {serviceName: db, selector: {matchLabels: {app: db}}, template: {metadata: {labels: {app: db}}, spec: ` + podSpec + `}}}`,
	"DaemonSet":               `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: agent}, spec: {selector: {matchLabels: {app: agent}}, template: {metadata: {labels: {app: agent}}, spec: ` + podSpec + `}}}`,
	"ReplicaSet":              `{apiVersion: apps/v1, kind: ReplicaSet, metadata: {name: web-1}, spec: {selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: ` + podSpec + `}}}`,
	"Job":                     `{apiVersion: batch/v1, kind: Job, metadata: {name: migrate}, spec: {template: {spec: {restartPolicy: Never, containers: [{name: migrate, image: busybox}]}}}}`,
	"CronJob":                 `{apiVersion: batch/v1, kind: CronJob, metadata: {name: backup}, spec: {schedule: "0 3 * * *", timeZone: Europe/Paris, jobTemplate: {spec: {template: {spec: {restartPolicy: OnFailure, containers: [{name: backup, image: busybox}]}}}}}}`,
	"Ingress":                 `{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: web}, spec: {rules: [{host: shop.example.com, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {name: http}}}}]}}]}}`,
	"NetworkPolicy":           `{apiVersion: networking.k8s.io/v1, kind: NetworkPolicy, metadata: {name: web}, spec: {podSelector: {matchLabels: {app: web}}, ingress: [{ports: [{port: 8080, protocol: TCP}]}]}}`,
	"PodDisruptionBudget":     `{apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: web}, spec: {minAvailable: 1, selector: {matchLabels: {app: web}}}}`,
	"HorizontalPodAutoscaler": `{apiVersion: autoscaling/v2, kind: HorizontalPodAutoscaler, metadata: {name: web}, spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}, minReplicas: 2, maxReplicas: 10, metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}}]}}`,
	"Role":                    `{apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: reader}, rules: [{apiGroups: [""], resources: [pods], verbs: [get, list]}]}`,
	"ClusterRole":             `{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: tenant-reader}, rules: [{apiGroups: [""], resources: [namespaces], verbs: [get]}]}`,
	"RoleBinding":             `{apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: readers}, roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}, subjects: [{kind: User, name: ops@example.com, apiGroup: rbac.authorization.k8s.io}]}`,
	"ClusterRoleBinding":      `{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRoleBinding, metadata: {name: tenant-readers}, roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: tenant-reader}, subjects: [{kind: ServiceAccount, name: web, namespace: shop}]}`,
}

func TestValidObjectsOfEveryKindPass(t *testing.T) {
	if len(valid) != len(builtinKinds) {
		t.Errorf("%d valid objects for %d kinds: give each kind one", len(valid), len(builtinKinds))
	}
	for kind, text := range valid {
		t.Run(kind, func(t *testing.T) {
			obj := object(t, text)
			if !Knows(obj.GroupVersionKind()) {
				t.Fatalf("Knows(%s) = false", obj.GroupVersionKind())
			}
			if errs := Validate(obj); len(errs) > 0 {
				t.Errorf("%s is valid, got %v", kind, errs.ToAggregate())
			}
		})
	}
}

// mutate replaces old with new in the valid object of a kind.
func mutate(t *testing.T, kind, old, new string) string {
	t.Helper()
	text := valid[kind]
	if !strings.Contains(text, old) {
		t.Fatalf("the valid %s has no %q", kind, old)
	}
	return strings.Replace(text, old, new, 1)
}

func TestTheAPIServersRefusals(t *testing.T) {
	long := strings.Repeat("a", 77)
	tests := []struct {
		name, kind, old, new string
		want                 []string // the errors, as the API server gives them
	}{
		// names by kind
		{"a 77-character Service name: a DNS-1035 label of at most 63", "Service", "name: web}", "name: " + long + "}",
			[]string{`metadata.name: Invalid value: "` + long + `": must be no more than 63 characters`}},
		{"a Service name that starts with a digit: a DNS-1123 label since 1.36 (RelaxedServiceNameValidation)", "Service", "name: web}", "name: 1web}", nil},
		{"a Service name with a dot", "Service", "name: web}", "name: web.shop}",
			[]string{`metadata.name: Invalid value: "web.shop": must not contain dots`}},
		{"a ConfigMap name may hold dots (a DNS-1123 subdomain)", "ConfigMap", "name: web-config", "name: web.config", nil},
		{"a ConfigMap name in capitals", "ConfigMap", "name: web-config", "name: Web-Config",
			[]string{`metadata.name: Invalid value: "Web-Config": a lowercase RFC 1123 subdomain must consist of`}},
		{"a Namespace name with a dot (a DNS-1123 label)", "Namespace", "name: team-a", "name: team.a",
			[]string{`metadata.name: Invalid value: "team.a": must not contain dots`}},
		{"a namespace that is no DNS-1123 label", "Pod", "namespace: shop", "namespace: Shop_1",
			[]string{`metadata.namespace: Invalid value: "Shop_1": a lowercase RFC 1123 label must consist of`}},
		// labels and annotations
		{"a label value with '@'", "Pod", "labels: {app: web}", "labels: {app: web, owner: ops@example.com}",
			[]string{`metadata.labels: Invalid value: "ops@example.com": a valid label must be an empty string or consist of alphanumeric characters`}},
		{"a label key with two slashes", "Pod", "labels: {app: web}", "labels: {a/b/c: web}",
			[]string{`metadata.labels: Invalid value: "a/b/c": a valid label key must consist of alphanumeric characters, '-', '_' or '.'`}},
		{"a label value of 64 characters", "Pod", "labels: {app: web}", "labels: {app: " + strings.Repeat("w", 64) + "}",
			[]string{`metadata.labels: Invalid value: "` + strings.Repeat("w", 64) + `": must be no more than 63 bytes`}},
		{"an annotation key with a space", "ConfigMap", "example.com/owner", "owner name",
			[]string{`metadata.annotations: Invalid value: "owner name": name part must consist of alphanumeric characters`}},
		{"annotations over 256 KiB", "ConfigMap", "ops@example.com", strings.Repeat("x", 256*1024),
			[]string{`metadata.annotations: Too long: may not be more than 262144 bytes`}},
		// ports
		{"port 80800", "Service", "port: 80,", "port: 80800,",
			[]string{`spec.ports[0].port: Invalid value: 80800: must be between 1 and 65535, inclusive`}},
		{"a port name with capitals", "Service", "{name: http, port: 80", "{name: HTTP, port: 80",
			[]string{`spec.ports[0].name: Invalid value: "HTTP": a lowercase RFC 1123 label must consist of lower case alphanumeric characters`}},
		{"two ports with one name", "Service", "name: metrics", "name: http",
			[]string{`spec.ports[1].name: Duplicate value: "http"`}},
		{"an unknown protocol", "Service", "protocol: TCP", "protocol: HTTP",
			[]string{`spec.ports[1].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"`}},
		{"a targetPort name longer than 15", "Service", "targetPort: http", "targetPort: http-of-the-web-app",
			[]string{`spec.ports[0].targetPort: Invalid value: "http-of-the-web-app": must be no more than 15 characters`}},
		{"a containerPort out of range", "Pod", "containerPort: 8080", "containerPort: 70000",
			[]string{`spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive`}},
		// a workload's selector
		{"a selector that does not select the template's labels", "Deployment", "matchLabels: {app: web}", "matchLabels: {app: api}",
			[]string{"spec.template.metadata.labels: Invalid value: {\"app\":\"web\",\"tier\":\"front\"}: `selector` does not match template `labels`"}},
		{"a StatefulSet's selector too", "StatefulSet", "matchLabels: {app: db}", "matchLabels: {app: web}",
			[]string{"spec.template.metadata.labels: Invalid value: {\"app\":\"db\"}: `selector` does not match template `labels`"}},
		{"a DaemonSet's selector too", "DaemonSet", "matchLabels: {app: agent}", "matchLabels: {app: web}",
			[]string{"`selector` does not match template `labels`"}},
		{"a ReplicaSet's selector too", "ReplicaSet", "matchLabels: {app: web}", "matchLabels: {app: web, tier: back}",
			[]string{"`selector` does not match template `labels`"}},
		{"a Job's generated selector selects its template", "Job", "template: {spec:", "template: {metadata: {labels: {app: migrate}}, spec:", nil},
		// a CronJob's schedule
		{"a six-field schedule", "CronJob", `"0 3 * * *"`, `"0 0 3 * * *"`,
			[]string{`spec.schedule: Invalid value: "0 0 3 * * *": expected exactly 5 fields, found 6: [0 0 3 * * *]`}},
		{"@every", "CronJob", `"0 3 * * *"`, `"@every 1h30m"`, nil},
		{"a descriptor", "CronJob", `"0 3 * * *"`, `"@weekly"`, nil},
		{"an unknown descriptor", "CronJob", `"0 3 * * *"`, `"@fortnightly"`,
			[]string{`spec.schedule: Invalid value: "@fortnightly": unrecognized descriptor: @fortnightly`}},
		{"a time zone in the schedule", "CronJob", `"0 3 * * *"`, `"CRON_TZ=Europe/Paris 0 3 * * *"`,
			[]string{`spec.schedule: Invalid value: "CRON_TZ=Europe/Paris 0 3 * * *": cannot use TZ or CRON_TZ in schedule, use timeZone field instead`}},
		{"an unknown time zone", "CronJob", "timeZone: Europe/Paris", "timeZone: Mars/Olympus",
			[]string{`spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus`}},
		{"a Job template that restarts Always", "CronJob", "restartPolicy: OnFailure", "restartPolicy: Always",
			[]string{`spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`}},
		// containers, env, volumes
		{"two containers with one name", "Deployment", "containers: [{name: app, image: nginx,", "containers: [{name: app, image: busybox}, {name: app, image: nginx,",
			[]string{`spec.template.spec.containers[1].name: Duplicate value: "app"`}},
		{"a container without an image", "Pod", "image: nginx, ", "",
			[]string{`spec.containers[0].image: Required value`}},
		{"an env var name with '='", "Pod", "name: MODE", "name: MODE=x",
			[]string{`spec.containers[0].env[0].name: Invalid value: "MODE=x": a valid environment variable name must consist only of printable ASCII characters other than '='`}},
		{"a volume name with capitals", "Pod", "volumes: [{name: data", "volumes: [{name: Data",
			[]string{`spec.volumes[0].name: Invalid value: "Data": a lowercase RFC 1123 label must consist of`, `spec.containers[0].volumeMounts[0].name: Not found: "data"`}},
		{"a mount of a volume the pod does not have", "Deployment", "volumeMounts: [{name: data", "volumeMounts: [{name: cache",
			[]string{`spec.template.spec.containers[0].volumeMounts[0].name: Not found: "cache"`}},
		// what else policies write
		{"a PDB with minAvailable and maxUnavailable", "PodDisruptionBudget", "minAvailable: 1", "minAvailable: 1, maxUnavailable: 1",
			[]string{`minAvailable and maxUnavailable cannot be both set`}},
		{"an HPA with maxReplicas below minReplicas", "HorizontalPodAutoscaler", "maxReplicas: 10", "maxReplicas: 1",
			[]string{"spec.maxReplicas: Invalid value: 1: must be greater than or equal to `minReplicas`"}},
		{"an Ingress path that is not absolute", "Ingress", "path: /,", "path: shop,",
			[]string{`spec.rules[0].http.paths[0].path: Invalid value: "shop": must be an absolute path`}},
		{"a RoleBinding to a kind of role that does not exist", "RoleBinding", "kind: Role,", "kind: Roles,",
			[]string{`roleRef.kind: Unsupported value: "Roles": supported values: "Role", "ClusterRole"`}},
		{"a PVC without access modes", "PersistentVolumeClaim", "accessModes: [ReadWriteOnce], ", "",
			[]string{`spec.accessModes: Required value: at least 1 access mode is required`}},
		{"a quota on a resource that is no resource name", "ResourceQuota", "pods:", "pods_count:",
			[]string{`spec.hard[pods_count]: Invalid value: "pods_count": must be a standard resource type or fully qualified`, `spec.hard[pods_count]: Invalid value: "pods_count": must be a standard resource for quota`}},
		{"a NetworkPolicy port out of range", "NetworkPolicy", "port: 8080", "port: 80800",
			[]string{`spec.ingress[0].ports[0].port: Invalid value: 80800: must be between 1 and 65535, inclusive`}},
		{"a ConfigMap key with a slash", "ConfigMap", "app.properties", "conf/app.properties",
			[]string{`data[conf/app.properties]: Invalid value: "conf/app.properties": a valid config key must consist of alphanumeric characters`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := Validate(object(t, mutate(t, tc.kind, tc.old, tc.new)))
			if len(errs) != len(tc.want) {
				t.Fatalf("got %d errors, want %d: %v", len(errs), len(tc.want), errs.ToAggregate())
			}
			for i, want := range tc.want {
				if !strings.Contains(errs[i].Error(), want) {
					t.Errorf("error %d: %q, want it to contain %q", i, errs[i].Error(), want)
				}
			}
		})
	}
}

func TestKindsItDoesNotKnowAreNotValidated(t *testing.T) {
	tests := []struct{ name, text string }{
		{"a custom resource", `{apiVersion: example.com/v1, kind: Gadget, metadata: {name: "Not A Name!"}}`},
		{"a built-in kind outside the list", `{apiVersion: storage.k8s.io/v1, kind: StorageClass, metadata: {name: "Not A Name!"}}`},
		{"a version the API server no longer serves", `{apiVersion: extensions/v1beta1, kind: Deployment, metadata: {name: "Not A Name!"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj := object(t, tc.text)
			if Knows(obj.GroupVersionKind()) {
				t.Errorf("Knows(%s) = true", obj.GroupVersionKind())
			}
			if errs := Validate(obj); errs != nil {
				t.Errorf("got %v, want nil", errs)
			}
		})
	}
	if !Knows(schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "HorizontalPodAutoscaler"}) {
		t.Error("autoscaling/v1 HorizontalPodAutoscaler: each served version of a kind is known")
	}
}

func TestValidateDoesNotModifyTheObject(t *testing.T) {
	obj := object(t, valid["Job"]+"\n")
	obj.Object["status"] = map[string]any{"active": int64(1)}
	before := obj.DeepCopy()
	Validate(obj)
	if !reflect.DeepEqual(obj.Object, before.Object) {
		t.Errorf("Validate changed the object:\n%v\nwas\n%v", obj.Object, before.Object)
	}
}

func TestARefusalSaysWhatTheAPIServerSaysAndTheFix(t *testing.T) {
	tests := []struct {
		name, kind, old, new string
		want                 string
	}{
		{"a selector that does not select the template's labels", "Deployment", "matchLabels: {app: web}", "matchLabels: {app: api}",
			"Deployment.apps \"web\" is invalid: spec.template.metadata.labels: Invalid value: {\"app\":\"web\",\"tier\":\"front\"}: `selector` does not match template `labels` (fix: give spec.template.metadata.labels every label spec.selector matches)"},
		{"a label value with '@'", "Pod", "labels: {app: web}", "labels: {owner: ops@example.com}",
			`(fix: a label value is at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit: put other text in an annotation)`},
		{"a 77-character name", "Service", "name: web}", "name: " + strings.Repeat("s", 77) + "}",
			`(fix: shorten metadata.name to at most 63 characters)`},
		{"port 80800, once for port and the targetPort it defaults", "Service", "port: 9090,", "port: 80800,",
			`Service "web" is invalid: [spec.ports[1].port: Invalid value: 80800: must be between 1 and 65535, inclusive, spec.ports[1].targetPort: Invalid value: 80800: must be between 1 and 65535, inclusive] (fix: use a port from 1 to 65535)`},
		{"a six-field schedule", "CronJob", `"0 3 * * *"`, `"0 0 3 * * *"`,
			`(fix: write five fields, minute hour day-of-month month day-of-week ("0 3 * * *"), or a descriptor ("@daily", "@every 1h"), with any time zone in spec.timeZone)`},
		{"a Job's name longer than a label value, which the API server copies into one", "Job", "name: migrate}", "name: " + strings.Repeat("j", 64) + "}",
			`(fix: shorten the Job's metadata.name to at most 63 characters: the API server copies it into the label job-name of its Pods)`},
		{"a Job's restartPolicy Always, which it does not take", "Job", "restartPolicy: Never", "restartPolicy: Always",
			`(fix: set spec.template.spec.restartPolicy to one of the valid values it names, whatever it holds now)`},
		{"an error without a known fix", "HorizontalPodAutoscaler", "maxReplicas: 10", "maxReplicas: 1",
			"HorizontalPodAutoscaler.autoscaling \"web\" is invalid: spec.maxReplicas: Invalid value: 1: must be greater than or equal to `minReplicas`"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj := object(t, mutate(t, tc.kind, tc.old, tc.new))
			err := Refuse(obj)
			if err == nil {
				t.Fatal("accepted, want refused")
			}
			got := err.Error()
			if !strings.Contains(got, tc.want) {
				t.Errorf("got\n%s\nwant it to contain\n%s", got, tc.want)
			}
			if strings.HasSuffix(tc.want, "`") && strings.Contains(got, "(fix:") {
				t.Errorf("got a fix where none is known: %s", got)
			}
		})
	}
}

// BenchmarkValidateADeployment: what a render spends on the validation of one child.
func BenchmarkValidateADeployment(b *testing.B) {
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(valid["Deployment"]), &obj.Object); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if errs := Validate(obj); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}
