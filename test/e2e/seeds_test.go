//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

const (
	wait = 60 * time.Second
	// gcWait bounds garbage collection, which starts watching a new CRD's objects only at its next
	// discovery round (every 30 s in kube-controller-manager)
	gcWait = 2 * time.Minute
)

var policies = filepath.Join(repo, "policies")

func TestMyApp(t *testing.T) {
	startRuntime(t, policies)
	ns := newNamespace(t, "myapp")
	parent := create(t, myAppsGVR, sample(t, "myapp", ns))

	t.Run("the Pod of the seed operator", func(t *testing.T) {
		pod := waitFor(t, podsGVR, ns, "example-app-pod", wait, nil)
		expectEqual(t, "label app", pod.GetLabels()["app"], "example-app")
		expectEqual(t, "label managed-by", pod.GetLabels()["app.kubernetes.io/managed-by"], "metacel")
		expectEqual(t, "label parent-uid", pod.GetLabels()["metacel.dev/parent-uid"], string(parent.GetUID()))
		refs := pod.GetOwnerReferences()
		if len(refs) != 1 || refs[0].UID != parent.GetUID() || refs[0].Controller == nil || !*refs[0].Controller {
			t.Errorf("ownerReferences: %+v", refs)
		}
		c := container(t, pod)
		expectEqual(t, "container name", c["name"], any("example-app"))
		expectEqual(t, "image", c["image"], any("nginx:latest"))
		want := []any{"/bin/sh", "-c", `if [ -n "$BANNER" ]; then echo "$BANNER"; fi; exec sleep infinity`}
		if !reflect.DeepEqual(c["command"], want) {
			t.Errorf("command: %v", c["command"])
		}
		if env := fmt.Sprint(c["env"]); env != "[map[name:BANNER value:This pod was created by MyApp operator 🚀]]" {
			t.Errorf("env: %s", env)
		}
		if ports := fmt.Sprint(c["ports"]); ports != "[map[containerPort:80 protocol:TCP]]" {
			t.Errorf("ports: %s", ports)
		}
		expectEqual(t, "event", waitEvent(t, ns, "example-app", "Created"), "Created Pod "+ns+"/example-app-pod")
	})
	t.Run("Ready once the Pod runs", func(t *testing.T) {
		p := waitFor(t, myAppsGVR, ns, "example-app", wait, hasCondition("Ready", "True", "ChildrenReady", ""))
		expectEqual(t, "status.phase", str(p, "status", "phase"), "Running")
		if err := hasCondition("Synced", "True", "Synced", "")(p); err != nil {
			t.Error(err)
		}
	})
	t.Run("a new banner replaces the Pod", func(t *testing.T) {
		old := waitFor(t, podsGVR, ns, "example-app-pod", wait, nil)
		patch(t, myAppsGVR, ns, "example-app", `{"spec":{"banner":"second banner"}}`)
		waitFor(t, podsGVR, ns, "example-app-pod", wait, func(pod *unstructured.Unstructured) error {
			if pod.GetUID() == old.GetUID() {
				return fmt.Errorf("still the old Pod")
			}
			if env := fmt.Sprint(container(t, pod)["env"]); env != "[map[name:BANNER value:second banner]]" {
				return fmt.Errorf("env %s", env)
			}
			return nil
		})
	})
	t.Run("no image: Synced=False with the seed's message, no Pod", func(t *testing.T) {
		bad := sample(t, "myapp", ns)
		bad.SetName("no-image")
		unstructured.RemoveNestedField(bad.Object, "spec", "image")
		create(t, myAppsGVR, bad)
		waitFor(t, myAppsGVR, ns, "no-image", wait, hasCondition("Synced", "False", "ValidationFailed", "Field 'spec.image' must be provided."))
		expectEqual(t, "warning event", waitEvent(t, ns, "no-image", "ValidationFailed"), "Field 'spec.image' must be provided.")
		if _, err := get(t, podsGVR, ns, "no-image-pod"); err == nil {
			t.Error("a MyApp without image must not get a Pod")
		}
	})
	t.Run("deleting the parent deletes its Pod", func(t *testing.T) {
		deleteObj(t, myAppsGVR, ns, "example-app")
		waitGone(t, podsGVR, ns, "example-app-pod", gcWait)
	})
}

