package apivalidation

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// fixes say how to fix the errors policy authors meet most, recognised by the wording of the
// validation that gives them (k8s.io/apimachinery/pkg/util/validation and the API groups'
// validation packages); the first that matches an error gives its fix.
var fixes = []struct {
	match func(e *field.Error) bool
	fix   func(e *field.Error) string
}{
	{detailHas("`selector` does not match template `labels`"), constant("give spec.template.metadata.labels every label spec.selector matches")},
	{detailHas("a valid label must be an empty string or consist of"), constant("a label value is at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit: put other text in an annotation")},
	{copiedJobName, constant("shorten the Job's metadata.name to at most 63 characters: the API server copies it into the label job-name of its Pods")},
	{detailHas("must be no more than"), shorten},
	{detailHas("must not contain dots"), constant("use '-' where the name has '.'")},
	{detailHas("RFC 1123"), constant("use lowercase letters, digits and '-' (and '.' in a subdomain), starting and ending with a letter or digit")},
	{detailHas("RFC 1035"), constant("use lowercase letters, digits and '-', starting with a letter and ending with a letter or digit")},
	{detailHas("must be between 1 and 65535"), constant("use a port from 1 to 65535")},
	{pathEnds("schedule"), constant(`write five fields, minute hour day-of-month month day-of-week ("0 3 * * *"), or a descriptor ("@daily", "@every 1h"), with any time zone in spec.timeZone`)},
	{pathEnds("timeZone"), constant(`name a time zone of the IANA database, e.g. "Europe/Paris" or "Etc/UTC"`)},
	{typeIs(field.ErrorTypeDuplicate), constant("give each item its own value")},
	{mountsAnUndeclaredVolume, constant("mount a volume that spec.volumes declares, or declare it there")},
	{requiredOfValues, func(e *field.Error) string {
		return "set " + e.Field + " to one of the valid values it names, whatever it holds now"
	}},
	{typeIs(field.ErrorTypeRequired), func(e *field.Error) string { return "set " + e.Field }},
}

func detailHas(s string) func(e *field.Error) bool {
	return func(e *field.Error) bool { return strings.Contains(e.Detail, s) }
}

func pathEnds(name string) func(e *field.Error) bool {
	return func(e *field.Error) bool { return e.Field == name || strings.HasSuffix(e.Field, "."+name) }
}

func mountsAnUndeclaredVolume(e *field.Error) bool {
	return e.Type == field.ErrorTypeNotFound && strings.HasSuffix(e.Field, ".name") && strings.Contains(e.Field, "volumeMounts[")
}

// copiedJobName is the error of a Job's name longer than a label value: the API server copies it
// into its pod template's labels (job-name, batch.kubernetes.io/job-name), and says so at
// spec.template.labels (a label the template sets is at spec.template.metadata.labels).
func copiedJobName(e *field.Error) bool {
	return strings.Contains(e.Detail, "must be no more than 63") && strings.HasSuffix(e.Field, "spec.template.labels")
}

// requiredOfValues is a Required error that names the valid values: the API server gives one
// for a field set to a value it does not take there too (a Job's restartPolicy Always).
func requiredOfValues(e *field.Error) bool {
	return e.Type == field.ErrorTypeRequired && strings.Contains(e.Detail, "valid values")
}

func typeIs(t field.ErrorType) func(e *field.Error) bool {
	return func(e *field.Error) bool { return e.Type == t }
}

func constant(fix string) func(*field.Error) string { return func(*field.Error) string { return fix } }

var noMoreThan = regexp.MustCompile(`must be no more than (\d+) (characters|bytes)`)

func shorten(e *field.Error) string {
	m := noMoreThan.FindStringSubmatch(e.Detail)
	if m == nil {
		return ""
	}
	return fmt.Sprintf("shorten %s to at most %s %s", e.Field, m[1], m[2])
}

// Fix says how to fix one field error, or "" when it knows no better than the error says.
func Fix(e *field.Error) string {
	for _, f := range fixes {
		if f.match(e) {
			return f.fix(e)
		}
	}
	return ""
}
