// Package redact prints values that hold credentials without them, so that
// fmt's %v, %+v, %#v and %s, and slog, show the value with its secrets
// replaced. A credential of its own is a fence.Secret, which prints itself
// redacted; this package serves the types whose credentials sit in a
// parameter map or under names only known at run time (the agent driver's
// options, which carry a whole method's parameters and environment).
//
// A type opts in with three one-line methods:
//
//	func (o Options) Format(f fmt.State, verb rune) { redact.Format(f, o) }
//	func (o Options) String() string                { return redact.Struct(o) }
//	func (o Options) LogValue() slog.Value          { return slog.StringValue(redact.Struct(o)) }
package redact

import (
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/fencekit/fencekit/fence"
)

// Redacted replaces a secret that is set: what a fence.Secret prints.
const Redacted = fence.RedactedText

// IsSecretField reports whether a field (or parameter) name holds a
// credential: passwords and passphrases, SNMP communities, tokens, keys,
// secrets, authorization headers.
func IsSecretField(name string) bool {
	n := strings.ToLower(name)
	for _, s := range []string{"passw", "passphrase", "secret", "token", "community", "credential", "authorization", "basic", "cookie", "signer"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return n == "key" || n == "privatekey" || n == "private_key" || n == "authkey" || n == "privkey"
}

// Struct returns v, a struct or a pointer to one, as %+v would print it,
// with the exported fields only, and every secret field (IsSecretField)
// that is set shown as REDACTED. Nested structs are printed the same way
// unless they print themselves (fmt.Formatter, fmt.Stringer).
func Struct(v any) string {
	var b strings.Builder
	write(&b, reflect.ValueOf(v), 0)
	return b.String()
}

// maxDepth bounds the nesting Struct follows.
const maxDepth = 4

func write(b *strings.Builder, v reflect.Value, depth int) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			b.WriteString("<nil>")
			return
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		fmt.Fprintf(b, "%v", v.Interface())
		return
	}
	t := v.Type()
	b.WriteString(t.String())
	b.WriteByte('{')
	first := true
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if !first {
			b.WriteByte(' ')
		}
		first = false
		b.WriteString(f.Name)
		b.WriteByte(':')
		fv := v.Field(i)
		switch {
		case IsSecretField(f.Name):
			if fv.IsZero() {
				b.WriteString(`""`)
			} else {
				b.WriteString(Redacted)
			}
		case fv.Kind() == reflect.Struct && depth < maxDepth && !prints(fv):
			write(b, fv, depth+1)
		default:
			fmt.Fprintf(b, "%v", fv.Interface())
		}
	}
	b.WriteByte('}')
}

// prints reports whether v prints itself.
func prints(v reflect.Value) bool {
	if !v.CanInterface() {
		return false
	}
	switch v.Interface().(type) {
	case fmt.Formatter, fmt.Stringer:
		return true
	}
	return false
}

// Format writes v as Struct does, for every verb: a type's Format method
// calls it so that %v, %+v, %#v, %s and %q all hide its secrets.
func Format(f fmt.State, v any) {
	io.WriteString(f, Struct(v))
}
