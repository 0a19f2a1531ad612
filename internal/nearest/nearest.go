// Package nearest finds the known name a mistyped one was meant to be, for
// the "did you mean" of an error. Only a near name is offered: an unknown
// name far from every known one is not a typo, and may be something else
// entirely (a secret written on a line of its own), so callers do not
// repeat it.
package nearest

import (
	"slices"
	"strings"
)

// Name returns the name of known nearest to name, when one is near enough to
// be a typo of it: at most one edit for short keys, two for longer ones
// (adjacent transpositions count as one), or key with its parts
// reordered (priv_snmp_passwd). Ties go to the first in the order of known.
func Name(key string, known []string) string {
	limit := 1
	if len(key) > 5 {
		limit = 2
	}
	best, bestD := "", limit+1
	for _, k := range known {
		if d := editDistance(key, k, bestD); d < bestD {
			best, bestD = k, d
		}
	}
	if best != "" {
		return best
	}
	parts := strings.Split(key, "_")
	slices.Sort(parts)
	for _, k := range known {
		kp := strings.Split(k, "_")
		slices.Sort(kp)
		if len(kp) > 1 && slices.Equal(parts, kp) {
			return k
		}
	}
	return ""
}

// editDistance returns the optimal string alignment distance of a and b
// (insertions, deletions, substitutions and adjacent transpositions), or
// any value of at least max once it is sure to reach it.
func editDistance(a, b string, max int) int {
	if d := len(a) - len(b); d >= max || -d >= max {
		return max
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= max {
			return max
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