func TestMemcached(t *testing.T) {
	startRuntime(t, policies)
	ns := newNamespace(t, "memcached")
	create(t, memcachedsGVR, sample(t, "memcached", ns))

	dep := waitFor(t, deploymentsGVR, ns, "memcached-sample", wait, nil)
	t.Run("the Deployment of the seed operator", func(t *testing.T) {
		replicas, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas")
		expectEqual(t, "replicas", replicas, 3)
		pod, _, _ := unstructured.NestedMap(dep.Object, "spec", "template", "spec")
		c := pod["containers"].([]any)[0].(map[string]any)
		expectEqual(t, "image", c["image"], any("memcached:1.4.36-alpine"))
		expectEqual(t, "command", fmt.Sprint(c["command"]), "[memcached -m=64 -o modern -v]")
		expectEqual(t, "runAsUser", fmt.Sprint(c["securityContext"].(map[string]any)["runAsUser"]), "1001")
		expectEqual(t, "port", fmt.Sprint(c["ports"].([]any)[0].(map[string]any)["containerPort"]), "11211")
	})
	t.Run("Available and Ready once the replicas are", func(t *testing.T) {
		p := waitFor(t, memcachedsGVR, ns, "memcached-sample", wait, hasCondition("Ready", "True", "", ""))
		for typ, status := range map[string]string{"Available": "True", "Progressing": "False", "Degraded": "False"} {
			if err := hasCondition(typ, status, "", "")(p); err != nil {
				t.Error(err)
			}
		}
	})
	t.Run("a new size updates the Deployment in place", func(t *testing.T) {
		patch(t, memcachedsGVR, ns, "memcached-sample", `{"spec":{"size":2}}`)
		waitFor(t, deploymentsGVR, ns, "memcached-sample", wait, func(d *unstructured.Unstructured) error {
			replicas, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
			if replicas != 2 {
				return fmt.Errorf("replicas %d", replicas)
			}
			if d.GetUID() != dep.GetUID() {
				return fmt.Errorf("the Deployment was replaced, not updated")
			}
			return nil
		})
	})
	t.Run("an edit of a managed field is reverted", func(t *testing.T) {
		patch(t, deploymentsGVR, ns, "memcached-sample", `{"spec":{"replicas":5}}`)
		waitFor(t, deploymentsGVR, ns, "memcached-sample", wait, func(d *unstructured.Unstructured) error {
			if replicas, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); replicas != 2 {
				return fmt.Errorf("replicas %d", replicas)
			}
			return nil
		})
	})
	t.Run("a deleted child the policy wants is recreated", func(t *testing.T) {
		old := waitFor(t, deploymentsGVR, ns, "memcached-sample", wait, nil)
		deleteObj(t, deploymentsGVR, ns, "memcached-sample")
		waitFor(t, deploymentsGVR, ns, "memcached-sample", wait, func(d *unstructured.Unstructured) error {
			if d.GetUID() == old.GetUID() {
				return fmt.Errorf("not recreated yet")
			}
			return nil
		})
	})
}

