package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/apistore"
	"metacel.dev/metacel/runtime/contract"
)

// Phase is where a policy's rollout stands.
type Phase string

const (
	// Stable: one version serves every parent.
	Stable Phase = "Stable"
	// RollingOut: the target version serves the parents of the steps done so far, the stable
	// version the others.
	RollingOut Phase = "RollingOut"
	// RolledBack: the target version failed; the stable version serves every parent, and the
	// target is not tried again until the policy changes again (to the stable version, which
	// records Stable, or to another).
	RolledBack Phase = "RolledBack"
)

// Record is what the API server keeps of a policy's versions.
type Record struct {
	Phase Phase `json:"phase"`
	// Stable is the version (Version) serving every parent not moved.
	Stable string `json:"stable"`
	// StableUnit and StableSource are where the stable version came from and its text: enough to
	// compile it again after a restart.
	StableUnit   string `json:"stableUnit,omitempty"`
	StableSource string `json:"-"`
	// Target is the version rolling out, or the one rolled back.
	Target string `json:"target,omitempty"`
	// Step is the index of the current step; StepStarted when it began.
	Step        int       `json:"step,omitempty"`
	StepStarted time.Time `json:"stepStarted,omitzero"`
	// Message says why a rollout failed.
	Message string `json:"message,omitempty"`
	// Stopped: the policy left the running policies, removed from every source, so that it holds
	// no claim to its parent resource until it runs again: of two
	// policies for one parent resource, one that comes back does not take the parents over from
	// the one that runs (package operator's conflicts). Its next start writes the record anew.
	Stopped bool `json:"stopped,omitempty"`
}

// ConfigMap keys of a record.
const (
	keyRecord = "record.json"
	keySource = "stable.yaml"
	// FieldManager is the field manager of the records and of the loaded versions on the
	// policies' ConfigMaps: the runtime's own, not "metacel", the children's
	FieldManager   = "metacel-rollout"
	requestTimeout = 30 * time.Second
)

// ConfigMapName is the name of a policy's record.
func ConfigMapName(policyName string) string { return "metacel-rollout-" + policyName }

// Ref names a policy's record, for logs.
func (s *Store) Ref(policyName string) klog.ObjectRef {
	if s == nil {
		return klog.ObjectRef{Name: ConfigMapName(policyName)}
	}
	return klog.KRef(s.namespace, ConfigMapName(policyName))
}

// Store reads and writes records. A nil Store is off: it knows no record and writes none, so
// rollouts happen in memory only (policies from files, without a policy namespace).
type Store struct {
	client    kubernetes.Interface
	namespace string
	// records are what was last read or written, by policy
	records *apistore.Known[*Record]

	mu sync.Mutex
	// loaded are the versions of each policy this process loaded from its ConfigMap (NoteLoaded),
	// anchored those known to be listed on it (anchorKey)
	loaded   map[string][]string
	anchored map[string]bool
}

// NewStore returns the store of namespace; "" turns it off (nil).
func NewStore(client kubernetes.Interface, namespace string) *Store {
	if namespace == "" {
		return nil
	}
	s := &Store{client: client, namespace: namespace, loaded: map[string][]string{}, anchored: map[string]bool{}}
	s.records = apistore.NewKnown(s.get, func(a, b *Record) bool { return a != nil && b != nil && sameRecord(*a, *b) })
	return s
}

// Get returns a policy's record; nil when it has none.
func (s *Store) Get(ctx context.Context, policyName string) (*Record, error) {
	if s == nil {
		return nil, nil
	}
	rec, err := s.records.Get(ctx, policyName)
	if rec == nil {
		return nil, err
	}
	c := *rec // what the store remembers stays as read
	return &c, nil
}

func (s *Store) get(ctx context.Context, policyName string) (*Record, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	cm, err := apistore.Get(ctx, s.client.CoreV1().ConfigMaps(s.namespace), ConfigMapName(policyName))
	if err != nil {
		return nil, fmt.Errorf("read the rollout record of policy %q: %w", policyName, err)
	}
	if cm == nil {
		return nil, nil
	}
	var rec Record
	if err := json.Unmarshal([]byte(cm.Data[keyRecord]), &rec); err != nil {
		return nil, fmt.Errorf("rollout record of policy %q (ConfigMap %s/%s, key %s): %w", policyName, s.namespace, cm.Name, keyRecord, err)
	}
	rec.StableSource = cm.Data[keySource]
	return &rec, nil
}

// Put writes a policy's record, unless it is the one last read or written or, when this store has
// neither read nor written it (a restart), the one its ConfigMap holds: a restart writes nothing.
func (s *Store) Put(ctx context.Context, policyName string, rec Record) error {
	if s == nil {
		return nil
	}
	return s.records.Put(ctx, policyName, &rec, func(ctx context.Context) error {
		body, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		cm := corev1ac.ConfigMap(ConfigMapName(policyName), s.namespace).
			WithLabels(map[string]string{contract.LabelRolloutOf: policyName, contract.LabelManagedBy: contract.ManagedByValue}).
			WithData(map[string]string{keyRecord: string(body), keySource: rec.StableSource})
		if _, err := s.client.CoreV1().ConfigMaps(s.namespace).Apply(ctx, cm, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
			return fmt.Errorf("write the rollout record of policy %q: %w", policyName, err)
		}
		return nil
	})
}

// sameRecord compares records as they are stored (a time read back has no monotonic reading).
func sameRecord(a, b Record) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb) && a.StableSource == b.StableSource
}
