// Package jsonenc writes unstructured content (the map[string]any, []any, string, int64, float64,
// bool and nil that the API machinery decodes JSON into) as JSON, byte for byte as encoding/json's
// Marshal writes it (map keys sorted, <, > and & escaped), without reflection.
//
// Every child a sync writes is encoded twice: for its desired-hash annotation (runtime/render),
// then as the request's body (runtime/apply). encoding/json reaches each value through
// reflection and sorts each map's keys as reflect values: in a CPU profile of a 10,000-parent
// converge its Marshal was 6% of metacel's CPU. The desired hash must not change from one
// version of metacel to the next (a changed hash is a write to every child on upgrade), so the
// bytes must stay encoding/json's: FuzzMarshal checks them against it, and a value of any other
// type (a typed struct, an int) is handed to encoding/json. No JSON encoder in the module graph
// writes encoding/json's bytes without reflection, hence this package.
package jsonenc
