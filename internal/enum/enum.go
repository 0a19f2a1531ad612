// Package enum names the values of fencekit's small enumerations: uint8
// kinds whose names stand in a table indexed by value, so that a type's
// String is one line, a parser that takes names exactly is one call, and a
// value without a name prints as Type(n) everywhere.
package enum

import "strconv"

// Name returns names[v], or typ(v), such as "Phase(9)", when v has no name
// (it is past the table's end, or its name is empty).
func Name[T ~uint8](names []string, v T, typ string) string {
	if int(v) < len(names) && names[v] != "" {
		return names[v]
	}
	return typ + "(" + strconv.Itoa(int(v)) + ")"
}

// Value returns the value whose name is s (exactly), and whether there is
// one. An empty s names nothing.
func Value[T ~uint8](names []string, s string) (T, bool) {
	if s == "" {
		return 0, false
	}
	for i, n := range names {
		if n == s {
			return T(i), true
		}
	}
	return 0, false
}