func TestWhaleSay(t *testing.T) {
	startRuntime(t, policies)
	ns := newNamespace(t, "whalesay")
	create(t, whaleSaysGVR, sample(t, "whalesay", ns))
	job := waitFor(t, jobsGVR, ns, "example-whalesay-job", wait, nil)
	c, _, _ := unstructured.NestedSlice(job.Object, "spec", "template", "spec", "containers")
	container := c[0].(map[string]any)
	expectEqual(t, "image", container["image"], any("docker/whalesay"))
	expectEqual(t, "command", fmt.Sprint(container["command"]), "[cowsay Hello from Kubernetes Operator!]")
	p := waitFor(t, whaleSaysGVR, ns, "example-whalesay", wait, func(p *unstructured.Unstructured) error {
		if err := hasCondition("Ready", "True", "", "")(p); err != nil {
			return err
		}
		if phase := str(p, "status", "phase"); phase != "Complete" {
			return fmt.Errorf("phase %q", phase)
		}
		return nil
	})
	expectEqual(t, "succeeded", fmt.Sprint(p.Object["status"].(map[string]any)["succeeded"]), "1")
}

func TestConfigMapSync(t *testing.T) {
	startRuntime(t, policies)
	src, dst := newNamespace(t, "cms-source"), newNamespace(t, "cms-destination")
	configMapSync(t, src, dst)

	t.Run("the destination is a copy, cleaned up by the finalizer", func(t *testing.T) {
		waitFor(t, configMapsGVR, dst, "app-config", wait, hasData("LOG_LEVEL", "info"))
		p := waitFor(t, cmSyncsGVR, src, "example-sync", wait, hasCondition("Ready", "True", "", ""))
		if str(p, "status", "lastSyncTime") == "" {
			t.Error("status.lastSyncTime is not set")
		}
		if fs := p.GetFinalizers(); len(fs) != 1 || fs[0] != "metacel.dev/cleanup" {
			t.Errorf("finalizers: %v", fs)
		}
		if cm, _ := get(t, configMapsGVR, dst, "app-config"); cm != nil && len(cm.GetOwnerReferences()) != 0 {
			t.Errorf("a cross-namespace child cannot have an ownerReference: %v", cm.GetOwnerReferences())
		}
	})
	t.Run("a change to the source is copied within seconds", func(t *testing.T) {
		start := time.Now()
		patch(t, configMapsGVR, src, "app-config", `{"data":{"LOG_LEVEL":"debug","NEW":"x"}}`)
		waitFor(t, configMapsGVR, dst, "app-config", 10*time.Second, hasData("LOG_LEVEL", "debug"))
		t.Logf("source change copied in %s", time.Since(start).Round(time.Millisecond))
	})
	t.Run("a destination whose parent-uid label was removed gets it back", func(t *testing.T) {
		patch(t, configMapsGVR, dst, "app-config", `{"metadata":{"labels":{"metacel.dev/parent-uid":null}}}`)
		waitFor(t, configMapsGVR, dst, "app-config", wait, func(cm *unstructured.Unstructured) error {
			if cm.GetLabels()["metacel.dev/parent-uid"] == "" {
				return fmt.Errorf("no parent-uid label")
			}
			return nil
		})
		waitFor(t, cmSyncsGVR, src, "example-sync", wait, hasCondition("Synced", "True", "", ""))
	})
	t.Run("a key removed from the source is removed from the destination", func(t *testing.T) {
		patch(t, configMapsGVR, src, "app-config", `{"data":{"NEW":null}}`)
		waitFor(t, configMapsGVR, dst, "app-config", 10*time.Second, func(cm *unstructured.Unstructured) error {
			if _, ok := cm.Object["data"].(map[string]any)["NEW"]; ok {
				return fmt.Errorf("NEW is still there")
			}
			return nil
		})
	})
	t.Run("a missing source is reported on the parent", func(t *testing.T) {
		deleteObj(t, configMapsGVR, src, "app-config")
		waitFor(t, cmSyncsGVR, src, "example-sync", wait, hasCondition("Synced", "False", "ValidationFailed",
			"source ConfigMap "+src+"/app-config not found"))
	})
	t.Run("deleting the parent deletes the destination", func(t *testing.T) {
		deleteObj(t, cmSyncsGVR, src, "example-sync")
		waitGone(t, configMapsGVR, dst, "app-config", wait)
		waitGone(t, cmSyncsGVR, src, "example-sync", wait)
	})
}

