package policy

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/util/validation"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/fieldpath"
)

// conditionReason is the pattern the API server holds a condition's reason to (metav1.Condition).
var conditionReason = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// conditions compiles spec.conditions: each a type, checked here, and a template of its status,
// reason and message, typed like the status's templates. What is literal is checked now as the
// API server would check the condition (runtime/render checks what templates compute).
func (c *compiler) conditions() []CompiledCondition {
	var out []CompiledCondition
	seen := map[string]string{}
	for i, cond := range c.spec.Conditions {
		path := fieldpath.Index("spec.conditions", i)
		if most := contract.MaxConditions - 2; i == most && c.spec.ParentSchema != nil {
			c.errorf(path, "more than %d conditions: with Synced and Ready, the parent's status would hold more than the %d its CRD allows (status.conditions' maxItems): merge some, or report them as status fields",
				most, contract.MaxConditions)
		}
		c.check.conditionType(path+".type", cond.Type, seen)
		c.check.literalCondition(path, cond)
		seen[cond.Type] = path
		if c.mainEnv == nil {
			continue
		}
		fields := map[string]any{"status": cond.Status, "reason": cond.Reason, "message": cond.Message}
		t, err := c.mainEnv.CompileTemplate(fields, path)
		if err != nil {
			c.fail(path, err)
			continue
		}
		out = append(out, CompiledCondition{Path: path, Type: cond.Type, Fields: t})
	}
	return out
}

// conditionType checks a condition's type: a qualified name, not one the runtime writes,
// not given twice.
func (c *checker) conditionType(path, t string, seen map[string]string) {
	switch {
	case t == "":
		c.errorf(path, "a condition needs a type: one CamelCase word, such as DatabaseReady")
	case t == contract.ConditionSynced || t == contract.ConditionReady:
		c.errorf(path, "%q is written by the runtime: name the condition otherwise (say %q), or use spec.readyWhen for the parent's readiness", t, "Database"+t)
	case seen[t] != "":
		c.errorf(path, "condition type %q is also given at %s: give each condition one entry", t, seen[t])
	default:
		if errs := validation.IsQualifiedName(t); len(errs) > 0 {
			c.errorf(path, "condition type %q: %s", t, strings.Join(errs, "; "))
		}
	}
}

// literalCondition checks the status and reason of a condition where they hold no ${}.
func (c *checker) literalCondition(path string, cond Condition) {
	if !strings.Contains(cond.Status, "${") && !IsConditionStatus(cond.Status) {
		c.errorf(path+".status", "%q is not a condition status: write True, False or Unknown, or a ${} template that gives one", cond.Status)
	}
	switch {
	case cond.Reason == "":
		c.errorf(path+".reason", "a condition needs a reason: one CamelCase word, such as WaitingForSecret, or a ${} template that gives one")
	case !strings.Contains(cond.Reason, "${"):
		if msg := CheckConditionReason(cond.Reason); msg != "" {
			c.errorf(path+".reason", "%s", msg)
		}
	}
}

// IsConditionStatus reports whether s is a condition status the API server accepts.
func IsConditionStatus(s string) bool { return s == "True" || s == "False" || s == "Unknown" }

// CheckConditionReason says what is wrong with a condition's reason, "" when nothing.
func CheckConditionReason(r string) string {
	switch {
	case len(r) > 1024:
		return "a condition's reason is at most 1024 characters"
	case !conditionReason.MatchString(r):
		return fmt.Sprintf("reason %q is not one CamelCase word (letters, digits, _ , :, starting with a letter), as the API server requires: write, say, %q", r, camel(r))
	}
	return ""
}

// camel suggests a reason for r: its words, capitalised, joined, starting with a letter.
func camel(r string) string {
	var b strings.Builder
	for _, w := range strings.FieldsFunc(r, func(c rune) bool { return !isAlnum(c) }) {
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	if out := b.String(); out != "" && !unicode.IsDigit(rune(out[0])) {
		return out
	}
	return "Reason" + b.String()
}

func isAlnum(c rune) bool { return c < unicode.MaxASCII && (unicode.IsLetter(c) || unicode.IsDigit(c)) }
