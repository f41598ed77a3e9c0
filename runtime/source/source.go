package source

import (
	"crypto/sha256"
	"encoding/hex"

	corev1 "k8s.io/api/core/v1"
)

// Unit is one piece of policy text: a file, or one data value of a ConfigMap.
type Unit struct {
	// Name locates the unit in messages: a file path, or configmap/<namespace>/<name>/<key>.
	Name string
	Data []byte
	// ConfigMap is the ConfigMap the unit comes from, if any: events about the unit go to it.
	ConfigMap *corev1.ObjectReference
	// Problem, when not empty, says why a source that should hold a policy holds none (a policy
	// ConfigMap without data): the unit is reported as an invalid policy rather than ignored.
	Problem string
}

// Hash identifies the unit's content.
func (u Unit) Hash() string {
	h := sha256.New()
	h.Write(u.Data)
	if u.Problem != "" {
		h.Write([]byte("\x00problem:" + u.Problem))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Snapshot is everything one source holds now.
type Snapshot struct {
	// Source names the source: dir:<path> or configmaps:<namespace>.
	Source string
	Units  []Unit
}
