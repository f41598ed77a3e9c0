package compact

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// unmarshalCases are documents on which unmarshalObject must agree with utiljson.Unmarshal, valid
// or not; they also seed FuzzUnmarshalObject.
var unmarshalCases = []string{
	// objects, arrays, nesting, whitespace
	`{}`, ` { } `, "\t\r\n{\n}\r\n\t", `{"a":{}}`, `{"a":[]}`, `{"a":[[],{}]}`,
	`{"a":{"b":{"c":[1,[2,[3,{"d":null}]]]}}}`, `{ "a" : [ 1 , 2 ] , "b" : { } }`,
	`{"a":true,"b":false,"c":null}`, `{"":""}`, `{"a":1,"a":2}`, `{"a":{"x":1},"a":[2]}`,
	`{"a":[1,"x",true,null,1.5,{"b":[]}]}`,
	// top-level values that are not objects
	`null`, ` null `, `nul`, `nulll`, `null x`, `true`, `false`, `1`, `"a"`, `[]`, `[{}]`, ``, ` `,
	// truncated, trailing and malformed
	`{`, `{"a"`, `{"a":`, `{"a":1`, `{"a":1,`, `{"a":[`, `{"a":[1`, `{"a":[1,`, `{"a":"`, `{"a":"x`,
	`{}}`, `{} {}`, `{}x`, `{}]`, `{},`, `{"a":1,}`, `{"a":[1,]}`, `{"a":[,1]}`, `{,}`, `{"a" 1}`,
	`{"a"::1}`, `{a:1}`, `{'a':1}`, `{"a":1 "b":2}`, `{"a":[1 2]}`, `{"a":tru}`, `{"a":truex}`,
	`{"a":True}`, `{"a":nil}`, `{"a":NaN}`, `{"a":Infinity}`, `{"a":undefined}`, `{1:2}`,
	`{"a":1}` + "\x00", "\xef\xbb\xbf{}", `{"a":1}/**/`, "{\"a\":1\v}", "{\"a\":1\f}",
	"{\"a\":\u00a01}",
	// numbers
	`{"n":0}`, `{"n":-0}`, `{"n":-0.0}`, `{"n":0.0}`, `{"n":1.0}`, `{"n":1.5}`, `{"n":0.1}`,
	`{"n":1e2}`, `{"n":1E2}`, `{"n":1e+2}`, `{"n":1e-2}`, `{"n":-1e2}`, `{"n":0e0}`, `{"n":1.0e2}`,
	`{"n":123456789012345678}`, `{"n":-123456789012345678}`, `{"n":999999999999999999}`,
	`{"n":1234567890123456789}`, `{"n":9223372036854775807}`, `{"n":9223372036854775808}`,
	`{"n":-9223372036854775808}`, `{"n":-9223372036854775809}`, `{"n":18446744073709551616}`,
	`{"n":100000000000000000000000000000}`, `{"n":1e400}`, `{"n":-1e400}`, `{"n":1e-400}`,
	`{"n":1.7976931348623157e308}`, `{"n":1.7976931348623159e308}`, `{"n":4.9e-324}`,
	`{"n":2.5e-324}`, `{"n":[1e308,1e309]}`, `{"n":1` + strings.Repeat("0", 400) + `}`,
	`{"n":0.` + strings.Repeat("0", 400) + `1}`, `{"n":01}`, `{"n":00}`, `{"n":-01}`, `{"n":+1}`,
	`{"n":.5}`, `{"n":5.}`, `{"n":1.e5}`, `{"n":1e}`, `{"n":1e+}`, `{"n":1e-}`, `{"n":-}`,
	`{"n":--1}`, `{"n":1.2.3}`, `{"n":1e2e3}`, `{"n":1e2.5}`, `{"n":0x10}`, `{"n":1_000}`,
	`{"n":-0e-0}`, `{"n":1}`, `{"n":-1}`, `{"n":255}`, `{"n":256}`, `{"n":[0,-0,1,-1]}`,
	// strings: escapes
	`{"s":"\"\\\/\b\f\n\r\t"}`, `{"s":"\u0041\u00e9\u20ac"}`, `{"s":"\u0000"}`, `{"s":"\uFFFD"}`,
	`{"s":"\uD83D\uDE00"}`, `{"s":"\ud83d\ude00x"}`, `{"s":"\uD83D"}`, `{"s":"\uD83Dx"}`,
	`{"s":"\uDE00"}`, `{"s":"\uDE00\uD83D"}`, `{"s":"\uD83D\uD83D\uDE00"}`, `{"s":"\uD83D\u0041"}`,
	`{"s":"\uD83D\n"}`, `{"s":"\uD83D\uZZZZ"}`, `{"s":"\uD83D\u12"}`, `{"s":"\uD83D\`,
	`{"s":"\u12"}`, `{"s":"\u12G4"}`, `{"s":"\x"}`, `{"s":"\'"}`, `{"s":"\U0041"}`, `{"s":"\`,
	`{"s":"\"}`, `{"\u0061":1,"a":2}`, `{"a\nb":"c\td"}`, `{"s":"a\\"}`,
	// strings: raw characters
	"{\"s\":\"\t\"}", "{\"s\":\"\n\"}", "{\"s\":\"\x1f\"}", "{\"s\":\"\x7f\"}", "{\"\x01\":1}",
	`{"s":"héllo wörld ✓ 😀"}`, "{\"s\":\"\xff\"}", "{\"s\":\"a\xffb\"}", "{\"s\":\"\xe2\x82\"}",
	"{\"s\":\"\xe2\x82\xac\"}", "{\"s\":\"\xed\xa0\x80\"}", "{\"s\":\"\xc0\xaf\"}",
	"{\"s\":\"\xf4\x90\x80\x80\"}", "{\"s\":\"\xf0\x9f\x98\"}", "{\"\xff\":\"\\n\xfe\"}",
	"{\"s\":\"\xef\xbf\xbd\"}", "{\"s\":\"\xff\\u0041\"}", "{\"s\":\"\xff", "{\"s\":\"\xe2\x82",
	// nesting at and beyond encoding/json's limit of 10000 levels
	`{"a":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`,
	`{"a":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`,
	strings.Repeat(`{"a":`, 10000) + `1` + strings.Repeat(`}`, 10000),
	strings.Repeat(`{"a":`, 10001) + `1` + strings.Repeat(`}`, 10001),
	strings.Repeat(`{"a":`, 100000) + `1` + strings.Repeat(`}`, 100000),
	`{"a":` + strings.Repeat("[", 1000000),
	podJSON,
}

// disagreement returns how unmarshalObject and utiljson.Unmarshal disagree on data, or "".
func disagreement(data []byte) string {
	var want map[string]any
	wantErr := utiljson.Unmarshal(data, &want)
	got, err := unmarshalObject(data)
	switch {
	case (err != nil) != (wantErr != nil):
		return fmt.Sprintf("error %v, want error %v", err, wantErr)
	case err != nil:
		return ""
	// DeepEqual tells int64 from float64 and nil from empty; printing also tells -0 from 0.
	case !reflect.DeepEqual(got, want) || fmt.Sprint(got) != fmt.Sprint(want):
		return fmt.Sprintf("got %#v, want %#v", got, want)
	}
	return ""
}

func TestUnmarshalObjectDecodesAsTheAPIMachineryDoes(t *testing.T) {
	for _, c := range unmarshalCases {
		if d := disagreement([]byte(c)); d != "" {
			name := c
			if len(name) > 60 {
				name = name[:60] + "…"
			}
			t.Errorf("%q: %s", name, d)
		}
	}
}

func TestUnmarshalObjectTypesNumbersAsTheAPIMachineryDoes(t *testing.T) {
	// Spelled out, as the comparison above would pass with both decoders wrong alike.
	got, err := unmarshalObject([]byte(`{"i":7,"neg0":-0,"max":9223372036854775807,` +
		`"over":9223372036854775808,"exp":1e2,"frac":1.0,"small":0.1}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"i": int64(7), "neg0": int64(0), "max": int64(9223372036854775807),
		"over": float64(9223372036854775808), "exp": float64(100), "frac": float64(1), "small": 0.1}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
}

func FuzzUnmarshalObject(f *testing.F) {
	for _, c := range unmarshalCases {
		if len(c) < 1000 {
			f.Add([]byte(c))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if d := disagreement(data); d != "" {
			t.Errorf("%q: %s", data, d)
		}
	})
}

func BenchmarkUnmarshalObject(b *testing.B) {
	data := []byte(podJSON)
	b.Run("unmarshalObject", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := unmarshalObject(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("utiljson", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			var m map[string]any
			if err := utiljson.Unmarshal(data, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// podJSON is a Pod as the API server sends it (about 4 KB, a third of it managed fields).
const podJSON = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-7d9c6b5f4-x2k8p",` +
	`"generateName":"web-7d9c6b5f4-","namespace":"shop","uid":"3f1c2a9e-6b1d-4c0e-9a7b-2d5e8f1a4b6c",` +
	`"resourceVersion":"184467","creationTimestamp":"2024-05-14T09:21:33Z",` +
	`"labels":{"app.kubernetes.io/name":"web","pod-template-hash":"7d9c6b5f4","tier":"frontend"},` +
	`"annotations":{"kubectl.kubernetes.io/restartedAt":"2024-05-14T09:20:00Z","prometheus.io/scrape":"true"},` +
	`"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-7d9c6b5f4",` +
	`"uid":"9b2e4d1f-7c3a-4e5b-8f6d-1a2b3c4d5e6f","controller":true,"blockOwnerDeletion":true}],` +
	`"managedFields":[{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1",` +
	`"time":"2024-05-14T09:21:33Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{` +
	`"f:generateName":{},"f:labels":{".":{},"f:app.kubernetes.io/name":{},"f:pod-template-hash":{},` +
	`"f:tier":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"9b2e4d1f-7c3a-4e5b-8f6d-1a2b3c4d5e6f\"}":{}}},` +
	`"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},` +
	`"f:name":{},"f:ports":{".":{},"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},` +
	`"f:containerPort":{},"f:name":{},"f:protocol":{}}},"f:resources":{".":{},"f:limits":{".":{},` +
	`"f:memory":{}},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}}}},"f:dnsPolicy":{},` +
	`"f:restartPolicy":{},"f:schedulerName":{},"f:terminationGracePeriodSeconds":{}}}},` +
	`{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":"2024-05-14T09:21:41Z",` +
	`"fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{` +
	`".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},` +
	`"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:startTime":{}}},` +
	`"subresource":"status"}]},` +
	`"spec":{"volumes":[{"name":"kube-api-access-7xq2z","projected":{"sources":[{"serviceAccountToken":` +
	`{"expirationSeconds":3607,"path":"token"}},{"configMap":{"name":"kube-root-ca.crt","items":[` +
	`{"key":"ca.crt","path":"ca.crt"}]}}],"defaultMode":420}}],` +
	`"containers":[{"name":"web","image":"registry.example.com/shop/web:1.42.0",` +
	`"args":["--listen=:8080","--log-level=info"],"ports":[{"name":"http","containerPort":8080,` +
	`"protocol":"TCP"}],"env":[{"name":"GOMAXPROCS","value":"2"},{"name":"POD_NAME","valueFrom":` +
	`{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.name"}}}],"resources":{"limits":` +
	`{"memory":"256Mi"},"requests":{"cpu":"100m","memory":"128Mi"}},"volumeMounts":[{"name":` +
	`"kube-api-access-7xq2z","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}],` +
	`"readinessProbe":{"httpGet":{"path":"/healthz","port":8080,"scheme":"HTTP"},"periodSeconds":10,` +
	`"successThreshold":1,"failureThreshold":3,"timeoutSeconds":1},` +
	`"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File",` +
	`"imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,` +
	`"dnsPolicy":"ClusterFirst","serviceAccountName":"default","serviceAccount":"default",` +
	`"nodeName":"node-3","securityContext":{},"schedulerName":"default-scheduler","tolerations":[` +
	`{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300},` +
	`{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}],` +
	`"priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"},` +
	`"status":{"phase":"Running","conditions":[{"type":"Initialized","status":"True","lastProbeTime":null,` +
	`"lastTransitionTime":"2024-05-14T09:21:33Z"},{"type":"Ready","status":"True","lastProbeTime":null,` +
	`"lastTransitionTime":"2024-05-14T09:21:41Z"},{"type":"ContainersReady","status":"True",` +
	`"lastProbeTime":null,"lastTransitionTime":"2024-05-14T09:21:41Z"},{"type":"PodScheduled",` +
	`"status":"True","lastProbeTime":null,"lastTransitionTime":"2024-05-14T09:21:33Z"}],` +
	`"hostIP":"10.0.3.17","podIP":"10.244.3.58","podIPs":[{"ip":"10.244.3.58"}],` +
	`"startTime":"2024-05-14T09:21:33Z","containerStatuses":[{"name":"web","state":{"running":` +
	`{"startedAt":"2024-05-14T09:21:36Z"}},"lastState":{},"ready":true,"restartCount":0,` +
	`"image":"registry.example.com/shop/web:1.42.0","imageID":"registry.example.com/shop/web@sha256:` +
	`4f2a9c1e7b3d5a8f0e6c2b9d1a7f3e5c8b0d2a4f6e1c3b5d7a9f0e2c4b6d8a1f","containerID":` +
	`"containerd://8e1f3a5c7b9d2e4f6a8c0b1d3e5f7a9c2b4d6e8f0a1c3e5b7d9f2a4c6e8b0d1f","started":true}],` +
	`"qosClass":"Burstable"}}`
