// Package manifest reads Kubernetes objects from YAML or JSON files, as kubectl does: several
// documents per file, Lists expanded, integers kept as int64 (as the API server returns them, so
// that CEL sees the same types offline and in the cluster).
//
// A YAML syntax error names the file, line and column (SyntaxError): the YAML library reports only
// where the parser's context began, so yamlerror.go finds the line of the fault itself.
package manifest
