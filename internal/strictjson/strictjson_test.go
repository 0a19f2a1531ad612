package strictjson_test

import (
	"testing"

	"github.com/fencekit/fencekit/internal/strictjson"
)

type body struct {
	Image string `json:"image"`
	Count int    `json:"count,omitempty"`
	Skip  string `json:"-"`
}

// One object, each member once (without case), only the declared names
// spelt as declared, nothing after it.
func TestDecode(t *testing.T) {
	for in, ok := range map[string]bool{
		`{"image":"a"}`:                 true,
		`{"image":"a","count":2}`:       true,
		`{"image":"a","image":"b"}`:     false, // last would win
		`{"image":"a","IMAGE":"b"}`:     false, // case-folded twice
		`{"Image":"a"}`:                 false, // encoding/json would take it for image
		`{"image":"a","other":1}`:       false,
		`{"image":"a","Skip":"x"}`:      false,
		`{"image":"a"} {}`:              false,
		`["image"]`:                     false,
		`{"image":{"deep":{"x":1}}}`:    false, // deeper than allowed, and not a string
		"{\"image\":\"\xff\"}":          false,
		`{"image":"a","count":"2"}`:     false,
		`{"image":"a"}` + "\n":          true,
		`{"image":"a","count":1e400}`:   false,
		`{"image":"a", "count": 3 }   `: true,
	} {
		var b body
		err := strictjson.Decode([]byte(in), 1, &b)
		if (err == nil) != ok {
			t.Errorf("%q: %v, want ok=%v", in, err, ok)
		}
	}
}

// FuzzDecode: any body is either refused or decoded into the declared
// members, never with a member given twice.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"image":"a"}`, `{"image":"a","IMAGE":"b"}`, `{"count":1}`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var b body
		if err := strictjson.Decode(in, 2, &b); err != nil {
			return
		}
		var again body
		if err := strictjson.Decode(in, 2, &again); err != nil || again != b {
			t.Fatalf("not deterministic: %v", err)
		}
	})
}

// Names are folded as encoding/json matches them: "ſ" (long s) is "s".
func TestDecodeFoldsAsEncodingJSON(t *testing.T) {
	var b struct {
		Size int `json:"size"`
	}
	if err := strictjson.Decode([]byte(`{"size":1,"ſize":2}`), 1, &b); err == nil {
		t.Fatal("took size twice")
	}
}
