package policystatus

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"

	"metacel.dev/metacel/runtime/contract"
)

// labelKeys and annotationKeys are the labels and annotations a Reporter writes on a policy
// ConfigMap; it owns these and no others.
var (
	labelKeys = []string{contract.LabelPolicyState, contract.LabelPolicyVersion, contract.LabelPolicyParents,
		contract.LabelPolicyReady, contract.LabelPolicyFailing, contract.LabelPolicyRollout}
	annotationKeys = []string{contract.AnnotationPolicyLastError, contract.AnnotationPolicyStatus}
)

// maxErrorLength bounds an error in the annotations, in characters.
const maxErrorLength = 1000

// metadata is what a Reporter writes on one ConfigMap: its own labels and annotations only.
type metadata struct {
	labels, annotations map[string]string
}

func (m metadata) equal(o metadata) bool {
	return maps.Equal(m.labels, o.labels) && maps.Equal(m.annotations, o.annotations)
}

func (m metadata) empty() bool { return len(m.labels) == 0 && len(m.annotations) == 0 }

// observedMetadata is the part of a ConfigMap's metadata a Reporter owns.
func observedMetadata(cm *corev1.ConfigMap) metadata {
	return metadata{labels: pick(cm.Labels, labelKeys), annotations: pick(cm.Annotations, annotationKeys)}
}

func pick(m map[string]string, keys []string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

// desiredMetadata sums up the statuses of a ConfigMap's policies (by policy name); none gives
// empty metadata, which removes what was written.
func desiredMetadata(statuses map[string]Status) metadata {
	m := metadata{labels: map[string]string{}, annotations: map[string]string{}}
	if len(statuses) == 0 {
		return m
	}
	names := slices.Sorted(maps.Keys(statuses))
	var parents, ready, failing int
	for _, s := range statuses {
		parents, ready, failing = parents+s.Parents, ready+s.Ready, failing+s.Failing
	}
	m.labels[contract.LabelPolicyState] = labelValue(string(mostSevere(statuses)))
	m.labels[contract.LabelPolicyVersion] = labelValue(version(names, statuses))
	m.labels[contract.LabelPolicyParents] = strconv.Itoa(parents)
	m.labels[contract.LabelPolicyReady] = strconv.Itoa(ready)
	m.labels[contract.LabelPolicyFailing] = strconv.Itoa(failing)
	if rollout := rollout(names, statuses); rollout != "" {
		m.labels[contract.LabelPolicyRollout] = rollout
	}
	if msg := lastError(names, statuses); msg != "" {
		m.annotations[contract.AnnotationPolicyLastError] = msg
	}
	m.annotations[contract.AnnotationPolicyStatus] = statusJSON(statuses)
	return m
}

func mostSevere(statuses map[string]Status) State {
	var worst State
	first := true
	for _, s := range statuses {
		if first || severity[s.State] > severity[worst] || (severity[s.State] == severity[worst] && s.State > worst) {
			worst, first = s.State, false
		}
	}
	return worst
}

// version is the single policy's version or, for several, a short hash of their versions.
func version(names []string, statuses map[string]Status) string {
	if len(names) == 1 {
		return ShortVersion(statuses[names[0]].Version)
	}
	h := sha256.New()
	for _, name := range names {
		fmt.Fprintf(h, "%s\x00%s\n", name, statuses[name].Version)
	}
	return hex.EncodeToString(h.Sum(nil))[:versionLength]
}

// rollout is "2-of-3" for the first policy (by name) that is rolling out, "" when none is.
func rollout(names []string, statuses map[string]Status) string {
	for _, name := range names {
		if s := statuses[name]; s.Steps > 0 {
			return fmt.Sprintf("%d-of-%d", s.Step, s.Steps)
		}
	}
	return ""
}

// lastError is the single policy's last error or, for several, each one's, prefixed with its
// name, one a line; trimmed to maxErrorLength.
func lastError(names []string, statuses map[string]Status) string {
	if len(names) == 1 {
		return trimError(statuses[names[0]].LastError)
	}
	var lines []string
	for _, name := range names {
		if e := statuses[name].LastError; e != "" {
			lines = append(lines, name+": "+e)
		}
	}
	return trimError(strings.Join(lines, "\n"))
}

// statusJSON is the annotation holding every policy's Status, each error trimmed.
func statusJSON(statuses map[string]Status) string {
	trimmed := make(map[string]Status, len(statuses))
	for name, s := range statuses {
		s.LastError = trimError(s.LastError)
		trimmed[name] = s
	}
	data, err := json.Marshal(trimmed) // map keys are sorted: the same statuses give the same text
	if err != nil {
		return "" // cannot happen: Status holds strings and ints only
	}
	return string(data)
}

// labelValue makes s a valid label value: characters other than letters, digits, '-', '_' and
// '.' become '-', the value is cut to 63 characters and starts and ends with a letter or digit.
func labelValue(s string) string {
	s = strings.Map(func(r rune) rune {
		if isAlphanumeric(r) || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '-'
	}, s)
	if len(s) > maxLabelValueLength {
		s = s[:maxLabelValueLength]
	}
	return strings.TrimFunc(s, func(r rune) bool { return !isAlphanumeric(r) })
}

const maxLabelValueLength = 63

func isAlphanumeric(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

// trimError cuts an error to maxErrorLength characters, the last one an ellipsis when cut.
func trimError(s string) string {
	if utf8.RuneCountInString(s) <= maxErrorLength {
		return s
	}
	return string([]rune(s)[:maxErrorLength-1]) + "…"
}
