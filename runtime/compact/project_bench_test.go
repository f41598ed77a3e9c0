package compact

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"metacel.dev/metacel/runtime/projection"
)

// benchPod is a Pod as the benchmark's MyApp policy has the API server store it: metacel's
// labels and annotations, its apply's managed fields, the API server's defaults.
func benchPod(i int) *corev1.Pod {
	now := metav1.Now()
	uid := ktypes.UID(fmt.Sprintf("%08d-56a0-4106-bee7-fb960d14dd81", i))
	name := fmt.Sprintf("app-%05d", i)
	return &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name + "-pod", Namespace: "bench", UID: uid + "-pod", ResourceVersion: fmt.Sprint(1000 + i), Generation: 1,
			CreationTimestamp: now,
			Labels: map[string]string{"app": name, "app.kubernetes.io/managed-by": "metacel", "metacel.dev/policy-name": "myapp", "metacel.dev/policy": "myapp",
				"metacel.dev/parent-uid": string(uid), "metacel.dev/child-id": "pod", "metacel.dev/shard-slot": fmt.Sprint(i % 64)},
			Annotations:     map[string]string{"metacel.dev/content-hash": fmt.Sprintf("%064d", i), "metacel.dev/desired-hash": fmt.Sprintf("%064d", i+1)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "demo.rtfm.co.ua/v1", Kind: "MyApp", Name: name, UID: uid, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "metacel", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1", Time: &now, FieldsType: "FieldsV1",
				FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:annotations":{"f:metacel.dev/content-hash":{},"f:metacel.dev/desired-hash":{}},"f:labels":{"f:app":{},"f:app.kubernetes.io/managed-by":{},"f:metacel.dev/child-id":{},"f:metacel.dev/parent-uid":{},"f:metacel.dev/policy":{},"f:metacel.dev/policy-name":{},"f:metacel.dev/shard-slot":{}},"f:ownerReferences":{"k:{\"uid\":\"` + string(uid) + `\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"` + name + `\"}":{".":{},"f:command":{},"f:image":{},"f:name":{},"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}}}}}}`)}},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: name, Image: "nginx:latest", Command: []string{"/bin/sh", "-c", `if [ -n "$BANNER" ]; then echo "$BANNER"; fi; exec sleep infinity`},
				Ports: []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}, ImagePullPolicy: corev1.PullAlways,
				TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				VolumeMounts: []corev1.VolumeMount{{Name: "kube-api-access-7h8tw", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}}}},
			RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: ptr.To[int64](30), DNSPolicy: corev1.DNSClusterFirst,
			ServiceAccountName: "default", DeprecatedServiceAccount: "default", SecurityContext: &corev1.PodSecurityContext{}, SchedulerName: "default-scheduler",
			Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}},
			Priority: ptr.To[int32](0), EnableServiceLinks: ptr.To(true), PreemptionPolicy: ptr.To(corev1.PreemptLowerPriority),
			Volumes: []corev1.Volume{{Name: "kube-api-access-7h8tw", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](420),
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To[int64](3607), Path: "token"}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}}}}}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBestEffort},
	}
}

// benchPodKeep is what the benchmark's MyApp policy reads of its Pods: its templates' fields, its
// readyWhen's, a Pod's spec.nodeName.
func benchPodKeep() *projection.Fields {
	return (&projection.Fields{}).Keep("spec", "containers", "name").Keep("spec", "containers", "image").Keep("spec", "containers", "command").
		Keep("spec", "containers", "ports").Keep("spec", "containers", "env").Keep("spec", "nodeName").Keep("status", "phase")
}

