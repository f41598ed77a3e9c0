package policy

import (
	"strings"
	"testing"

	"metacel.dev/metacel/runtime/kinds"
)

// builtinChildPolicy is a policy over an untyped parent whose children may be of the built-in kinds
// users put in policies; its first child entry starts at line 12.
func builtinChildPolicy(children string) string {
	return `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: test}
spec:
  parentResource: {apiVersion: example.com/v1, resource: widgets}
  childResources:
    - {apiVersion: v1, resource: services}
    - {apiVersion: v1, resource: pods}
    - {apiVersion: apps/v1, resource: deployments}
    - {apiVersion: batch/v1, resource: cronjobs}
  children:
` + children
}

func TestLiteralsTheAPIServerRefusesAreErrorsAtTheirLine(t *testing.T) {
	tests := []struct {
		name     string
		children string
		want     []string // the errors, in order; none when the policy loads
	}{
		{"a 77-character Service name", `    - id: svc
      template:
        apiVersion: v1
        kind: Service
        metadata:
          name: a-service-name-of-seventy-seven-characters-which-is-longer-than-a-dns-label
        spec:
          ports: [{port: 80}]
`, []string{`p.yaml:17: spec.children[0].template.metadata.name: the API server would refuse this Service: metadata.name: Invalid value: "a-service-name-of-seventy-seven-characters-which-is-longer-than-a-dns-label": must be no more than 63 characters (fix: shorten metadata.name to at most 63 characters)`}},
		{"a label value with '@' among labels an expression gives", `    - id: svc
      template:
        apiVersion: v1
        kind: Service
        metadata:
          name: web
          labels:
            app: "${parent.metadata.name}"
            owner: ops@example.com
        spec:
          ports: [{port: 80}]
`, []string{`p.yaml:20: spec.children[0].template.metadata.labels.owner: the API server would refuse this Service: metadata.labels: Invalid value: "ops@example.com": a valid label must be an empty string`}},
		{"port 80800, once though the targetPort it defaults is out of range too", `    - id: svc
      template:
        apiVersion: v1
        kind: Service
        metadata: {name: web}
        spec:
          selector: {app: "${parent.metadata.name}"}
          ports:
            - name: http
              port: 80800
`, []string{`p.yaml:21: spec.children[0].template.spec.ports[0].port: the API server would refuse this Service: spec.ports[0].port: Invalid value: 80800: must be between 1 and 65535, inclusive (fix: use a port from 1 to 65535)`}},
		{"a six-field schedule", `    - id: backup
      template:
        apiVersion: batch/v1
        kind: CronJob
        metadata: {name: backup}
        spec:
          schedule: "0 0 3 * * *"
          jobTemplate:
            spec:
              template:
                spec:
                  restartPolicy: OnFailure
                  containers: [{name: backup, image: "${parent.spec.image}"}]
`, []string{`p.yaml:18: spec.children[0].template.spec.schedule: the API server would refuse this CronJob: spec.schedule: Invalid value: "0 0 3 * * *": expected exactly 5 fields, found 6: [0 0 3 * * *] (fix: write five fields`}},
		{"a selector that does not select the template's labels", `    - id: web
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web}
        spec:
          selector:
            matchLabels: {app: web}
          template:
            metadata:
              labels: {app: api}
            spec:
              containers: [{name: app, image: "${parent.spec.image}"}]
`, []string{"p.yaml:22: spec.children[0].template.spec.template.metadata.labels: the API server would refuse this Deployment: spec.template.metadata.labels: Invalid value: {\"app\":\"api\"}: `selector` does not match template `labels` (fix: give spec.template.metadata.labels every label spec.selector matches)"}},
		{"a mount of a volume the pod does not declare, and a container without an image", `    - id: pod
      template:
        apiVersion: v1
        kind: Pod
        metadata: {name: web}
        spec:
          containers:
            - name: app
              volumeMounts: [{name: cache, mountPath: /cache}]
`, []string{
			`p.yaml:19: spec.children[0].template.spec.containers[0]: the API server would refuse this Pod: spec.containers[0].image: Required value (fix: set spec.containers[0].image)`,
			`p.yaml:20: spec.children[0].template.spec.containers[0].volumeMounts[0].name: the API server would refuse this Pod: spec.containers[0].volumeMounts[0].name: Not found: "cache"`,
		}},
		// what expressions give is checked at render
		{"a name an expression gives", `    - id: svc
      template:
        apiVersion: v1
        kind: Service
        metadata: {name: "${parent.spec.name}-a-service-name-that-may-turn-out-longer-than-a-dns-label"}
        spec:
          ports: [{port: "${parent.spec.port}"}]
`, nil},
		{"a selector and labels one expression gives", `    - id: web
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web}
        spec:
          selector: {matchLabels: {app: "${parent.metadata.name}"}}
          template:
            metadata: {labels: {app: "${parent.metadata.name}", tier: front}}
            spec: {containers: [{name: app, image: nginx}]}
`, nil},
		{"literal labels a selector from an expression may select", `    - id: web
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web}
        spec:
          selector: {matchLabels: "${parent.spec.selector}"}
          template:
            metadata: {labels: {app: web}}
            spec: {containers: [{name: app, image: nginx}]}
`, nil},
		{"a mount of a volume an expression may declare", `    - id: pod
      template:
        apiVersion: v1
        kind: Pod
        metadata: {name: web}
        spec:
          volumes: "${parent.spec.volumes}"
          containers: [{name: app, image: nginx, volumeMounts: [{name: cache, mountPath: /cache}]}]
`, nil},
		{"a port and a schedule expressions give", `    - id: backup
      template:
        apiVersion: batch/v1
        kind: CronJob
        metadata: {name: backup}
        spec:
          schedule: "${parent.spec.schedule}"
          jobTemplate: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: b, image: b, ports: [{containerPort: "${parent.spec.port}"}]}]}}}}
`, nil},
		{"an env item an expression gives leaves the rest checked", `    - id: pod
      template:
        apiVersion: v1
        kind: Pod
        metadata: {name: web}
        spec:
          restartPolicy: Sometimes
          containers: [{name: app, image: nginx, env: ["${ {'name': 'OWNER', 'value': parent.metadata.name} }", {name: B, value: b}]}]
`, []string{`p.yaml:18: spec.children[0].template.spec.restartPolicy: the API server would refuse this Pod: spec.restartPolicy: Unsupported value: "Sometimes"`}},
		{"a mount of a volume no one declares, beside an env item an expression gives", `    - id: pod
      template:
        apiVersion: v1
        kind: Pod
        metadata: {name: web}
        spec:
          volumes: [{name: data, emptyDir: {}}]
          containers: [{name: app, image: nginx, env: ["${ {'name': 'A', 'value': 'a'} }"], volumeMounts: [{name: typo, mountPath: /data}]}]
`, []string{`p.yaml:19: spec.children[0].template.spec.containers[0].volumeMounts[0].name: the API server would refuse this Pod`}},
		{"a container an expression gives among literal ones", `    - id: pod
      template:
        apiVersion: v1
        kind: Pod
        metadata: {name: web}
        spec:
          containers: [{name: app}, "${parent.spec.sidecar}"]
`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load("p.yaml", []byte(builtinChildPolicy(tc.children)), kinds.NewCatalog())
			got := Errors(err)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(got), len(tc.want), err)
			}
			for i, want := range tc.want {
				if !strings.HasPrefix(got[i].Error(), want) {
					t.Errorf("error %d:\n%s\nwant it to start with\n%s", i, got[i], want)
				}
			}
		})
	}
}

