package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"metacel.dev/metacel/runtime/contract"
)

// NoteLoaded remembers, in this process, that version of a policy was loaded from its labelled
// ConfigMap (or is the stable version of a record it trusted); inUse are the versions the policy
// runs now, kept when the oldest are dropped.
func (s *Store) NoteLoaded(policyName, version string, inUse ...string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loaded[policyName] = Remember(s.loaded[policyName], version, inUse...)
}

// Loaded returns the versions of a policy that a record may name: those this process loaded,
// and those the annotation of the ConfigMap the policy loads from (ref; nil: a file) lists.
func (s *Store) Loaded(ctx context.Context, ref *corev1.ObjectReference, policyName string) ([]string, error) {
	if s == nil {
		return nil, nil
	}
	out := s.remembered(policyName)
	if ref == nil {
		return out, nil
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	cm, err := s.client.CoreV1().ConfigMaps(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return out, fmt.Errorf("read the versions of policy %q loaded from ConfigMap %s/%s: %w", policyName, ref.Namespace, ref.Name, err)
	}
	listed := parseLoaded(cm.Annotations[contract.AnnotationLoadedVersions])[policyName]
	s.markAnchored(cm.UID, policyName, listed)
	return append(out, listed...), nil
}

// Anchor writes versions of a policy, before a record naming them is written, on the annotation
// of the ConfigMap the policy loads from (ref; nil: a file, which has nowhere to write): a
// restarted runtime trusts the record only for the versions listed there (Loaded). Only versions
// NoteLoaded remembered are written; the oldest beyond MaxLoadedVersions are dropped, never one
// of versions. Versions known to be there already cost no request.
func (s *Store) Anchor(ctx context.Context, ref *corev1.ObjectReference, policyName string, versions ...string) error {
	if s == nil || ref == nil {
		return nil
	}
	missing := s.unanchored(ref.UID, policyName, versions)
	if len(missing) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	configMaps := s.client.CoreV1().ConfigMaps(ref.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := configMaps.Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		all := parseLoaded(cm.Annotations[contract.AnnotationLoadedVersions])
		list := all[policyName]
		for _, v := range missing {
			list = Remember(list, v, versions...)
		}
		if slices.Equal(list, all[policyName]) {
			return nil
		}
		dropped := slices.DeleteFunc(slices.Clone(all[policyName]), func(v string) bool { return slices.Contains(list, v) })
		all[policyName] = list
		patch, err := loadedPatch(cm, all)
		if err != nil {
			return err
		}
		if _, err = configMaps.Patch(ctx, ref.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}); err == nil {
			s.unmarkAnchored(cm.UID, policyName, dropped)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("write the loaded versions of policy %q on ConfigMap %s/%s: %w", policyName, ref.Namespace, ref.Name, err)
	}
	s.markAnchored(ref.UID, policyName, missing)
	return nil
}

// loadedPatch is the merge patch that sets a ConfigMap's loaded versions, refused (Conflict) when
// the ConfigMap changed since it was read, or is another one of the same name.
func loadedPatch(cm *corev1.ConfigMap, all map[string][]string) ([]byte, error) {
	value, err := json.Marshal(all)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": cm.UID, "resourceVersion": cm.ResourceVersion,
		"annotations": map[string]string{contract.AnnotationLoadedVersions: string(value)},
	}})
}

// parseLoaded reads the annotation; a value that is not the runtime's reads as none.
func parseLoaded(value string) map[string][]string {
	out := map[string][]string{}
	if value != "" && json.Unmarshal([]byte(value), &out) != nil {
		return map[string][]string{}
	}
	return out
}

func (s *Store) remembered(policyName string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.loaded[policyName])
}

// unanchored returns the versions remembered but not known to be on the ConfigMap of uid.
func (s *Store) unanchored(uid types.UID, policyName string, versions []string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, v := range versions {
		if v != "" && slices.Contains(s.loaded[policyName], v) && !s.anchored[anchorKey(uid, policyName, v)] {
			out = append(out, v)
		}
	}
	return out
}

func (s *Store) markAnchored(uid types.UID, policyName string, versions []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range versions {
		s.anchored[anchorKey(uid, policyName, v)] = true
	}
}

func (s *Store) unmarkAnchored(uid types.UID, policyName string, versions []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range versions {
		delete(s.anchored, anchorKey(uid, policyName, v))
	}
}

func anchorKey(uid types.UID, policyName, version string) string {
	return string(uid) + "/" + policyName + "/" + version
}
