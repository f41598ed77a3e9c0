package decide_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/decide"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/preview"
	"metacel.dev/metacel/runtime/render"
)

// immutablePolicy makes one child of RESOURCE (updateStrategy METHOD) from TEMPLATE, whose values
// come from the parent ConfigMap's data.a and data.b.
const immutablePolicy = `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: imm}
spec:
  parentResource: {apiVersion: v1, resource: configmaps}
  childResources:
    - {apiVersion: GROUPVERSION, resource: RESOURCE, updateStrategy: {method: METHOD}}
  children:
    - id: c
      template:
TEMPLATE`

func TestAnUpdateOfAnImmutableFieldIsRefused(t *testing.T) {
	tests := []struct {
		name, groupVersion, resource, method, template string
		before, after                                  map[string]any // the parent's data, then
		// server adds to the observed child what the API server would (defaults, generated labels)
		server func(obj map[string]any)
		want   string // the steps
		why    string // a part of the refusal's message
	}{
		{"a Deployment's new selector is refused", "apps/v1", "deployments", "InPlace", deployment,
			map[string]any{"a": "x", "b": "1"}, map[string]any{"a": "y", "b": "1"}, nil,
			"refuse Deployment", "Deployment ns/p-c: the policy changes spec.selector, which the API server does not let change on an existing Deployment (it would refuse the update as Invalid: field is immutable): set updateStrategy {method: Recreate} on apps/v1 deployments in spec.childResources, or give the child a name that changes with spec.selector"},
		{"a Deployment's new replicas are applied", "apps/v1", "deployments", "InPlace", deployment,
			map[string]any{"a": "x", "b": "1"}, map[string]any{"a": "x", "b": "2"}, nil, "update Deployment", ""},
		{"a Deployment's new selector under Recreate is recreated", "apps/v1", "deployments", "Recreate", deployment,
			map[string]any{"a": "x", "b": "1"}, map[string]any{"a": "y", "b": "1"}, nil, "recreate Deployment", ""},
		{"a RoleBinding's new roleRef is refused", "rbac.authorization.k8s.io/v1", "rolebindings", "InPlace", `        apiVersion: rbac.authorization.k8s.io/v1
        kind: RoleBinding
        metadata: {name: "${parent.metadata.name}-c"}
        roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "${parent.data.a}"}
        subjects: [{kind: ServiceAccount, name: "${parent.data.b}"}]
`, map[string]any{"a": "view", "b": "s"}, map[string]any{"a": "edit", "b": "s"}, nil,
			"refuse RoleBinding", "the policy changes roleRef, which the API server does not let change on an existing RoleBinding"},
		{"a StatefulSet's new volumeClaimTemplates are refused", "apps/v1", "statefulsets", "InPlace", `        apiVersion: apps/v1
        kind: StatefulSet
        metadata: {name: "${parent.metadata.name}-c"}
        spec:
          selector: {matchLabels: {app: x}}
          template: {metadata: {labels: {app: x}}, spec: {containers: [{name: c, image: i}]}}
          volumeClaimTemplates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: "${parent.data.a}"}}}}]
`, map[string]any{"a": "1Gi"}, map[string]any{"a": "2Gi"}, func(obj map[string]any) {
			vct := obj["spec"].(map[string]any)["volumeClaimTemplates"].([]any)[0].(map[string]any)
			vct["spec"].(map[string]any)["volumeMode"] = "Filesystem"
			vct["status"] = map[string]any{"phase": "Pending"}
		}, "refuse StatefulSet", "the policy changes spec.volumeClaimTemplates"},
		{"a Job's template with the labels the API server adds is no change", "batch/v1", "jobs", "InPlace", `        apiVersion: batch/v1
        kind: Job
        metadata: {name: "${parent.metadata.name}-c"}
        spec:
          parallelism: "${int(parent.data.b)}"
          template: {spec: {restartPolicy: Never, containers: [{name: c, image: "${parent.data.a}"}]}}
`, map[string]any{"a": "i", "b": "1"}, map[string]any{"a": "i", "b": "2"}, func(obj map[string]any) {
			spec := obj["spec"].(map[string]any)
			spec["selector"] = map[string]any{"matchLabels": map[string]any{"batch.kubernetes.io/controller-uid": "u"}}
			spec["template"].(map[string]any)["metadata"] = map[string]any{"labels": map[string]any{"batch.kubernetes.io/controller-uid": "u", "job-name": "p-c"}}
			spec["template"].(map[string]any)["spec"].(map[string]any)["dnsPolicy"] = "ClusterFirst"
		}, "update Job", ""},
		{"a suspended Job that never started takes a new nodeSelector", "batch/v1", "jobs", "InPlace", `        apiVersion: batch/v1
        kind: Job
        metadata: {name: "${parent.metadata.name}-c"}
        spec:
          suspend: true
          template: {spec: {restartPolicy: Never, nodeSelector: {zone: "${parent.data.a}"}, containers: [{name: c, image: i}]}}
`, map[string]any{"a": "x"}, map[string]any{"a": "y"}, nil, "update Job", ""},
		{"a suspended Job that started refuses a new nodeSelector", "batch/v1", "jobs", "InPlace", `        apiVersion: batch/v1
        kind: Job
        metadata: {name: "${parent.metadata.name}-c"}
        spec:
          suspend: true
          template: {spec: {restartPolicy: Never, nodeSelector: {zone: "${parent.data.a}"}, containers: [{name: c, image: i}]}}
`, map[string]any{"a": "x"}, map[string]any{"a": "y"}, func(obj map[string]any) {
			obj["status"] = map[string]any{"startTime": "2026-11-30T10:00:00Z"}
		}, "refuse Job", "the policy changes spec.template"},
		{"a suspended Job that never started refuses a new image", "batch/v1", "jobs", "InPlace", `        apiVersion: batch/v1
        kind: Job
        metadata: {name: "${parent.metadata.name}-c"}
        spec:
          suspend: true
          template: {spec: {restartPolicy: Never, containers: [{name: c, image: "${parent.data.a}"}]}}
`, map[string]any{"a": "x"}, map[string]any{"a": "y"}, nil, "refuse Job", "the policy changes spec.template"},
		{"a Job's new template is refused", "batch/v1", "jobs", "InPlace", `        apiVersion: batch/v1
        kind: Job
        metadata: {name: "${parent.metadata.name}-c"}
        spec:
          template: {spec: {restartPolicy: Never, containers: [{name: c, image: "${parent.data.a}"}]}}
`, map[string]any{"a": "i"}, map[string]any{"a": "j"}, nil, "refuse Job", "the policy changes spec.template"},
		{"a Service's clusterIP \"\" the API server allocated is no change", "v1", "services", "InPlace", `        apiVersion: v1
        kind: Service
        metadata: {name: "${parent.metadata.name}-c"}
        spec: {clusterIP: "", selector: {app: x}, ports: [{port: "${int(parent.data.b)}"}]}
`, map[string]any{"b": "80"}, map[string]any{"b": "81"}, func(obj map[string]any) {
			obj["spec"].(map[string]any)["clusterIP"] = "10.96.0.7"
		}, "update Service", ""},
		{"a Service's new clusterIP is refused", "v1", "services", "InPlace", `        apiVersion: v1
        kind: Service
        metadata: {name: "${parent.metadata.name}-c"}
        spec: {clusterIP: "${parent.data.a}", selector: {app: x}, ports: [{port: 80}]}
`, map[string]any{"a": "10.96.0.7"}, map[string]any{"a": "10.96.0.8"}, nil, "refuse Service", "the policy changes spec.clusterIP"},
		{"a Pod's new env is refused", "v1", "pods", "InPlace", `        apiVersion: v1
        kind: Pod
        metadata: {name: "${parent.metadata.name}-c"}
        spec: {containers: [{name: c, image: i, env: [{name: A, value: "${parent.data.a}"}]}]}
`, map[string]any{"a": "x"}, map[string]any{"a": "y"}, nil, "refuse Pod", "the policy changes spec, which the API server does not let change on an existing Pod"},
		{"a Pod held by scheduling gates takes a nodeSelector key added", "v1", "pods", "InPlace", `        apiVersion: v1
        kind: Pod
        metadata: {name: "${parent.metadata.name}-c"}
        spec: {schedulingGates: [{name: example.com/queue}], nodeSelector: "${parent.data.a == 'x' ? {'zone': 'a'} : {'zone': 'a', 'rack': '1'}}", containers: [{name: c, image: i}]}
`, map[string]any{"a": "x"}, map[string]any{"a": "y"}, nil, "update Pod", ""},
		{"a Pod held by scheduling gates refuses a nodeSelector value changed", "v1", "pods", "InPlace", `        apiVersion: v1
        kind: Pod
        metadata: {name: "${parent.metadata.name}-c"}
        spec: {schedulingGates: [{name: example.com/queue}], nodeSelector: {zone: "${parent.data.a}"}, containers: [{name: c, image: i}]}
`, map[string]any{"a": "x"}, map[string]any{"a": "y"}, nil, "refuse Pod", "the policy changes spec"},
		{"a Pod's new image is applied", "v1", "pods", "InPlace", `        apiVersion: v1
        kind: Pod
        metadata: {name: "${parent.metadata.name}-c"}
        spec: {containers: [{name: c, image: "${parent.data.a}"}]}
`, map[string]any{"a": "x"}, map[string]any{"a": "y"}, nil, "update Pod", ""},
		{"a Job's new completionMode is refused", "batch/v1", "jobs", "InPlace", `        apiVersion: batch/v1
        kind: Job
        metadata: {name: "${parent.metadata.name}-c"}
        spec:
          completionMode: "${parent.data.a}"
          template: {spec: {restartPolicy: Never, containers: [{name: c, image: i}]}}
`, map[string]any{"a": "NonIndexed"}, map[string]any{"a": "Indexed"}, nil, "refuse Job", "the policy changes spec.completionMode"},
		{"an immutable ConfigMap's new data is refused", "v1", "configmaps", "InPlace", `        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${parent.metadata.name}-c"}
        immutable: true
        data: {k: "${parent.data.a}"}
`, map[string]any{"a": "x"}, map[string]any{"a": "y"}, nil, "refuse ConfigMap", "the policy changes data"},
		{"a mutable ConfigMap's new data is applied", "v1", "configmaps", "InPlace", `        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${parent.metadata.name}-c"}
        data: {k: "${parent.data.a}"}
`, map[string]any{"a": "x"}, map[string]any{"a": "y"}, nil, "update ConfigMap", ""},
		{"a custom child's field with the rule self == oldSelf is refused", "example.com/v1", "gadgets", "InPlace", `        apiVersion: example.com/v1
        kind: Gadget
        metadata: {name: "${parent.metadata.name}-c"}
        spec: {storage: "${parent.data.a}", size: "${int(parent.data.b)}"}
`, map[string]any{"a": "x", "b": "1"}, map[string]any{"a": "y", "b": "1"}, nil,
			"refuse Gadget", "Gadget ns/p-c: the policy changes spec.storage, which the API server does not let change on an existing Gadget"},
		{"a custom child's other fields are applied", "example.com/v1", "gadgets", "InPlace", `        apiVersion: example.com/v1
        kind: Gadget
        metadata: {name: "${parent.metadata.name}-c"}
        spec: {storage: "${parent.data.a}", size: "${int(parent.data.b)}"}
`, map[string]any{"a": "x", "b": "1"}, map[string]any{"a": "x", "b": "2"}, nil, "update Gadget", ""},
	}
	catalog, err := kinds.LoadCRDFiles([]string{filepath.Join("testdata", "gadget-crd.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.NewReplacer("GROUPVERSION", tc.groupVersion, "RESOURCE", tc.resource, "METHOD", tc.method, "TEMPLATE", tc.template).Replace(immutablePolicy)
			compiled, err := policy.Load("imm.yaml", []byte(text), catalog)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			c := compiled[0]
			p := object(t, parent)
			p.Object["data"] = tc.before
			out, err := render.Render(context.Background(), c, render.Input{Parent: p, Mapper: catalog})
			if err != nil {
				t.Fatal(err)
			}
			obs := out.Children[0].Object.DeepCopy()
			obs.SetUID("c-1")
			if tc.server != nil {
				tc.server(obs.Object)
			}
			p.Object["data"] = tc.after
			out, kids, err := render.RenderObserved(context.Background(), c, render.Input{Parent: p, Mapper: catalog}, []*unstructured.Unstructured{obs})
			if err != nil {
				t.Fatal(err)
			}
			steps := decide.Writes(out, kids, c)
			var got []string
			for _, s := range steps {
				got = append(got, string(s.Action)+" "+s.Child.Object.GetKind())
			}
			if strings.Join(got, ",") != tc.want {
				t.Fatalf("steps %q, want %q (%v)", strings.Join(got, ","), tc.want, steps)
			}
			refusal := decide.Refusal(steps)
			if tc.why == "" {
				if refusal != nil {
					t.Fatalf("refusal %v, want none", refusal)
				}
				return
			}
			if refusal == nil || !strings.Contains(refusal.Error(), tc.why) {
				t.Fatalf("refusal %v, want it to contain %q", refusal, tc.why)
			}
			// offline, the sync fails as the runtime's does: Synced=False, ApplyFailed
			_, err = preview.Run(context.Background(), preview.Input{Policy: c, Parent: p, Mapper: catalog, Observed: []*unstructured.Unstructured{obs}})
			var re *render.Error
			if !errors.As(err, &re) || re.Reason != contract.ReasonApplyFailed || !strings.Contains(preview.ErrorText(err), "ApplyFailed: "+refusal.Error()) {
				t.Errorf("preview: %v, want ApplyFailed: %v", err, refusal)
			}
		})
	}
}

// deployment is a Deployment whose selector and labels are the parent's data.a, its replicas data.b.
const deployment = `        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: "${parent.metadata.name}-c"}
        spec:
          replicas: "${int(parent.data.b)}"
          selector: {matchLabels: {app: "${parent.data.a}"}}
          template: {metadata: {labels: {app: "${parent.data.a}"}}, spec: {containers: [{name: c, image: i}]}}
`
