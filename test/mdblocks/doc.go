// Package mdblocks reads the fenced code blocks of the project's Markdown (README.md, docs/*.md),
// so that tests can run what the documentation shows: the unit tests check every YAML example
// (cmd/metacel), the e2e tests run the README's tutorial on a cluster (test/e2e). It reads only
// what the project's documents use of CommonMark: fences of three or more backticks or tildes,
// indented under list items or not, and the two marks that tests rely on: the file a block is
// named by in the prose before it ("The policy (`website.yaml`) ...:"), and `<!-- fragment -->` on
// the line before a fence, for a block that is a part of a file rather than a whole one.
package mdblocks
