package main

import (
	"strings"
	"testing"

	"github.com/fencekit/fencekit/fence"
)

// FuzzParseArgs feeds arbitrary command lines (arguments separated by NUL)
// to the parser of every registered driver's options: it never panics, and
// no usage error, warning or stray argument repeats a value given to a
// secret option (even one typed again as an option's name or a stray word).
func FuzzParseArgs(f *testing.F) {
	for _, s := range []string{
		"--ip\x0010.0.0.1\x00--password\x00" + secret + "\x00-o\x00off",
		"--password=" + secret + "\x00--bogus=" + secret,
		"-p\x00" + secret + "\x00-Z",
		"--retry-off\x009223372036854775807\x00--delay\x001e309",
		"--power-timeout=NaN\x00--plug",
		"--p\x00x\x00--ssl-insecure=maybe",
	} {
		f.Add(s)
	}
	tab := newTable(fence.DefaultRegistry().Drivers())
	f.Fuzz(func(t *testing.T, s string) {
		args := strings.Split(s, "\x00")
		in, err := tab.parseArgs(args)
		var msgs []string
		if err != nil {
			msgs = append(msgs, err.Error())
		}
		if in != nil {
			msgs = append(msgs, in.warnings...)
			msgs = append(msgs, in.unused...)
		}
		if in == nil {
			return
		}
		// The values given to secret options, as the parser read them.
		for k, v := range in.values {
			o := tab.byKey[k]
			if o == nil || !o.Secret || len(v) < minSecret {
				continue
			}
			for _, m := range msgs {
				if strings.Contains(m, v) {
					t.Fatalf("%q: a message repeats the value of %s: %s", s, k, m)
				}
			}
		}
	})
}

// FuzzParseStdin feeds arbitrary standard input, as Pacemaker writes it, to
// the parser: it never panics, and a line that is not name=value is never
// repeated in a warning.
func FuzzParseStdin(f *testing.F) {
	for _, s := range []string{
		"action=off\nip=10.0.0.1\npassword=" + secret + "\n",
		secret + "\n",
		"password: " + secret + "=x\n",
		"foo=" + secret + "\nsoft=maybe\n\r\n#c\n",
	} {
		f.Add(s)
	}
	tab := newTable(fence.DefaultRegistry().Drivers())
	f.Fuzz(func(t *testing.T, s string) {
		lines := strings.Split(s, "\n")
		in := tab.parseStdin(lines)
		for _, l := range lines {
			l = strings.TrimSpace(l)
			if len(l) < 8 || strings.Contains(l, "=") {
				continue
			}
			for _, w := range in.warnings {
				if strings.Contains(w, l) {
					t.Fatalf("a line that is not name=value is repeated: %q in %q", l, w)
				}
			}
		}
		for k, v := range in.values {
			if strings.Contains(v, secret) && fence.IsSecret(k) {
				for _, w := range in.warnings {
					if strings.Contains(w, secret) {
						t.Fatalf("a warning repeats the secret of %s: %q", k, w)
					}
				}
			}
		}
	})
}
