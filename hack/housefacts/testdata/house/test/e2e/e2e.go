// Package e2e is not production code: its import and struct do not count.
package e2e

import "example.com/house/runtime/b"

// Huge would be the largest struct.
type Huge struct{ a, b, c, d, e, f, g, h int }

// Use uses b.
func Use() { b.Save(&b.Store{}) }
