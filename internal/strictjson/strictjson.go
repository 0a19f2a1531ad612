// Package strictjson reads the JSON bodies that decide something (an API's
// request, an installer's report, a disk inventory) one way only: valid
// UTF-8, exactly one JSON object, bounded nesting, no member given twice
// (names compared without case, as encoding/json matches them to fields,
// where the last one would silently win), only the members the target
// declares, spelt as it declares them. One decoder for every such body, so
// that no endpoint reads more leniently than another.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode/utf8"
)

// Scan checks that data is valid UTF-8 holding exactly one JSON object,
// nested at most maxDepth deep, with no member name twice in an object
// (compared without case); key is called with every member name.
func Scan(data []byte, maxDepth int, key func(string) error) error {
	if !utf8.Valid(data) {
		return errors.New("not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		object bool
		keys   map[string]bool // folded
		want   bool            // an object expects a key next
	}
	var stack []*frame
	first := true
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			if first {
				return errors.New("empty input")
			}
			if len(stack) > 0 {
				return errors.New("unexpected EOF")
			}
			return nil
		}
		if err != nil {
			return err
		}
		if len(stack) == 0 && !first {
			return errors.New("data after the JSON value")
		}
		if first {
			if d, ok := tok.(json.Delim); !ok || d != '{' {
				return errors.New("not a JSON object")
			}
		}
		first = false
		if len(stack) > 0 {
			top := stack[len(stack)-1]
			if top.object && top.want {
				if d, ok := tok.(json.Delim); ok && d == '}' {
					stack = stack[:len(stack)-1]
					continue
				}
				k := tok.(string) // the decoder only yields a string here
				// encoding/json matches member names to fields without
				// regard to case and lets the last one win: "Image" after
				// "image" would replace it. Such a pair is refused as a
				// member given twice.
				// Folded as encoding/json matches names (ſ is s, K is k).
				if f := strings.ToLower(strings.ToUpper(k)); top.keys[f] {
					return fmt.Errorf("member %q appears twice (names compare without case)", k)
				} else {
					top.keys[f] = true
				}
				if err := key(k); err != nil {
					return err
				}
				top.want = false
				continue
			}
			if top.object {
				top.want = true
			}
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				if len(stack) >= maxDepth {
					return fmt.Errorf("nested deeper than %d", maxDepth)
				}
				stack = append(stack, &frame{object: d == '{', keys: map[string]bool{}, want: d == '{'})
			case ']':
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1].object {
					stack[len(stack)-1].want = true
				}
			}
		}
	}
}

// Decode reads data into v, a pointer to a struct, strictly: Scan with
// maxDepth, then every top-level member must be one of v's fields as its
// json tag (or name) spells it, case included, and the value decodes with
// unknown fields refused at every depth.
func Decode(data []byte, maxDepth int, v any) error {
	names := fieldNames(reflect.TypeOf(v))
	if err := Scan(data, maxDepth, func(string) error { return nil }); err != nil {
		return err
	}
	if names != nil {
		var members map[string]json.RawMessage
		if err := json.Unmarshal(data, &members); err != nil {
			return err
		}
		for k := range members {
			if !names[k] {
				return fmt.Errorf("unknown member %q", k)
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON value")
	}
	return nil
}

// fieldNames returns the member names a struct (behind pointers) takes,
// as encoding/json spells them; nil for another type.
func fieldNames(t reflect.Type) map[string]bool {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	out := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		out[name] = true
	}
	return out
}
