package compact

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
)

// protobufWatchStream is a watch stream of ConfigMaps as the API server sends it in protobuf.
func protobufWatchStream(t *testing.T, cms ...*corev1.ConfigMap) []byte {
	t.Helper()
	var out bytes.Buffer
	events := protobuf.NewRawSerializer(scheme.Scheme, scheme.Scheme)
	for _, cm := range cms {
		_, data := encodings(t, cm)
		var frame bytes.Buffer
		if err := events.Encode(&metav1.WatchEvent{Type: "ADDED", Object: runtime.RawExtension{Raw: data}}, &frame); err != nil {
			t.Fatal(err)
		}
		_ = binary.Write(&out, binary.BigEndian, uint32(frame.Len()))
		out.Write(frame.Bytes())
	}
	return out.Bytes()
}

func aConfigMap(name, value string) *corev1.ConfigMap {
	return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), ResourceVersion: "7",
			Labels: map[string]string{"app.kubernetes.io/managed-by": "metacel"}, Annotations: map[string]string{"a": "b"}},
		Data: map[string]string{"v": value}}
}

func TestALargeWatchEventIsReducedToItsMetadataAsItStreams(t *testing.T) {
	const max = 4 << 10
	big, small := aConfigMap("big", strings.Repeat("m", 100<<10)), aConfigMap("small", "s")
	stream := protobufWatchStream(t, big, small, big)
	r := omittingFramer{max: max}.NewFrameReader(io.NopCloser(bytes.NewReader(stream)))
	buf := make([]byte, 1024) // the decoder's buffer starts small and grows as frames need
	var got []*Object
	for {
		frame, err := readFrame(r, &buf)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		event := &metav1.WatchEvent{}
		if _, _, err := (protobufEvents{}).Decode(frame, nil, event); err != nil {
			t.Fatal(err)
		}
		obj, err := decodeProtobufObject(event.Object.Raw)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, obj.(*Object))
	}
	if len(got) != 3 {
		t.Fatalf("read %d events, want 3", len(got))
	}
	for i, o := range got {
		wantOmitted := o.GetName() == "big"
		if o.Larger(max) != wantOmitted || wantOmitted && o.Raw != nil {
			t.Errorf("event %d (%s): omitted %v with %d bytes kept, want omitted %v", i, o.GetName(), o.Larger(max), len(o.Raw), wantOmitted)
		}
		if o.GetNamespace() != "ns" || string(o.GetUID()) != "uid-"+o.GetName() || o.GetResourceVersion() != "7" || o.GetLabels()["app.kubernetes.io/managed-by"] != "metacel" || o.kind() != "ConfigMap" {
			t.Errorf("event %d: metadata %+v, want the ConfigMap's", i, o.objectMeta())
		}
	}
	if u, err := Unstructured(got[1]); err != nil || u.Object["data"].(map[string]any)["v"] != "s" {
		t.Errorf("the small ConfigMap decodes to %v, %v", u, err)
	}
	if cap(buf) > 2*max {
		t.Errorf("the decoder's buffer grew to %d bytes: a large frame reached it", cap(buf))
	}
}

// readFrame reads one frame as the API machinery's streaming decoder does, doubling buf on
// io.ErrShortBuffer.
func readFrame(r io.Reader, buf *[]byte) ([]byte, error) {
	base := 0
	for {
		n, err := r.Read((*buf)[base:])
		if errors.Is(err, io.ErrShortBuffer) {
			base += n
			*buf = append(*buf, make([]byte, len(*buf))...)
			continue
		}
		if err != nil {
			return nil, err
		}
		return (*buf)[:base+n], nil
	}
}
