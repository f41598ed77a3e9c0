// Package builtinschema gives client-go's structured-merge-diff schema of the built-in kinds (the
// one the API server's server-side apply follows), ready to use in about a millisecond.
//
// client-go ships that schema as YAML and parses it on first use: twice (once to validate it
// against the schema of schemas, once to read it), 46 ms and 19 MB allocated on this project's
// 2-core machines. The first policy that names a built-in child kind needs it, so after a
// restart every parent waited for that parse, and the garbage it left was most of metacel's
// memory before its first parent. Here the same schema is stored as gob (schema.gob, 220 KB,
// written from client-go's parsed schema by the test of this package) and decoded in about 1 ms.
//
// The stored schema is client-go's, never edited: TestTheStoredSchemaIsClientGos fails when the
// client-go of go.mod ships another one, and METACEL_UPDATE_GOLDEN=1 (`make golden`) writes it
// again. Should the stored schema ever fail to decode, Parser falls back to client-go's own parse.
package builtinschema
