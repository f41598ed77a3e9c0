// Package testpolicies holds the policies that tests of several files share, so that a policy
// repeated across tests is written once: testdata/<name>.yaml, embedded, read with YAML.
//
// The rule it follows: a policy that tests of more than one place wrote (the same policy modulo
// whitespace, its names and the values each test fills in) lives here; a policy that one test
// writes for its own point (a field, a mistake at a given line, a parser's edge) stays inline in
// that test, which then reads like its policy. A seed policy (policies/) or a fixture a test reads
// from its own testdata/ (test/e2e/testdata/policies/) is used where it is, not copied here.
//
// A file may be a whole policy or a policy's head that tests complete with their own entries
// (myapp-head.yaml, copy-secret.yaml: the tests append children). A value a test varies is a
// placeholder, __NAME__ in the file, which the test fills (Fills{"NAME": value}); the comment
// lines a file starts with say what it is and which placeholders it has, and YAML leaves them out,
// so that the line numbers of errors count from the policy's first line, as the tests expect.
package testpolicies
