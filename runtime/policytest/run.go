package policytest

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/preview"
)

// Options say which tests run, and whether expectations that fail are rewritten.
type Options struct {
	// Run selects the tests whose name (file/test) it matches; nil runs every test.
	Run *regexp.Regexp
	// Update rewrites the expectations of the steps that fail, or have none, with what they gave.
	Update bool
	// Notes receives a line per file of a directory that is skipped as no test file; nil discards them.
	Notes io.Writer
}

// Report is the outcome of one test.
type Report struct {
	// Name is the file's base name without extension, a slash, and the test's name.
	Name    string
	Passed  bool
	Updated bool
	// Messages say what failed: file:line: step: what differs, and a unified diff.
	Messages []string
}

// runFile runs the tests of one file; with Update, it rewrites the file's failing expectations.
// A file that cannot be read or whose policy does not load is an error.
func runFile(ctx context.Context, path string, opts Options) ([]Report, error) {
	f, err := load(path)
	if err != nil {
		return nil, err
	}
	env, err := newEnv(f)
	if err != nil {
		return nil, err
	}
	var reports []Report
	updated := false
	for _, t := range f.Tests {
		name := testName(f, t)
		if opts.Run != nil && !opts.Run.MatchString(name) {
			continue
		}
		r := env.runTest(ctx, t, opts)
		r.Name = name
		updated = updated || r.Updated
		reports = append(reports, r)
	}
	if updated {
		if err := f.write(); err != nil {
			return reports, err
		}
	}
	return reports, nil
}

func testName(f *File, t *Test) string {
	return strings.TrimSuffix(filepath.Base(f.Path), filepath.Ext(f.Path)) + "/" + t.Name
}

// env is what the tests of one file share: the policy and the kinds.
type env struct {
	file   *File
	policy *policy.Compiled
	mapper kinds.Mapper
}

func newEnv(f *File) (*env, error) {
	cat, err := kinds.LoadCRDFiles(f.CRDs)
	if err != nil {
		return nil, fmt.Errorf("%s: crds: %w", f.Path, err)
	}
	c, err := preview.LoadPolicy(f.Policy, f.PolicyName, cat)
	if err == nil {
		err = preview.CheckParentDefined(c, cat)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: policy: %w", f.Path, err)
	}
	return &env{file: f, policy: c, mapper: cat}, nil
}

// runTest runs the steps of a test in order, each on the world the previous one left.
func (e *env) runTest(ctx context.Context, t *Test, opts Options) Report {
	r := Report{Passed: true}
	w, err := e.initialWorld(ctx, t)
	if err != nil {
		return Report{Messages: []string{fmt.Sprintf("%s:%d: %s: %v", e.file.Path, t.Line, t.Path, err)}}
	}
	for _, s := range t.Steps {
		if err := w.edit(e, s); err != nil {
			r.Passed = false
			r.Messages = append(r.Messages, fmt.Sprintf("%s:%d: %s (%s): %v", e.file.Path, s.Line, s.Path, s.Name, err))
			return r
		}
		got, whole := e.sync(ctx, w, false), e.sync(ctx, w, true)
		if msg := e.keptDiffers(s, got, whole); msg != "" {
			r.Passed = false
			r.Messages = append(r.Messages, msg)
			return r
		}
		if msgs := e.unmarkedObserved(t, s, w.children, got); len(msgs) > 0 {
			r.Passed = false
			r.Messages = append(r.Messages, msgs...)
			return r
		}
		if msg := e.check(s, got); msg != "" {
			if opts.Update {
				s.record(got)
				r.Updated = true
			} else {
				r.Passed = false
				r.Messages = append(r.Messages, msg)
			}
		}
		w.advance(whole) // the cluster holds the children whole
	}
	return r
}