func TestFieldStepsFollowTheAPIServersPaths(t *testing.T) {
	tests := []struct {
		path string
		want []string
	}{
		{"metadata.name", []string{"metadata", "name"}},
		{"spec.ports[0].targetPort", []string{"spec", "ports", "0", "targetPort"}},
		{"metadata.labels[app.kubernetes.io/name]", []string{"metadata", "labels", "app.kubernetes.io/name"}},
		{"spec.hard[requests.cpu]", []string{"spec", "hard", "requests.cpu"}},
	}
	for _, tc := range tests {
		if got := fieldSteps(tc.path); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("fieldSteps(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}

// A StatefulSet whose claim template an expression gives, which a literal volumeMount names,
// loads: the item left out of the probe is not "not found" (a false error at the mount).
func TestAClaimTemplateAnExpressionGivesIsNoMissingVolume(t *testing.T) {
	text := strings.Replace(builtinChildPolicy(`    - id: db
      template:
        apiVersion: apps/v1
        kind: StatefulSet
        metadata: {name: db}
        spec:
          selector: {matchLabels: {app: db}}
          serviceName: db
          template:
            metadata: {labels: {app: db}}
            spec: {containers: [{name: db, image: postgres, volumeMounts: [{name: data, mountPath: /data}]}]}
          volumeClaimTemplates: ["${ {'metadata': {'name': 'data'}, 'spec': {'accessModes': ['ReadWriteOnce'], 'resources': {'requests': {'storage': '1Gi'}}}} }"]
`), "    - {apiVersion: batch/v1, resource: cronjobs}\n", "    - {apiVersion: batch/v1, resource: cronjobs}\n    - {apiVersion: apps/v1, resource: statefulsets}\n", 1)
	if _, err := Load("p.yaml", []byte(text), kinds.NewCatalog()); err != nil {
		t.Errorf("load: %v, want none", err)
	}
}
