package enum

import "testing"

type color uint8

var colorNames = [...]string{1: "red", 2: "green"}

func TestNameAndValue(t *testing.T) {
	for _, tc := range []struct {
		v    color
		want string
	}{{1, "red"}, {2, "green"}, {0, "color(0)"}, {3, "color(3)"}, {255, "color(255)"}} {
		if got := Name(colorNames[:], tc.v, "color"); got != tc.want {
			t.Errorf("Name(%d) = %q, want %q", tc.v, got, tc.want)
		}
	}
	if v, ok := Value[color](colorNames[:], "green"); !ok || v != 2 {
		t.Errorf(`Value("green") = %d, %v; want 2, true`, v, ok)
	}
	for _, s := range []string{"", "blue", "Red", "color(1)"} {
		if v, ok := Value[color](colorNames[:], s); ok {
			t.Errorf("Value(%q) = %d, true; want none", s, v)
		}
	}
}
