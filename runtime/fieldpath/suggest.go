package fieldpath

import (
	"fmt"
	"strings"
)

// closest returns the candidate that word most likely misspells, or "" when none is close: at
// most two edits apart (a swap of two neighbouring letters is one edit), fewer edits than word
// has letters, case ignored. Of equally close candidates, the first in sort order wins.
func closest(word string, candidates []string) string {
	best, bestDist := "", 3
	for _, c := range candidates {
		d := editDistance(strings.ToLower(word), strings.ToLower(c))
		if d < len(word) && (d < bestDist || (d == bestDist && c < best)) {
			best, bestDist = c, d
		}
	}
	return best
}

// DidYouMean returns ` (did you mean "candidate"?)` for the candidate closest to word, or "".
func DidYouMean(word string, candidates []string) string {
	if c := closest(word, candidates); c != "" {
		return fmt.Sprintf(" (did you mean %q?)", c)
	}
	return ""
}

// editDistance is the optimal string alignment distance of a and b: insertions, deletions,
// substitutions and swaps of neighbouring bytes.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev = prev, cur
	}
	return prev[len(b)]
}
