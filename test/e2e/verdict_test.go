//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/render"
)

// TestOfflineVerdictAgreesWithTheAPIServer measures how far metacel's offline verdict on a child
// (render.Admit, the check `render` and the runtime make of a child before sending it) agrees with
// the API server's: every object of the corpus (verdictcorpus_test.go: a valid object of each built-in
// kind users put in policies, and mutations of one field each) is judged offline and sent to the
// API server as a server-side dry-run create, and the test logs how many both accept, both refuse,
// and each disagreement with its field and the server's message.
//
// It fails when the API server refuses an object metacel accepts (such a child would reach the
// cluster and fail there on every sync), unless knownDisagreements lists it; when a listed
// disagreement no longer happens (the list only shrinks); and when either refuses a base object.
// An object metacel refuses and the API server accepts is reported, not failed.
func TestOfflineVerdictAgreesWithTheAPIServer(t *testing.T) {
	start := time.Now()
	corpus := verdictCorpus(t)
	if len(corpus) < 500 {
		t.Errorf("the corpus holds %d objects, want at least 500", len(corpus))
	}
	ns := newNamespace(t, "verdict")
	waitForDefaultServiceAccount(t, ns) // the ServiceAccount admission plugin wants it for a Pod
	judgeOffline(t, corpus)
	judgeByTheAPIServer(t, ns, corpus)
	report := tally(corpus)
	t.Logf("%d objects of %d kinds, judged in %s:\n%s", len(corpus), len(verdictBases), time.Since(start).Round(time.Millisecond), report)
	checkAgreement(t, corpus)
}

// verdictCase is one object of the corpus and the two verdicts on it.
type verdictCase struct {
	id, kind, field string // id is Kind/mutation
	value           any
	obj             *unstructured.Unstructured
	info            kinds.Info
	// offline is render.Admit's error; server the dry run's refusal; nil when accepted
	offline, server error
}

func (c *verdictCase) mutation() string { return strings.TrimPrefix(c.id, c.kind+"/") }

// change says what the mutation did: "field=value", "field removed".
func (c *verdictCase) change() string {
	switch {
	case c.field == "":
		return "unchanged"
	case c.value == removed:
		return c.field + " removed"
	}
	v, _ := json.Marshal(c.value)
	if len(v) > 60 {
		v = append(v[:60], "…"...)
	}
	return c.field + "=" + string(v)
}

// verdictCorpus builds the corpus: each base as it is (Kind/valid), and each mutation that
// applies to it.
func verdictCorpus(t *testing.T) []*verdictCase {
	t.Helper()
	catalog := kinds.NewCatalog()
	var out []*verdictCase
	seen := map[string]bool{}
	for _, kind := range sortedKinds() {
		base := verdictBases[kind]
		obj := parseBase(t, base)
		if obj.GetKind() != kind {
			t.Fatalf("the base of %s is a %s", kind, obj.GetKind())
		}
		info, ok := catalog.ForKind(obj.GroupVersionKind())
		if !ok {
			t.Fatalf("the built-in catalog does not know %s", obj.GroupVersionKind())
		}
		add := func(mut verdictMutation, prefix string) {
			c := &verdictCase{id: kind + "/" + mut.id, kind: kind, field: joinPath(prefix, mut.field), value: mut.value, info: info}
			if seen[c.id] {
				t.Fatalf("two objects are called %s", c.id)
			}
			seen[c.id] = true
			c.obj = obj.DeepCopy()
			if err := setField(c.obj.Object, c.field, mut.value); err != nil {
				t.Fatalf("%s: %v", c.id, err)
			}
			out = append(out, c)
		}
		out = append(out, &verdictCase{id: kind + "/valid", kind: kind, obj: obj.DeepCopy(), info: info})
		seen[kind+"/valid"] = true
		for _, mut := range metaMutations {
			add(mut, "")
		}
		if base.podSpec != "" {
			for _, mut := range podMutations {
				add(mut, base.podSpec)
			}
		}
		for _, mut := range kindMutations {
			if slices.Contains(mut.kinds, kind) {
				add(mut, "")
			}
		}
	}
	return out
}

