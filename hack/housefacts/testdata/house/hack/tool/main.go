// Command tool is not production code.
package main

import "example.com/house/runtime/a"

func main() { (&a.Server{}).Sync() }
