// Package source finds and reads policies: files and directories (mounted ConfigMap volumes
// included) today; watched directories and ConfigMaps through the API, with atomic swaps of the
// compiled set, are built on it.
package source
