package memo

import (
	"cmp"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"

	"metacel.dev/metacel/runtime/apistore"
	"metacel.dev/metacel/runtime/contract"
)

// Entries are a controller's memory: a fingerprint of a parent's inputs, and a byte of the
// controller's own (what that sync concluded of the parent).
type Entries map[uint64]byte

// MaxEntries is the most parents a memo holds; the others are synced in full after a restart.
const MaxEntries = 100_000

const (
	keyScope   = "scope"
	keyEntries = "fingerprints"
	entrySize  = 9
	// FieldManager is the field manager of the memos: the runtime's own, not "metacel", the
	// children's
	FieldManager   = "metacel-memo"
	requestTimeout = 10 * time.Second
	// format changes when what a fingerprint covers or how it is computed changes
	format = "metacel-memo/1"
)

// ConfigMapName is the name of a policy's memo.
func ConfigMapName(policyName string) string { return "metacel-memo-" + policyName }

// Scope returns the scope of a controller's memo, what its fingerprints do not cover: the
// binary's build ID and the parts given (the policy's version, its CRDs' schemas). "" when the
// build ID cannot be read: memos are then off, for no memo could tell this binary from another.
func Scope(parts ...string) string {
	id := buildID()
	if id == "" {
		return ""
	}
	h := sha256.New()
	for _, p := range append([]string{format, id}, parts...) {
		_, _ = fmt.Fprintf(h, "%d:%s", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// buildID reads the Go build ID of the running binary (its ELF note), once; "" when it cannot.
var buildID = sync.OnceValue(func() string {
	path, err := os.Executable()
	if err != nil {
		return ""
	}
	f, err := elf.Open(path)
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	s := f.Section(".note.go.buildid")
	if s == nil {
		return ""
	}
	note, err := s.Data()
	if err != nil || len(note) < 16 {
		return ""
	}
	// an ELF note: name size, description size, type, the name "Go\x00\x00", the description
	nameSize, descSize := f.ByteOrder.Uint32(note), f.ByteOrder.Uint32(note[4:])
	start := 12 + (int(nameSize)+3)&^3
	if nameSize != 4 || start+int(descSize) > len(note) || descSize == 0 {
		return ""
	}
	return string(note[start : start+int(descSize)])
})

// Store reads and writes memos. A nil Store is off: it has no memo and writes none.
type Store struct {
	client    kubernetes.Interface
	namespace string
	// memos are each policy's memo as last read or written, encoded
	memos *apistore.Known[stored]
}

type stored struct{ scope, entries string }

// NewStore returns the store of namespace; "" turns it off (nil).
func NewStore(client kubernetes.Interface, namespace string) *Store {
	if namespace == "" {
		return nil
	}
	s := &Store{client: client, namespace: namespace}
	s.memos = apistore.NewKnown(s.get, func(a, b stored) bool { return a == b })
	return s
}

// Load returns a policy's memo when it was written in this scope; nil when there is none.
func (s *Store) Load(ctx context.Context, policyName, scope string) (Entries, error) {
	if s == nil || scope == "" {
		return nil, nil
	}
	got, err := s.memos.Get(ctx, policyName)
	if err != nil || got.scope != scope {
		return nil, err
	}
	entries, err := decode([]byte(got.entries))
	if err != nil {
		return nil, fmt.Errorf("memo of policy %q (ConfigMap %s/%s, key %s): %w", policyName, s.namespace, ConfigMapName(policyName), keyEntries, err)
	}
	return entries, nil
}

// Save writes a policy's memo, unless the ConfigMap holds it already.
func (s *Store) Save(ctx context.Context, policyName, scope string, entries Entries) error {
	if s == nil || scope == "" {
		return nil
	}
	memo := stored{scope: scope, entries: string(encode(entries))}
	err := s.memos.Put(ctx, policyName, memo, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		cm := corev1ac.ConfigMap(ConfigMapName(policyName), s.namespace).
			WithLabels(map[string]string{contract.LabelMemoOf: policyName}).
			WithData(map[string]string{keyScope: scope}).
			WithBinaryData(map[string][]byte{keyEntries: []byte(memo.entries)})
		_, err := s.client.CoreV1().ConfigMaps(s.namespace).Apply(ctx, cm, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
		return err
	})
	if err != nil {
		return fmt.Errorf("write the memo of policy %q: %w", policyName, err)
	}
	return nil
}

// get reads a policy's memo as stored (empty when there is none).
func (s *Store) get(ctx context.Context, policyName string) (stored, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	cm, err := apistore.Get(ctx, s.client.CoreV1().ConfigMaps(s.namespace), ConfigMapName(policyName))
	if err != nil {
		return stored{}, fmt.Errorf("read the memo of policy %q: %w", policyName, err)
	}
	if cm == nil {
		return stored{}, nil
	}
	return stored{scope: cm.Data[keyScope], entries: string(cm.BinaryData[keyEntries])}, nil
}

// encode writes entries in the order of their fingerprints (the same entries, the same bytes), at
// most MaxEntries of them.
func encode(entries Entries) []byte {
	keys := make([]uint64, 0, len(entries))
	for k := range entries {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmp.Compare)
	keys = keys[:min(len(keys), MaxEntries)]
	out := make([]byte, 0, len(keys)*entrySize)
	for _, k := range keys {
		out = binary.BigEndian.AppendUint64(out, k)
		out = append(out, entries[k])
	}
	return out
}

var errTruncated = errors.New("not a whole number of entries")

func decode(data []byte) (Entries, error) {
	if len(data)%entrySize != 0 {
		return nil, fmt.Errorf("%d bytes: %w", len(data), errTruncated)
	}
	out := make(Entries, len(data)/entrySize)
	for e := range slices.Chunk(data, entrySize) {
		out[binary.BigEndian.Uint64(e)] = e[8]
	}
	return out, nil
}
