// Command house runs the fixture.
package main

import "example.com/house/runtime/a"

func main() { (&a.Server{}).Sync() }