// keptDiffers says how a step's sync of the children as the runtime's caches keep them
// (policy.Compiled.Kept) differs from its sync of the whole children; "" when it does not. They
// differ only if the fields kept miss one the policy reads: a bug in metacel, not in the test.
func (e *env) keptDiffers(s *Step, kept, whole *outcome) string {
	for _, d := range []struct {
		what      string
		got, want any
	}{
		{"children", kept.children, whole.children}, {"status", kept.status, whole.status},
		{"changes", kept.changes, whole.changes}, {"error", kept.errText, whole.errText},
	} {
		if !reflect.DeepEqual(d.got, d.want) {
			return fmt.Sprintf("%s:%d: %s (%s): rendered from what the runtime's caches keep of the children, the step gives other %s than from the whole children: %v, against %v. This is a bug in metacel (the fields it keeps miss one the policy reads): please report it with this policy",
				e.file.Path, s.Line, s.Path, s.Name, d.what, d.got, d.want)
		}
	}
	return ""
}

// check compares what a step gave with what it expects; "" when it passes.
func (e *env) check(s *Step, got *outcome) string {
	where := fmt.Sprintf("%s:%d: %s (%s)", e.file.Path, s.Line, s.Path, s.Name)
	if s.Expect == nil {
		return fmt.Sprintf("%s: no expect: add one (children, status, changes or error), or run with --update to record what the step gives", where)
	}
	diff := compare(s.Expect, got)
	if diff == "" && got.err != nil && !s.Expect.Has["error"] {
		// a failed sync gives no children and changes nothing: an expectation of none, or of a
		// status it keeps, would pass whatever the failure
		return fmt.Sprintf("%s:%d: %s (%s): the step failed: %s\nexpect error: (the message, or a part of it with match: subset) if it should",
			e.file.Path, s.Expect.Line, s.Path, s.Name, got.errText)
	}
	if diff == "" {
		return ""
	}
	msg := fmt.Sprintf("%s:%d: %s (%s): the %s expectation differs (- expected, + got):\n%s",
		e.file.Path, s.Expect.Line, s.Path, s.Name, s.Expect.Match, diff)
	if got.err != nil && !s.Expect.Has["error"] {
		msg += "\nthe step failed: " + got.errText
	}
	return msg
}

// outcome is what one sync gave.
type outcome struct {
	res      *preview.Result
	err      error
	errText  string
	children []any
	status   map[string]any
	changes  []string
}

// sync runs one offline sync of the world's parent, with the observed children as the runtime's
// caches keep them, or whole.
func (e *env) sync(ctx context.Context, w *world, whole bool) *outcome {
	res, err := preview.Run(ctx, preview.Input{Policy: e.policy, Parent: w.parent, Related: w.related, Observed: w.observed, Mapper: e.mapper,
		ReservedNamespace: e.file.PolicyNamespace, Whole: whole})
	o := &outcome{res: res, err: err, children: []any{}, changes: []string{}}
	if err != nil {
		o.errText = preview.ErrorText(err)
	}
	if res == nil {
		return o
	}
	if res.Parent != nil {
		o.status, _ = res.Parent.Object["status"].(map[string]any)
	}
	if res.Output != nil {
		for _, ch := range res.Output.Children {
			o.children = append(o.children, ch.Object.Object)
		}
	}
	for _, ch := range res.Changes {
		o.changes = append(o.changes, ch.Key())
	}
	return o
}

// world is what the cluster holds around one parent between syncs.
type world struct {
	parent   *unstructured.Unstructured
	related  []*unstructured.Unstructured
	observed []*unstructured.Unstructured
	// children are the children the last step left (nil before the first step), for messages.
	children []*unstructured.Unstructured
}

func (e *env) initialWorld(ctx context.Context, t *Test) (*world, error) {
	from := t.Path + ".parent"
	if len(t.Parent.Where) > 0 {
		from = t.Parent.Where[0]
	}
	parent, err := preview.ParentOf(ctx, t.Parent.Items, e.policy, e.mapper, from)
	if err != nil {
		return nil, err
	}
	return &world{parent: parent.DeepCopy(), related: deepCopies(t.Related.Items), observed: deepCopies(t.Observed.Items)}, nil
}

func deepCopies(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = o.DeepCopy()
	}
	return out
}