// sortedKinds returns the kinds of verdictBases in a stable order.
func sortedKinds() []string {
	out := make([]string, 0, len(verdictBases))
	for k := range verdictBases {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// parseBase reads a base object and merges verdictPodSpec into its Pod spec.
func parseBase(t *testing.T, base verdictBase) *unstructured.Unstructured {
	t.Helper()
	obj := map[string]any{}
	if err := decodeYAML(base.yaml, &obj); err != nil {
		t.Fatalf("a base: %v", err)
	}
	if base.podSpec != "" {
		pod := map[string]any{}
		if err := decodeYAML(verdictPodSpec, &pod); err != nil {
			t.Fatalf("the Pod spec: %v", err)
		}
		spec, err := fieldMap(obj, base.podSpec)
		if err != nil {
			t.Fatalf("%s: %v", base.podSpec, err)
		}
		for k, v := range pod {
			if _, set := spec[k]; !set {
				spec[k] = v
			}
		}
	}
	return &unstructured.Unstructured{Object: obj}
}

// decodeYAML decodes YAML into JSON values as an unstructured object holds them (int64 numbers).
func decodeYAML(text string, into any) error {
	data, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		return err
	}
	return utiljson.Unmarshal(data, into)
}

// jsonValue returns a mutation's value as JSON values (int64 numbers, []any, map[string]any).
func jsonValue(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	return out, utiljson.Unmarshal(data, &out)
}

func joinPath(prefix, field string) string {
	if prefix == "" {
		return field
	}
	return prefix + "." + field
}

// pathStep is one step of a field path: a key, or an index of a list.
type pathStep struct {
	key   string
	index int // -1 for a key
}

// parsePath reads "a.b[0].c" as steps.
func parsePath(path string) ([]pathStep, error) {
	var out []pathStep
	for part := range strings.SplitSeq(path, ".") {
		key, rest, _ := strings.Cut(part, "[")
		if key == "" {
			return nil, fmt.Errorf("field path %q: an empty key", path)
		}
		out = append(out, pathStep{key: key, index: -1})
		for rest != "" {
			n, after, ok := strings.Cut(rest, "]")
			i, err := strconv.Atoi(n)
			if !ok || err != nil {
				return nil, fmt.Errorf("field path %q: a bad index", path)
			}
			out = append(out, pathStep{index: i})
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return out, nil
}

// setField sets the field at path to value (removed: removes it); a list index one past the end
// appends.
func setField(obj map[string]any, path string, value any) error {
	steps, err := parsePath(path)
	if err != nil {
		return err
	}
	if value != removed {
		if value, err = jsonValue(value); err != nil {
			return err
		}
	}
	var parent any = obj
	for i, s := range steps {
		last := i == len(steps)-1
		switch p := parent.(type) {
		case map[string]any:
			if last {
				if value == removed {
					delete(p, s.key)
				} else {
					p[s.key] = value
				}
				return nil
			}
			next, ok := p[s.key]
			if !ok {
				next = map[string]any{} // a missing object on the way is made
				p[s.key] = next
			}
			if steps[i+1].index >= 0 {
				items, _ := next.([]any)
				if steps[i+1].index > len(items) {
					return fmt.Errorf("%s: index %d past the end", path, steps[i+1].index)
				}
				if steps[i+1].index == len(items) {
					items = append(items, map[string]any{})
					p[s.key] = items
				}
				next = items
			}
			parent = next
		case []any:
			if last {
				if value == removed {
					return fmt.Errorf("%s: cannot remove an item", path)
				}
				p[s.index] = value
				return nil
			}
			parent = p[s.index]
		default:
			return fmt.Errorf("%s: step %d is no object or list", path, i)
		}
	}
	return nil
}

// fieldMap returns the object at path.
func fieldMap(obj map[string]any, path string) (map[string]any, error) {
	v, found, err := unstructured.NestedFieldNoCopy(obj, strings.Split(path, ".")...)
	out, ok := v.(map[string]any)
	if err != nil || !found || !ok {
		return nil, errors.New("no object there")
	}
	return out, nil
}

// waitForDefaultServiceAccount waits until the controller-manager made ns's default ServiceAccount.
func waitForDefaultServiceAccount(t *testing.T, ns string) {
	t.Helper()
	eventually(t, 30*time.Second, "the default ServiceAccount of "+ns, func() error {
		_, err := cluster.kube.CoreV1().ServiceAccounts(ns).Get(t.Context(), "default", metav1.GetOptions{})
		return err
	})
}

// judgeOffline gives each object metacel's verdict, with the schema of its kind as the runtime
// finds it offline (the built-in catalog).
func judgeOffline(t *testing.T, corpus []*verdictCase) {
	t.Helper()
	schemas := map[string]*kinds.ObjectSchema{}
	for _, c := range corpus {
		s, ok := schemas[c.kind]
		if !ok {
			var err error
			if s, err = kinds.SchemaOf(c.info); err != nil || s == nil {
				t.Fatalf("the schema of %s: %v (none: %t)", c.kind, err, s == nil)
			}
			schemas[c.kind] = s
		}
		c.offline = render.Admit(c.obj, s)
	}
}

// verdictWorkers is how many dry runs are in flight at once.
const verdictWorkers = 8

// judgeByTheAPIServer gives each object the API server's verdict: a create with dryRun=All, in
// namespace ns for a namespaced kind. Field validation is Strict, as for the server-side apply
// that metacel sends on every later sync (a create's default only warns of an unknown field and
// drops it).
func judgeByTheAPIServer(t *testing.T, ns string, corpus []*verdictCase) {
	t.Helper()
	client := quietClient(t)
	work := make(chan *verdictCase)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	for range verdictWorkers {
		wg.Go(func() {
			for c := range work {
				if err := dryRunCreate(t.Context(), client, ns, c); err != nil {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%s: %v", c.id, err))
					mu.Unlock()
				}
			}
		})
	}
	for _, c := range corpus {
		work <- c
	}
	close(work)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("dry runs failed with no verdict:\n%s", strings.Join(failures, "\n"))
	}
}

// quietClient is a client of the cluster that does not log the API server's warnings (a name that
// is no DNS label, a negative revisionHistoryLimit): the verdicts are what the test reports.
func quietClient(t *testing.T) dynamic.Interface {
	t.Helper()
	cfg := rest.CopyConfig(cluster.config)
	cfg.WarningHandler = rest.NoWarnings{}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// dryRunCreate sends one object; a refusal is its verdict, any other error is returned.
func dryRunCreate(ctx context.Context, client dynamic.Interface, ns string, c *verdictCase) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res := client.Resource(c.info.GVR)
	obj := c.obj.DeepCopy()
	var err error
	if c.info.Namespaced {
		obj.SetNamespace(ns)
		_, err = res.Namespace(ns).Create(ctx, obj, dryRunStrict)
	} else {
		_, err = res.Create(ctx, obj, dryRunStrict)
	}
	if err == nil || refusal(err) {
		c.server = err
		return nil
	}
	return err
}

var dryRunStrict = metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict, FieldManager: "metacel"}

// refusal reports whether err is the API server's verdict on the object (invalid, malformed, too
// large, forbidden by admission), not a failure to judge it.
func refusal(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	switch status.Status().Code {
	case http.StatusBadRequest, http.StatusForbidden, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return true
	}
	return false
}

// verdictTally counts the corpus by agreement.
type verdictTally struct {
	objects, bothAccept, bothRefuse, missed, overcautious int
}

func (v *verdictTally) add(c *verdictCase) {
	v.objects++
	switch {
	case c.offline == nil && c.server == nil:
		v.bothAccept++
	case c.offline != nil && c.server != nil:
		v.bothRefuse++
	case c.offline == nil:
		v.missed++
	default:
		v.overcautious++
	}
}

// tally reports the agreement: the totals, a row per kind, and each disagreement.
func tally(corpus []*verdictCase) string {
	var total verdictTally
	byKind := map[string]*verdictTally{}
	for _, c := range corpus {
		total.add(c)
		if byKind[c.kind] == nil {
			byKind[c.kind] = &verdictTally{}
		}
		byKind[c.kind].add(c)
	}
	var b strings.Builder
	row := func(name string, v verdictTally) {
		fmt.Fprintf(&b, "%-24s %7d %11d %11d %16d %20d\n", name, v.objects, v.bothAccept, v.bothRefuse, v.missed, v.overcautious)
	}
	fmt.Fprintf(&b, "%-24s %7s %11s %11s %16s %20s\n", "kind", "objects", "both accept", "both refuse", "only API refuses", "only metacel refuses")
	for _, kind := range sortedKinds() {
		row(kind, *byKind[kind])
	}
	row("total", total)
	agree := total.bothAccept + total.bothRefuse
	fmt.Fprintf(&b, "agreement: %d of %d (%.1f%%); the API server refuses %d, metacel %d of them\n",
		agree, total.objects, 100*float64(agree)/float64(total.objects), total.bothRefuse+total.missed, total.bothRefuse)
	b.WriteString("\nmutations both accept (kinds):\n")
	for _, line := range acceptedMutations(corpus) {
		b.WriteString("  " + line + "\n")
	}
	b.WriteString("\naccepted by metacel, refused by the API server (field: the server's message):\n")
	for _, c := range corpus {
		if c.offline == nil && c.server != nil {
			fmt.Fprintf(&b, "  %s %s: %s\n", c.id, c.change(), short(c.server))
		}
	}
	b.WriteString("\nrefused by metacel, accepted by the API server (field: metacel's message):\n")
	for _, c := range corpus {
		if c.offline != nil && c.server == nil {
			fmt.Fprintf(&b, "  %s %s: %s\n", c.id, c.change(), short(c.offline))
		}
	}
	return b.String()
}

// acceptedMutations lists the mutations both verdicts accept, each with its kinds.
func acceptedMutations(corpus []*verdictCase) []string {
	kindsOf := map[string][]string{}
	var order []string
	for _, c := range corpus {
		if c.mutation() == "valid" || c.offline != nil || c.server != nil {
			continue
		}
		if kindsOf[c.mutation()] == nil {
			order = append(order, c.mutation())
		}
		kindsOf[c.mutation()] = append(kindsOf[c.mutation()], c.kind)
	}
	slices.Sort(order)
	out := make([]string, 0, len(order))
	for _, mut := range order {
		out = append(out, mut+" ("+strings.Join(kindsOf[mut], ", ")+")")
	}
	return out
}

// short cuts a message to one line of at most 240 characters.
func short(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 240 {
		s = s[:240] + "…"
	}
	return s
}

// checkAgreement fails on a base object either refuses, on each object the API server refuses and
// metacel accepts that knownDisagreements does not list, on each object it lists that is no such
// disagreement, and on each of its patterns that names no object of the corpus.
func checkAgreement(t *testing.T, corpus []*verdictCase) {
	t.Helper()
	matched := map[string]bool{}
	var stale []string
	for _, c := range corpus {
		if c.mutation() == "valid" && (c.offline != nil || c.server != nil) {
			t.Errorf("%s, a valid object, is refused: offline %v; by the API server %v", c.id, c.offline, c.server)
		}
		missed := c.offline == nil && c.server != nil
		pattern, known := knownDisagreement(c)
		if known {
			matched[pattern] = true
		}
		switch {
		case known && !missed:
			stale = append(stale, c.id)
		case !known && missed:
			t.Errorf("%s: the API server refuses it and metacel accepts it (%s: %s)", c.id, c.change(), short(c.server))
		}
	}
	if len(stale) > 0 {
		t.Errorf("knownDisagreements lists objects metacel and the API server now agree on: narrow or remove their entries:\n  %s", strings.Join(stale, "\n  "))
	}
	for _, k := range knownDisagreements {
		for _, pattern := range k.objects {
			if !matched[pattern] {
				t.Errorf("knownDisagreements names %q (%s), no object of the corpus", pattern, k.reason)
			}
		}
	}
}

// knownDisagreement returns the pattern of knownDisagreements that names c, if one does.
func knownDisagreement(c *verdictCase) (string, bool) {
	for _, k := range knownDisagreements {
		for _, pattern := range []string{c.id, "*/" + c.mutation()} {
			if slices.Contains(k.objects, pattern) {
				return pattern, true
			}
		}
	}
	return "", false
}

// verdictKnown is an accepted disagreement: objects the API server refuses and metacel accepts,
// and why. An object is "Kind/mutation", or "*/mutation" for every kind the mutation applies to.
type verdictKnown struct {
	reason  string
	objects []string
}

// knownDisagreements are the objects the API server refuses that metacel's offline verdict
// (render.Admit) accepts, each group with its reason. Since Kubernetes' own validation runs
// offline (runtime/apivalidation), none: 985 of the corpus's 1317 objects are refused by both.
// The list only shrinks: an entry that matches an object metacel refuses fails the test, so that
// it is narrowed or removed.
var knownDisagreements = []verdictKnown{}
