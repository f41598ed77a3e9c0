// Package source finds and watches policies. A Source delivers snapshots: every policy unit it
// holds now, as raw bytes, each time something may have changed. Units are files (a directory's
// files, mounted ConfigMap volumes included) or data values of ConfigMaps read through the API.
//
// Sources only read and report; they never parse. The operator parses and compiles each changed
// unit off to the side and swaps the result in, so a broken unit never stops a running policy.
// Snapshots are whole rather than incremental so that a missed or coalesced event is harmless:
// the next snapshot says everything.
package source
