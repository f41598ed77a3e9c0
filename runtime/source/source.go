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
}

// Hash identifies the unit's content.
func (u Unit) Hash() string {
	sum := sha256.Sum256(u.Data)
	return hex.EncodeToString(sum[:])
}

// Snapshot is everything one source holds now.
type Snapshot struct {
	// Source names the source: dir:<path> or configmaps:<namespace>.
	Source string
	Units  []Unit
}
