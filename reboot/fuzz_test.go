package reboot

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// oracle reads a value as encoding/json reads it into metal3's arguments
// (case-insensitive member names, the last duplicate wins): ok is false
// when the value is not a valid JSON object.
func oracle(value string) (mode Mode, force, ok bool) {
	trimmed := strings.TrimLeft(value, " \t\r\n")
	if trimmed == "" || trimmed[0] != '{' || !json.Valid([]byte(value)) {
		return Soft, false, false
	}
	var args struct {
		Mode  any `json:"mode"`
		Force any `json:"force"`
	}
	// Numbers stay text: a number beyond float64 (1e700) is valid JSON,
	// which ParseValue reads as a mode that is not a string.
	dec := json.NewDecoder(strings.NewReader(value))
	dec.UseNumber()
	if err := dec.Decode(&args); err != nil {
		return Soft, false, false
	}
	if args.Mode == "hard" {
		mode = Hard
	}
	return mode, args.Force == true, true
}

func FuzzParseAnnotations(f *testing.F) {
	for _, seed := range [][3]string{
		{"a", `{"mode":"hard"}`, ""},
		{"b", `{"mode":"soft","force":true}`, `{"mode":"hard"}`},
		{"", `{'mode':'hard'}`, "7f9c1a2e-0b1d-4c1e-9a53-1b2c3d4e5f60"},
		{"x/y", `{"Mode":"hard","MODE":"soft"}`, `{"mode":"\u0068ard"}`},
		{"k", `{"mode":"hard",}`, `{"force":"true"}`},
		{"k", ` {"a":[1,{"b":null}],"mode":"hard"} `, `{"mode":1e5}`},
		{"k", `{"mode":"hard"} {}`, `[{"mode":"hard"}]`},
		{"k", "{\"mode\":\"hard\\ud800\"}", "hard"},
		{"k", `{"mode":"hard","mode":null}`, `{"force":true,"force":false}`},
		{"k", `{"\u006dode":"hard","forc\u0065":true}`, `{"mode":"soft"`},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, key, value, plain string) {
		for _, v := range []string{value, plain} {
			checkValue(t, v)
		}
		a := map[string]string{KeyedAnnotation(key): value, Annotation: plain, "other": value}
		reqs, problems := ParseAnnotations(a)
		if len(reqs) != 2 || reqs[0].Annotation != Annotation || reqs[1].Annotation != KeyedAnnotation(key) {
			t.Fatalf("requests %+v", reqs)
		}
		if reqs[0].Value != plain || reqs[1].Value != value || reqs[1].Key != key || !reqs[1].Keyed() || reqs[0].Keyed() {
			t.Fatalf("values or keys not preserved: %+v", reqs)
		}
		n := 0
		for _, r := range reqs {
			if r.Problem != "" {
				n++
			}
		}
		if len(problems) != n {
			t.Fatalf("%d problems for %d requests with one", len(problems), n)
		}
		checkDecisions(t, a)
	})
}

func checkValue(t *testing.T, v string) {
	mode, force, problem := ParseValue(v)
	if mode != Soft && mode != Hard {
		t.Fatalf("%q: mode %d", v, mode)
	}
	if !utf8.ValidString(problem) {
		t.Fatalf("%q: the problem is not valid UTF-8: %q", v, problem)
	}
	m2, f2, p2 := ParseValue(v)
	if m2 != mode || f2 != force || p2 != problem {
		t.Fatalf("%q: not deterministic", v)
	}
	om, of, valid := oracle(v)
	trimmed := strings.TrimLeft(v, " \t\r\n")
	object := trimmed != "" && trimmed[0] == '{'
	syntaxErr := strings.HasPrefix(problem, "value is not valid JSON")
	if object && syntaxErr == valid {
		t.Fatalf("%q: valid JSON per encoding/json: %v, per ParseValue: %v (%s)", v, valid, !syntaxErr, problem)
	}
	if valid && (om != mode || of != force) {
		t.Fatalf("%q: encoding/json reads mode %v force %v, ParseValue %v %v", v, om, of, mode, force)
	}
	if !valid && (mode != Soft || force) {
		t.Fatalf("%q: not a valid JSON object, yet mode %v force %v", v, mode, force)
	}
	if !object && trimmed != "" && problem != "" && problem != problemNotObject {
		t.Fatalf("%q: unexpected problem for an opaque value: %s", v, problem)
	}
}

// checkDecisions checks the safety rules on every state of a host with
// annotations a.
func checkDecisions(t *testing.T, a map[string]string) {
	keyed := 0
	var reboot []string
	for k := range a {
		if IsAnnotation(k) {
			reboot = append(reboot, k)
			if k != Annotation {
				keyed++
			}
		}
	}
	slices.Sort(reboot)
	for _, prov := range []Provisioning{NotProvisioned, Provisioned, Deprovisioning} {
		for _, on := range []bool{false, true} {
			for _, pending := range []bool{false, true} {
				in := Input{Annotations: a, PoweredOn: on, Online: true, Provisioning: prov, LastPoweredOn: t0, Now: at(100)}
				if pending {
					in.PendingRebootSince = at(50)
				}
				d := Decide(in)
				if d.PowerOn && keyed > 0 {
					t.Fatalf("%v on=%v: powered on with a keyed annotation: %s", prov, on, d)
				}
				if d.PowerOn && d.PowerOff || d.PowerOn && len(d.RemoveAnnotations) > 0 {
					t.Fatalf("contradiction: %s", d)
				}
				if prov == Deprovisioning {
					if !slices.Equal(d.RemoveAnnotations, reboot) || d.PowerOn || d.PowerOff {
						t.Fatalf("deprovisioning: %s", d)
					}
					continue
				}
				for _, k := range d.RemoveAnnotations {
					if k != Annotation {
						t.Fatalf("removes %q: %s", k, d)
					}
				}
				if prov == Provisioned && on && !d.PowerOff {
					t.Fatalf("provisioned host with reboot annotations not powered off: %s", d)
				}
			}
		}
	}
}

// The edges where a hand-written JSON reader most easily differs from
// encoding/json.
func TestParseValueAgreesWithEncodingJSON(t *testing.T) {
	nest := func(n int) string {
		return `{"a":` + strings.Repeat("[", n-1) + strings.Repeat("]", n-1) + `,"mode":"hard"}`
	}
	for _, v := range []string{
		nest(maxDepth), nest(maxDepth + 1), nest(2),
		`{"mode":"hard"}` + "\n", "\t{}", `{"a":-0.5e+3,"mode":"hard"}`, `{"a":-}`, `{"a":1.}`, `{"a":.5}`,
		`{"a":"\u12"}`, `{"a":"\uD800\uDC00","mode":"hard"}`, "{\"a\":\"\xff\",\"mode\":\"hard\"}",
		`{"mode":"hard"}}`, `{"mode" "hard"}`, `{,}`, `{"a":tru}`, `{"a":nul}`, `{"a":falsey}`,
		`{"mode":"ha\rd"}`, `{"modé":"hard"}`, `{"mode\u0000":"hard"}`, `{"mo\"de":"hard"}`,
		`{"mode":"soft","MoDe":"hard"}`, `{"force":true,"Force":false}`, `{"force":null}`,
		"{\"mode\":\"\xff\xfe\"}", `{"mode":"` + strings.Repeat("é", 30) + `"}`,
	} {
		checkValue(t, v)
	}
}