func TestMyIngress(t *testing.T) {
	startRuntime(t, policies)
	ns := newNamespace(t, "myingress")
	create(t, myIngressesGVR, sample(t, "myingress", ns))
	lb := waitFor(t, lbGVR, ns, "example-ingress-alb", wait, nil)
	expectEqual(t, "spec.name", str(lb, "spec", "name"), "example-ingress-alb")
	expectEqual(t, "spec.type", str(lb, "spec", "type"), "application")
	expectEqual(t, "spec.scheme", str(lb, "spec", "scheme"), "internet-facing")
	expectEqual(t, "spec.ipAddressType", str(lb, "spec", "ipAddressType"), "ipv4")
	expectEqual(t, "tags", fmt.Sprint(lb.Object["spec"].(map[string]any)["tags"]), "[map[key:ManagedBy value:metacel]]")
	waitFor(t, myIngressesGVR, ns, "example-ingress", wait, hasCondition("Ready", "False", "ChildrenNotReady", ""))

	// play the ACK controller: the load balancer becomes active
	_, err := cluster.dynamic.Resource(lbGVR).Namespace(ns).Patch(t.Context(), "example-ingress-alb", types.MergePatchType,
		[]byte(`{"status":{"dnsName":"example-ingress-alb-1.eu-west-1.elb.amazonaws.com","ackResourceMetadata":{"arn":"arn:aws:elasticloadbalancing:eu-west-1:1:loadbalancer/app/x/1"},"state":{"code":"active"}}}`),
		metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatal(err)
	}
	p := waitFor(t, myIngressesGVR, ns, "example-ingress", wait, hasCondition("Ready", "True", "", ""))
	expectEqual(t, "status.alb.dns", str(p, "status", "alb", "dns"), "example-ingress-alb-1.eu-west-1.elb.amazonaws.com")
	expectEqual(t, "status.alb.arn", str(p, "status", "alb", "arn"), "arn:aws:elasticloadbalancing:eu-west-1:1:loadbalancer/app/x/1")

	t.Run("a load balancer that loses its address empties status.alb", func(t *testing.T) {
		// alb: {} over the alb metacel applied before is stored as null, which the schema refuses:
		// an empty object is not applied at all
		_, err := cluster.dynamic.Resource(lbGVR).Namespace(ns).Patch(t.Context(), "example-ingress-alb", types.MergePatchType,
			[]byte(`{"status":{"dnsName":null,"ackResourceMetadata":null}}`), metav1.PatchOptions{}, "status")
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, myIngressesGVR, ns, "example-ingress", wait, func(p *unstructured.Unstructured) error {
			if alb, found, _ := unstructured.NestedFieldNoCopy(p.Object, "status", "alb"); found {
				return fmt.Errorf("status.alb is still %v", alb)
			}
			return nil
		})
	})
}

func container(t *testing.T, pod *unstructured.Unstructured) map[string]any {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(pod.Object, "spec", "containers")
	if len(cs) != 1 {
		t.Fatalf("want one container, got %d", len(cs))
	}
	return cs[0].(map[string]any)
}

func hasData(key, value string) func(*unstructured.Unstructured) error {
	return func(cm *unstructured.Unstructured) error {
		if got := str(cm, "data", key); got != value {
			return fmt.Errorf("data.%s is %q, want %q", key, got, value)
		}
		return nil
	}
}

func patch(t *testing.T, gvr schema.GroupVersionResource, ns, name, body string) {
	t.Helper()
	if _, err := cluster.dynamic.Resource(gvr).Namespace(ns).Patch(t.Context(), name, types.MergePatchType, []byte(body), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch %s %s/%s: %v", gvr.Resource, ns, name, err)
	}
}

func deleteObj(t *testing.T, gvr schema.GroupVersionResource, ns, name string) {
	t.Helper()
	if err := cluster.dynamic.Resource(gvr).Namespace(ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete %s %s/%s: %v", gvr.Resource, ns, name, err)
	}
}
