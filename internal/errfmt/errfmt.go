// Package errfmt builds the messages of fencekit's error types in one shape,
// "prefix: key value, key value: cause", leaving out the labels that have no
// value and quoting a value that could be read as part of the message.
//
// Error types call it from their Error methods, so that every package words
// its errors alike and none prints a value it was not given: a label holds
// a name (node, method, ConfigMap, host), never a parameter's value.
package errfmt

import "strings"

// Labels is a message under construction. The zero value is ready to use.
type Labels struct {
	b   strings.Builder
	sep string
}

// Start writes the message's prefix (a package or driver name).
func (l *Labels) Start(prefix string) *Labels {
	l.b.WriteString(prefix)
	l.sep = ": "
	return l
}

// Add writes "key value" after the prefix or the label before; an empty
// value writes nothing. The value is quoted when it holds a space, a quote,
// a comma, a colon or a character outside printable ASCII.
func (l *Labels) Add(key, value string) *Labels {
	return l.AddRaw(key, Quote(value))
}

// AddRaw is Add without quoting, for values the caller knows to be plain
// (a driver's name, a parameter's key).
func (l *Labels) AddRaw(key, value string) *Labels {
	if value == "" {
		return l
	}
	l.b.WriteString(l.sep)
	l.sep = ", "
	l.b.WriteString(key)
	l.b.WriteByte(' ')
	l.b.WriteString(value)
	return l
}

// Part writes ": s" (s is a step of the message, such as an operation);
// an empty s writes nothing.
func (l *Labels) Part(s string) *Labels {
	if s == "" {
		return l
	}
	l.b.WriteString(": ")
	l.b.WriteString(s)
	return l
}

// Cause ends the message with ": " and err's message, or otherwise when err
// is nil, and returns it.
func (l *Labels) Cause(err error, otherwise string) string {
	l.b.WriteString(": ")
	if err != nil {
		l.b.WriteString(err.Error())
	} else {
		l.b.WriteString(otherwise)
	}
	return l.b.String()
}

// End ends the message with ": " and err's message when err is set, and
// returns it.
func (l *Labels) End(err error) string {
	if err != nil {
		l.b.WriteString(": ")
		l.b.WriteString(err.Error())
	}
	return l.b.String()
}

// String returns the message written so far.
func (l *Labels) String() string { return l.b.String() }

// Quote returns s, or s in double quotes (inner quotes escaped) when s holds
// a space, a control character, a quote, a comma, a colon or a character
// outside printable ASCII. An empty s stays empty.
func Quote(s string) string {
	for _, r := range s {
		if r <= ' ' || r == '"' || r == ',' || r == ':' || r > '~' {
			return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
		}
	}
	return s
}

// Object names a Kubernetes object as a message does: namespace/name, or
// name alone for a cluster-scoped one.
func Object(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// Step is what an adapter did and the field it did it to: "op field", or op
// alone when field is empty.
func Step(op, field string) string {
	if field == "" {
		return op
	}
	return op + " " + field
}
