package policy

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/test/testpolicies"
)

// A child resource's cache keeps what the templates set, what readiness by kind or readyWhen
// reads, what expressions read of its children, and what the runtime reads itself (a Pod's
// spec.nodeName, a Secret's immutable); whole where a read cannot be followed. The identifying
// fields, which every cache keeps, are not part of it.
func TestAChildResourceKeepsWhatThePolicyReads(t *testing.T) {
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	head := func(resource string) string {
		return testpolicies.YAML("myapp-head", testpolicies.Fills{"RESOURCE": resource})
	}
	pod := `
    - id: pod
      template:
        apiVersion: v1
        kind: Pod
        metadata: {name: "${parent.metadata.name}"}
        spec:
          containers:
            - {name: app, image: "${parent.spec.image}", ports: [{containerPort: 80}]}
`
	tests := []struct {
		name     string
		policy   string
		resource schema.GroupVersionResource
		want     string // Keep's String; "*": whole
	}{
		{"a template's fields, and what readiness by kind reads", head("pods") + "  children:" + pod, pods,
			"{spec{clusterIP,completions,containers{image,name,ports},nodeName,parallelism,progressDeadlineSeconds,replicas,type,updateStrategy},status}"},
		{"with readyWhen: what it reads instead of readiness by kind", head("pods") + "  children:" + pod + "      readyWhen: child.status.phase == 'Running'\n", pods,
			"{spec{containers{image,name,ports},nodeName},status{phase}}"},
		{"what the status reads of a child", head("pods") + "  children:" + pod + "      readyWhen: 'true'\n  status:\n    ip: \"${children.pod.?status.?podIP.orValue('')}\"\n    node: \"${has(children.pod.spec.nodeName) ? 'yes' : 'no'}\"\n    exists: \"${has(children.pod) ? 'yes' : 'no'}\"\n", pods,
			"{spec{containers{image,name,ports},nodeName},status{podIP}}"},
		{"children read otherwise than by id: whole", head("pods") + "  children:" + pod + "  status:\n    n: \"${[children].size()}\"\n", pods, "*"},
		{"a child passed whole: whole", head("pods") + "  children:" + pod + "  status:\n    n: \"${[children.pod].size()}\"\n", pods, "*"},
		{"an expression child: every resource whole", head("pods") + "  children:\n    - id: pods\n      expression: \"[{'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': parent.metadata.name}}]\"\n", pods, "*"},
		{"a Secret's stringData is kept as data, where the API server stores it", head("secrets") + `  children:
    - id: s
      template:
        apiVersion: v1
        kind: Secret
        metadata: {name: "${parent.metadata.name}"}
        stringData: {password: "${parent.spec.image}"}
`, secrets, "{data,immutable,spec{clusterIP,completions,parallelism,progressDeadlineSeconds,replicas,type,updateStrategy},status,stringData{password}}"},
		{"a pod spec's serviceAccountName is kept with serviceAccount, which the API server sets to it", head("pods") + `  children:
    - id: pod
      template:
        apiVersion: v1
        kind: Pod
        metadata: {name: "${parent.metadata.name}"}
        spec:
          serviceAccountName: runner
          containers: [{name: app, image: "${parent.spec.image}"}]
      readyWhen: 'true'
`, pods, "{spec{containers{image,name},nodeName,serviceAccount,serviceAccountName}}"},
	}
	configmaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	tests = append(tests, struct {
		name     string
		policy   string
		resource schema.GroupVersionResource
		want     string
	}{"a key with a dot is one field (data['config.yaml']), not a path", head("configmaps") + `  children:
    - id: c
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${parent.metadata.name}"}
        data: {a: "${parent.spec.image}"}
      readyWhen: 'true'
  status:
    config: "${children.c.?data['config.yaml'].orValue('')}"
    cert: "${children.c.data[?'tls.crt'].orValue('')}"
`, configmaps, "{data{a,config.yaml,tls.crt},immutable}"})
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	jobs := schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	headOf := func(gvr schema.GroupVersionResource) string { // a head whose child resource is of another group
		return strings.Replace(head(gvr.Resource), "apiVersion: v1\n      resource:", "apiVersion: "+gvr.GroupVersion().String()+"\n      resource:", 1)
	}
	tests = append(tests, []struct {
		name     string
		policy   string
		resource schema.GroupVersionResource
		want     string
	}{
		{"a Deployment keeps what its template sets and its readyWhen reads, not the whole object", headOf(deployments) + `  children:
    - id: d
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: "${parent.metadata.name}"}
        spec:
          replicas: 1
          selector: {matchLabels: {app: a}}
          template: {metadata: {labels: {app: a}}, spec: {containers: [{name: app, image: "${parent.spec.image}"}]}}
      readyWhen: child.?status.?availableReplicas.orValue(0) >= 1
`, deployments, "{spec{replicas,selector,template{metadata,spec{containers{image,name}}}},status{availableReplicas}}"},
		{"a Job keeps whether it is suspended and started, which the runtime reads", headOf(jobs) + `  children:
    - id: j
      template:
        apiVersion: batch/v1
        kind: Job
        metadata: {name: "${parent.metadata.name}"}
        spec:
          template: {spec: {restartPolicy: Never, containers: [{name: app, image: "${parent.spec.image}"}]}}
      readyWhen: 'true'
`, jobs, "{spec{suspend,template{spec{containers{image,name},restartPolicy}}},status{startTime}}"},
		{"every key of a keyed list the template writes into, one it leaves to its default too (a port's protocol)", head("services") + `  children:
    - id: s
      template:
        apiVersion: v1
        kind: Service
        metadata: {name: "${parent.metadata.name}"}
        spec:
          ports: [{name: dns, port: "${size(parent.metadata.name)}"}]
      readyWhen: 'true'
`, schema.GroupVersionResource{Version: "v1", Resource: "services"}, "{spec{ports{name,port,protocol}}}"},
	}...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := load(t, tc.policy)
			got := c.ChildResources[tc.resource].Keep.String()
			if got != tc.want {
				t.Errorf("Keep = %s\nwant   %s", got, tc.want)
			}
		})
	}
}
