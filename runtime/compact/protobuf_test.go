package compact

import (
	"bytes"
	"encoding/binary"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// builtinObjects are objects of built-in kinds as the API server stores them, with the fields
// whose encodings differ most between JSON and Go: quantities, int-or-strings, bytes, times,
// pointers to empty structs, integers of every width, managed fields.
func builtinObjects() []runtime.Object {
	now := metav1.NewTime(time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC))
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: "u-" + ktypes.UID(name), ResourceVersion: "42", Generation: 3,
			CreationTimestamp: now, Labels: map[string]string{"app.kubernetes.io/managed-by": "metacel"},
			Annotations: map[string]string{LastApplied: `{"whole":"object"}`, "metacel.dev/desired-hash": "abc"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "demo.rtfm.co.ua/v1", Kind: "MyApp", Name: "p", UID: "p-1",
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
			Finalizers: []string{"example.com/hold"},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "metacel", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &now,
					FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{".":{},"f:app.kubernetes.io/managed-by":{}}}}`)},
				{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1", Time: &now,
					FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)},
			},
		}
	}
	return []runtime.Object{
		&corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: meta("pod"),
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{
					Name: "app", Image: "nginx:1.27", Command: []string{"nginx"}, Args: []string{"-g", "daemon off;"},
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
					Env:   []corev1.EnvVar{{Name: "A", Value: ""}, {Name: "B", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}},
					Resources: corev1.ResourceRequirements{
						Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.5"), corev1.ResourceMemory: resource.MustParse("1Gi")},
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
					},
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP}},
						PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3},
					LivenessProbe:            &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}},
					TerminationMessagePath:   "/dev/termination-log",
					TerminationMessagePolicy: corev1.TerminationMessageReadFile,
					ImagePullPolicy:          corev1.PullIfNotPresent,
					SecurityContext:          &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000), AllowPrivilegeEscalation: ptr.To(false)},
				}},
				Volumes: []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, DefaultMode: ptr.To[int32](0o644)}}}},
				RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: ptr.To[int64](30),
				DNSPolicy: corev1.DNSClusterFirst, NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
				ServiceAccountName: "default", SecurityContext: &corev1.PodSecurityContext{}, SchedulerName: "default-scheduler",
				Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists,
					Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}},
				Priority: ptr.To[int32](0), EnableServiceLinks: ptr.To(true), PreemptionPolicy: ptr.To(corev1.PreemptLowerPriority),
			},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBurstable, StartTime: &now, PodIP: "10.0.0.7",
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, RestartCount: 2, Image: "nginx:1.27",
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}, Started: ptr.To(true)}}},
		},
		&corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: meta("secret"),
			Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"password": []byte("s3cr\x00t"), "empty": {}}},
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: meta("cm"),
			Data: map[string]string{"a": "1", "json": `{"x":1.5}`}, BinaryData: map[string][]byte{"b": {1, 2, 3}}},
		&corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: meta("svc"),
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10"},
				Selector: map[string]string{"app": "a"}, SessionAffinity: corev1.ServiceAffinityNone,
				IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicySingleStack),
				InternalTrafficPolicy: ptr.To(corev1.ServiceInternalTrafficPolicyCluster),
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP},
					{Name: "metrics", Port: 9090, TargetPort: intstr.FromInt32(9090), Protocol: corev1.ProtocolTCP}}}},
		&appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: meta("deploy"),
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}},
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxSurge: ptr.To(intstr.FromString("25%")), MaxUnavailable: ptr.To(intstr.FromInt32(0))}},
				RevisionHistoryLimit: ptr.To[int32](10), ProgressDeadlineSeconds: ptr.To[int32](600),
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "a"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 3, ReadyReplicas: 3, AvailableReplicas: 3, UpdatedReplicas: 3,
				Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, LastUpdateTime: now, LastTransitionTime: now, Reason: "MinimumReplicasAvailable"}}}},
		&batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}, ObjectMeta: meta("job"),
			Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](6), Completions: ptr.To[int32](1), Parallelism: ptr.To[int32](1),
				ActiveDeadlineSeconds: ptr.To[int64](3600), Suspend: ptr.To(false),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "run", Image: "busybox"}}}}},
			Status: batchv1.JobStatus{Succeeded: 1, CompletionTime: &now, StartTime: &now}},
	}
}

// cachedBothWays is an object as a cache holds it when it came as JSON, and as protobuf.
func cachedBothWays(t *testing.T, obj runtime.Object) (fromJSON, fromProto *Object) {
	t.Helper()
	jsonData, protoData := encodings(t, obj)
	j, err := decodeObject(jsonData)
	if err != nil {
		t.Fatal(err)
	}
	p, err := decodeProtobufObject(protoData)
	if err != nil {
		t.Fatal(err)
	}
	return j.(*Object), p.(*Object)
}

// encodings are an object as the API server sends it as JSON and as protobuf.
func encodings(t *testing.T, obj runtime.Object) (jsonData, protoData []byte) {
	t.Helper()
	var j, p bytes.Buffer
	if err := json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, json.SerializerOptions{}).Encode(obj, &j); err != nil {
		t.Fatal(err)
	}
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(obj, &p); err != nil {
		t.Fatal(err)
	}
	return j.Bytes(), p.Bytes()
}

// A built-in kind's object cached from protobuf has the metadata, and decodes to the very
// unstructured object, that its JSON would have given: what a sync compares and writes must not
// depend on how the object came.
func TestABuiltinObjectFromProtobufIsTheObjectFromJSON(t *testing.T) {
	for _, obj := range builtinObjects() {
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		t.Run(kind, func(t *testing.T) {
			j, p := cachedBothWays(t, obj)
			if !p.Protobuf || len(p.Raw) >= len(j.Raw) {
				t.Errorf("cached from protobuf: Protobuf %v, %d bytes against %d as JSON", p.Protobuf, len(p.Raw), len(j.Raw))
			}
			if !reflect.DeepEqual(j.objectMeta(), p.objectMeta()) || j.typeMeta() != p.typeMeta() {
				t.Errorf("metadata from protobuf\n%+v %+v\nfrom JSON\n%+v %+v", p.typeMeta(), p.objectMeta(), j.typeMeta(), j.objectMeta())
			}
			uj, err := Unstructured(j)
			if err != nil {
				t.Fatal(err)
			}
			up, err := Unstructured(p)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(uj.Object, up.Object) {
				t.Errorf("decoded from protobuf\n%#v\nfrom JSON\n%#v", up.Object, uj.Object)
			}
		})
	}
}

func TestOnlyBuiltinResourcesAreListedAsProtobuf(t *testing.T) {
	tests := []struct {
		gvr  schema.GroupVersionResource
		want bool
	}{
		{schema.GroupVersionResource{Version: "v1", Resource: "pods"}, true},
		{schema.GroupVersionResource{Version: "v1", Resource: "endpoints"}, true},
		{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, true},
		{schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}, true},
		{schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"}, true},
		{schema.GroupVersionResource{Group: "demo.rtfm.co.ua", Version: "v1", Resource: "myapps"}, false},
		{schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}, false},
		{schema.GroupVersionResource{Group: "metrics.k8s.io", Version: "v1beta1", Resource: "pods"}, false},
	}
	for _, tt := range tests {
		if got := ProtobufFor(tt.gvr); got != tt.want {
			t.Errorf("ProtobufFor(%s) = %v, want %v", tt.gvr, got, tt.want)
		}
	}
}

func TestAProtobufListIsDecodedIntoCompactObjects(t *testing.T) {
	list := &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}, ListMeta: metav1.ListMeta{ResourceVersion: "10", Continue: "c"}}
	pod := builtinObjects()[0].(*corev1.Pod)
	for _, name := range []string{"a", "b"} {
		p := pod.DeepCopy()
		p.Name = name
		list.Items = append(list.Items, *p)
	}
	_, data := encodings(t, list)
	got, err := decodeProtobufList(data)
	if err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != "10" || got.Continue != "c" || len(got.Items) != 2 || got.Items[1].GetName() != "b" || got.Items[1].kind() != "Pod" {
		t.Fatalf("list %+v", got)
	}
	u, err := Unstructured(&got.Items[0])
	if err != nil || u.GetName() != "a" || u.GetKind() != "Pod" {
		t.Errorf("item decodes to %v, %v", u, err)
	}
}

// protobufAPIServer serves Pods as a watch list in protobuf, as the API server does when asked.
type protobufAPIServer struct {
	t      *testing.T
	pods   []runtime.Object
	accept chan string
}

func (s *protobufAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case s.accept <- r.Header.Get("Accept"):
	default:
	}
	if r.URL.Query().Get("watch") != "true" || r.URL.Query().Get("sendInitialEvents") != "true" {
		w.WriteHeader(http.StatusNotAcceptable)
		return
	}
	w.Header().Set("Content-Type", protobufMediaType+";stream=watch")
	bookmark := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{ResourceVersion: "10", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	events := protobuf.NewRawSerializer(scheme.Scheme, scheme.Scheme)
	for i, obj := range append(s.pods, bookmark) {
		_, data := encodings(s.t, obj)
		typ := "ADDED"
		if i == len(s.pods) {
			typ = "BOOKMARK"
		}
		var frame bytes.Buffer
		if err := events.Encode(&metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: data}}, &frame); err != nil {
			s.t.Error(err)
			return
		}
		_ = binary.Write(w, binary.BigEndian, uint32(frame.Len()))
		_, _ = w.Write(frame.Bytes())
	}
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

func TestAnInformerWatchesBuiltinObjectsAsProtobuf(t *testing.T) {
	server := &protobufAPIServer{t: t, pods: builtinObjects()[:1], accept: make(chan string, 10)}
	inf := syncedInformer(t, server, schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "")
	if accept := <-server.accept; accept != protobufAccept {
		t.Errorf("asked with Accept %q, want %q", accept, protobufAccept)
	}
	obj, ok, _ := inf.GetStore().GetByKey("ns/pod")
	if !ok {
		t.Fatalf("ns/pod not in the cache: %v", inf.GetStore().ListKeys())
	}
	if o := obj.(*Object); !o.Protobuf || o.GetResourceVersion() != "42" {
		t.Errorf("cached %+v, want the Pod's message and metadata", o)
	}
	u, err := Unstructured(obj)
	if err != nil || u.GetName() != "pod" || u.Object["spec"].(map[string]any)["nodeSelector"].(map[string]any)["kubernetes.io/os"] != "linux" {
		t.Errorf("cached Pod decodes to %v, %v", u, err)
	}
}

// BenchmarkDecodeCached is what a sync pays to read a cached Pod, kept as JSON or as protobuf.
func BenchmarkDecodeCached(b *testing.B) {
	t := &testing.T{}
	jsonData, protoData := encodings(t, builtinObjects()[0])
	j, _ := decodeObject(jsonData)
	p, _ := decodeProtobufObject(protoData)
	for name, obj := range map[string]runtime.Object{"json": j, "protobuf": p} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Unstructured(obj); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCacheEvent is what the cache pays for an event of a Pod: its metadata decoded, its
// bytes kept.
func BenchmarkCacheEvent(b *testing.B) {
	t := &testing.T{}
	jsonData, protoData := encodings(t, builtinObjects()[0])
	for name, decode := range map[string]func([]byte) (runtime.Object, error){"json": decodeObject, "protobuf": decodeProtobufObject} {
		data := map[string][]byte{"json": jsonData, "protobuf": protoData}[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := decode(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A message decodes into client-go's type, which drops what it does not know: only an API server
// no newer than the types built in sends protobuf.
func TestProtobufOnlyFromAServerNoNewerThanTheTypes(t *testing.T) {
	tests := []struct {
		name   string
		server *version.Info
		built  int
		want   bool
	}{
		{"the same minor", &version.Info{Major: "1", Minor: "36"}, 36, true},
		{"an older server", &version.Info{Major: "1", Minor: "35"}, 36, true},
		{"a provider's suffix", &version.Info{Major: "1", Minor: "36+"}, 36, true},
		{"a newer server: JSON, which keeps its new fields", &version.Info{Major: "1", Minor: "37"}, 36, false},
		{"a version not known", nil, 36, false},
		{"a minor that is no number", &version.Info{Major: "1", Minor: "x"}, 36, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := protobufServer(tt.server, tt.built); got != tt.want {
				t.Errorf("protobufServer(%v, %d) = %v, want %v", tt.server, tt.built, got, tt.want)
			}
		})
	}
}

func TestTypesMinorIsGoModsAPIVersion(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/api v0\.(\d+)\.`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod requires no k8s.io/api v0.x")
	}
	if want, _ := strconv.Atoi(string(m[1])); typesMinor != want {
		t.Errorf("typesMinor is %d, go.mod requires k8s.io/api v0.%d: set typesMinor to %d", typesMinor, want, want)
	}
}

// A client that does not know the API server's version asks for JSON only.
func TestAClientOfAServerOfUnknownVersionAsksForJSON(t *testing.T) {
	accept := make(chan string, 10)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case accept <- r.Header.Get("Accept"):
		default:
		}
		w.WriteHeader(http.StatusNotFound)
	}))
	defer ts.Close()
	client, err := NewClient(&rest.Config{Host: ts.URL}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = client.ListWatch(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "").ListWithContext(t.Context(), metav1.ListOptions{})
	if got := <-accept; got != "application/json" {
		t.Errorf("asked with Accept %q, want application/json", got)
	}
}