// BenchmarkProjectPod projects one decoded Pod of the benchmark's MyApp policy, as an informer's
// transform does at every event of a Pod.
func BenchmarkProjectPod(b *testing.B) {
	_, message := encodings(&testing.T{}, benchPod(1))
	obj, err := decodeProtobufObject(message)
	if err != nil {
		b.Fatal(err)
	}
	keep := benchPodKeep()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := obj.(*Object).Project(keep); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCachedPod reports the heap a cache holds per Pod of the benchmark's MyApp policy:
// whole (the baseline) and with what the policy reads (its templates' fields, its readyWhen's,
// a Pod's spec.nodeName), each with its metadata decoded.
func BenchmarkCachedPod(b *testing.B) {
	keep := benchPodKeep()
	const n = 2000
	messages := make([][]byte, n)
	for i := range n {
		_, messages[i] = encodings(&testing.T{}, benchPod(i))
	}
	for _, tc := range []struct {
		name   string
		keep   *projection.Fields
		shared bool
	}{{"whole", nil, false}, {"projected", keep, false}, {"projected and shared", keep, true}} {
		b.Run(tc.name, func(b *testing.B) {
			heldPerObject(b, n, "heapB/pod", func(i int) (*Object, error) {
				obj, err := decodeProtobufObject(messages[i])
				if err != nil {
					return nil, err
				}
				o, err := obj.(*Object).Project(tc.keep)
				if err != nil || !tc.shared {
					return o, err
				}
				return o.Shared(), nil
			})
		})
	}
}

// BenchmarkDecodePod decodes one Pod of the benchmark's MyApp policy from its protobuf message and
// projects it, as a watch event of a Pod is read into the cache.
func BenchmarkDecodePod(b *testing.B) {
	_, message := encodings(&testing.T{}, benchPod(1))
	keep := benchPodKeep()
	b.ReportAllocs()
	for b.Loop() {
		obj, err := decodeProtobufObject(message)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := obj.(*Object).Project(keep); err != nil {
			b.Fatal(err)
		}
	}
}

// benchMyApp is a MyApp of the benchmark as the API server sends it once metacel wrote its status:
// the load client's and metacel's managed fields, the policy's status and metacel's conditions.
func benchMyApp(i int) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"demo.rtfm.co.ua/v1","kind":"MyApp","metadata":{"creationTimestamp":"2026-11-30T02:00:00Z",`+
		`"generation":1,"managedFields":[{"apiVersion":"demo.rtfm.co.ua/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{".":{},"f:image":{}}},`+
		`"manager":"bench","operation":"Update","time":"2026-11-30T02:00:00Z"},{"apiVersion":"demo.rtfm.co.ua/v1","fieldsType":"FieldsV1",`+
		`"fieldsV1":{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:observedGeneration":{},"f:reason":{},"f:status":{},"f:type":{}},`+
		`"k:{\"type\":\"Synced\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:observedGeneration":{},"f:reason":{},"f:status":{},"f:type":{}}},`+
		`"f:observedGeneration":{},"f:podName":{}}},"manager":"metacel","operation":"Apply","subresource":"status","time":"2026-11-30T02:00:%02dZ"}],`+
		`"name":"app-%05d","namespace":"bench","resourceVersion":"%d","uid":"%08d-56a0-4106-bee7-fb960d14dd81"},"spec":{"image":"nginx:latest"},`+
		`"status":{"conditions":[{"lastTransitionTime":"2026-11-30T02:00:%02dZ","message":"1 child applied","observedGeneration":1,"reason":"Synced","status":"True","type":"Synced"},`+
		`{"lastTransitionTime":"2026-11-30T02:00:%02dZ","message":"1 of 1 children ready","observedGeneration":1,"reason":"ChildrenReady","status":"True","type":"Ready"}],`+
		`"observedGeneration":1,"podName":"app-%05d-pod"}}`, i%60, i, 1000+i, i, i%60, i%60, i)
}

// BenchmarkCachedMyApp reports the heap a cache holds per MyApp of the benchmark, as the parents'
// informer keeps it (whole), its metadata decoded: as decoded, and its body shared with the
// MyApps alike (their conditions changed in the same second: 60 bodies for the 2,000), or alike
// none (each with a message of its own).
func BenchmarkCachedMyApp(b *testing.B) {
	const n = 2000
	for _, tc := range []struct {
		name   string
		shared bool
		body   func(i int) []byte
	}{{"decoded", false, benchMyApp}, {"shared", true, benchMyApp},
		{"shared, alike none", true, func(i int) []byte {
			return bytes.Replace(benchMyApp(i), []byte("1 child applied"), fmt.Appendf(nil, "%d child applied", i), 1)
		}}} {
		objects := make([][]byte, n)
		for i := range n {
			objects[i] = tc.body(i)
		}
		b.Run(tc.name, func(b *testing.B) {
			heldPerObject(b, n, "heapB/myapp", func(i int) (*Object, error) {
				obj, err := decodeObject(objects[i])
				if err != nil || !tc.shared {
					return obj.(*Object), err
				}
				return obj.(*Object).Shared(), nil
			})
		})
	}
}

// heldPerObject reports, as unit, the heap held after a collection by the n objects decode makes,
// per object, decoded over ten collections.
func heldPerObject[T any](b *testing.B, n int, unit string, decode func(i int) (T, error)) {
	var perObject float64
	for b.Loop() {
		held := make([]T, n)
		forgetShared() // the bodies an earlier run left there are not this run's
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := range n {
			if i%200 == 0 { // an informer's objects arrive over many collections
				runtime.GC()
			}
			var err error
			if held[i], err = decode(i); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perObject = float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
		runtime.KeepAlive(held)
	}
	b.ReportMetric(perObject, unit)
}

// BenchmarkRememberedPod reports the heap a Pod the controller created holds while it is
// remembered (until its cache delivers it; a converge of 1,000 MyApps remembers about a thousand at
// once): as the create response decoded whole (Responses.Object) and projected as a map (the
// baseline), and held as its cache holds it (AsCached).
func BenchmarkRememberedPod(b *testing.B) {
	const n = 2000
	keep := benchPodKeep()
	responses := make([][]byte, n)
	for i := range n {
		responses[i], _ = encodings(&testing.T{}, benchPod(i))
	}
	b.Run("decoded map", func(b *testing.B) {
		heldPerObject(b, n, "heapB/pod", func(i int) (map[string]any, error) {
			got, err := Responses{}.Object(responses[i])
			if err != nil {
				return nil, err
			}
			return projection.Map(got.Object, keep), nil
		})
	})
	b.Run("as cached", func(b *testing.B) {
		heldPerObject(b, n, "heapB/pod", func(i int) (*Object, error) {
			got, err := Responses{}.Object(responses[i])
			if err != nil {
				return nil, err
			}
			return AsCached(got, keep)
		})
	})
}

// BenchmarkRememberPod is the time to remember one Pod created, from its create response decoded:
// projected as a map (the baseline) and held as its cache holds it (AsCached: encoded again and
// decoded as a watch event is).
func BenchmarkRememberPod(b *testing.B) {
	keep := benchPodKeep()
	response, _ := encodings(&testing.T{}, benchPod(1))
	got, err := Responses{}.Object(response)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("decoded map", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = projection.Map(got.Object, keep)
		}
	})
	b.Run("as cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := AsCached(got, keep); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkShare holds one object's body as the objects alike hold it (Shared), as an informer's
// transform does at every event: a projected Pod of the benchmark's MyApp policy (its message
// encoded as JSON to be compared), a MyApp.
func BenchmarkShare(b *testing.B) {
	pod := projectedBenchPod(b, 1)
	myApp, err := decodeObject(benchMyApp(1))
	if err != nil {
		b.Fatal(err)
	}
	for name, o := range map[string]*Object{"pod": pod, "myapp": myApp.(*Object)} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = o.Shared()
			}
		})
	}
}

// BenchmarkDecodeCachedPod decodes a cached Pod of the benchmark's MyApp policy into the
// unstructured object a sync reads: from its protobuf message, or from the JSON body it shares.
func BenchmarkDecodeCachedPod(b *testing.B) {
	forgetShared() // no earlier benchmark's Pod to share with
	var held [2]*Object
	for i := range held {
		held[i] = projectedBenchPod(b, i).Shared()
	}
	for name, o := range map[string]*Object{"protobuf": held[0], "shared JSON": held[1]} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Unstructured(o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// projectedBenchPod is the i-th Pod of the benchmark's MyApp policy as its informer decodes and
// projects it.
func projectedBenchPod(tb testing.TB, i int) *Object {
	tb.Helper()
	_, message := encodings(&testing.T{}, benchPod(i))
	obj, err := decodeProtobufObject(message)
	if err != nil {
		tb.Fatal(err)
	}
	o, err := obj.(*Object).Project(benchPodKeep())
	if err != nil {
		tb.Fatal(err)
	}
	return o
}
