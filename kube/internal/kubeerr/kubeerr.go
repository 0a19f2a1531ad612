// Package kubeerr formats the errors of the Kubernetes adapters in one
// shape: "pkg: object: op field: cause".
package kubeerr

import "strings"

// Object writes namespace/name, or name alone when namespace is empty.
func Object(b *strings.Builder, namespace, name string) {
	if namespace != "" {
		b.WriteString(namespace)
		b.WriteByte('/')
	}
	b.WriteString(name)
}

// Tail writes ": op", " field" when field is set, and ": cause" when err
// is not nil.
func Tail(b *strings.Builder, op, field string, err error) {
	b.WriteString(": ")
	b.WriteString(op)
	if field != "" {
		b.WriteByte(' ')
		b.WriteString(field)
	}
	if err != nil {
		b.WriteString(": ")
		b.WriteString(err.Error())
	}
}
