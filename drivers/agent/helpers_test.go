package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testtool"
)

// secret is a password that no error, log record or command line may ever
// hold.
const secret = "Qz7-unl1kely-Pw"

// requireAgent returns the path of an installed agent, or skips the test
// (fails it when the environment variable CI is "true").
func requireAgent(t testing.TB, name string) string {
	t.Helper()
	p, err := LookPath(name)
	if err == nil {
		return p
	}
	testtool.Missing(t, "%s is missing: install the Debian package fence-agents (%v)", name, err)
	return ""
}

// requireTool returns the path of a program the tests need, or skips the
// test (fails it under CI=true).
func requireTool(t testing.TB, name, pkg string) string {
	t.Helper()
	return testtool.Require(t, name, pkg, "/sbin", "/bin")
}

// ctxFor returns a context for one test step, bounded generously: the
// machine may be loaded.
func ctxFor(t testing.TB, d time.Duration) context.Context { return testtool.Timeout(t, d) }

// param is a parameter of a fake agent's metadata.
type param struct {
	name, typ, def string
	required       bool
	deprecated     bool
	obsoletes      string
	choices        []string
}

// fakeMeta writes a resource-agent XML document.
func fakeMeta(name string, params []param, actions []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<?xml version=\"1.0\" ?>\n<resource-agent name=%q shortdesc=\"Fake agent for tests\" >\n<longdesc>fake</longdesc>\n<parameters>\n", name)
	for _, p := range params {
		req := "0"
		if p.required {
			req = "1"
		}
		extra := ""
		if p.deprecated {
			extra += ` deprecated="1"`
		}
		if p.obsoletes != "" {
			extra += fmt.Sprintf(` obsoletes=%q`, p.obsoletes)
		}
		typ := p.typ
		if typ == "" {
			typ = "string"
		}
		fmt.Fprintf(&b, "\t<parameter name=%q unique=\"0\" required=%q%s>\n\t\t<getopt mixed=\"--%s=[x]\" />\n", p.name, req, extra, p.name)
		def := ""
		if p.def != "" {
			def = fmt.Sprintf(" default=%q", p.def)
		}
		if len(p.choices) > 0 {
			fmt.Fprintf(&b, "\t\t<content type=%q%s >\n", typ, def)
			for _, c := range p.choices {
				fmt.Fprintf(&b, "\t\t\t<option value=%q />\n", c)
			}
			b.WriteString("\t\t</content>\n")
		} else {
			fmt.Fprintf(&b, "\t\t<content type=%q%s />\n", typ, def)
		}
		fmt.Fprintf(&b, "\t\t<shortdesc lang=\"en\">%s</shortdesc>\n\t</parameter>\n", p.name)
	}
	b.WriteString("</parameters>\n<actions>\n")
	for _, a := range actions {
		fmt.Fprintf(&b, "\t<action name=%q />\n", a)
	}
	b.WriteString("</actions>\n</resource-agent>\n")
	return b.String()
}

// commonParams are the parameters of the fake agents by default: those of
// a fencing.py agent with an address, a login and no plug.
var commonParams = []param{
	{name: "action", required: true, def: "reboot"},
	{name: "ip", required: true, obsoletes: "ipaddr"},
	{name: "ipaddr", required: true, deprecated: true},
	{name: "ipport", typ: "integer", def: "623"},
	{name: "username", obsoletes: "login"},
	{name: "login", deprecated: true},
	{name: "password", obsoletes: "passwd"},
	{name: "passwd", deprecated: true},
	{name: "ssl_insecure", typ: "boolean"},
	{name: "lanplus", typ: "boolean", def: "1"},
	{name: "method", typ: "select", def: "onoff", choices: []string{"onoff", "cycle"}},
	{name: "power_timeout", typ: "second", def: "20"},
	{name: "power_wait", typ: "second", def: "0"},
	{name: "stonith_status_sleep", typ: "second", def: "1"},
	{name: "retry_on", typ: "integer", def: "1"},
	{name: "delay", typ: "second", def: "0"},
	{name: "shell_timeout", typ: "second", def: "3"},
	{name: "verbose", typ: "boolean"},
	{name: "quiet", typ: "boolean"},
}

var commonActions = []string{"on", "off", "reboot", "status", "monitor", "metadata", "validate-all"}

// fake is a fake agent: a shell script in a directory of its own that
// answers -o metadata with its XML, and otherwise records what it was
// given (its standard input in stdin, its argument count in argc, its
// environment in env, one line per run in runs) and runs body, with the
// action in $action and the directory in $dir.
type fake struct {
	name, path, dir string
}

func newFake(t testing.TB, name string, params []param, actions []string, body string) *fake {
	t.Helper()
	dir := t.TempDir()
	f := &fake{name: name, path: filepath.Join(dir, name), dir: dir}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "meta.xml"), []byte(fakeMeta(name, params, actions)), 0o644))
	script := fmt.Sprintf(`#!/bin/sh
dir=%q
if [ "$1" = "-o" ] && [ "$2" = "metadata" ]; then
	cat "$dir/meta.xml"
	exit 0
fi
echo "$#" > "$dir/argc"
env > "$dir/env"
cat > "$dir/stdin"
echo run >> "$dir/runs"
action=$(sed -n 's/^action=//p' "$dir/stdin" | tail -n 1)
password=$(sed -n 's/^password=//p' "$dir/stdin" | tail -n 1)
%s
`, dir, body)
	require.NoError(t, os.WriteFile(f.path, []byte(script), 0o755))
	return f
}

// read returns one of the fake's record files, "" when missing.
func (f *fake) read(name string) string {
	b, _ := os.ReadFile(filepath.Join(f.dir, name))
	return string(b)
}

// runs counts the fake's runs other than for metadata.
func (f *fake) runs() int { return strings.Count(f.read("runs"), "run\n") }

// open opens a device on the fake with the given parameters.
func (f *fake) open(t testing.TB, o Options) *Device {
	t.Helper()
	o.Path = f.path
	d, err := New(ctxFor(t, 60*time.Second), o)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d
}

// stdParams are parameters that satisfy commonParams.
func stdParams(kv ...string) fence.Params {
	return fence.NewParams(append([]string{"ip", "127.0.0.1", "ipport", "6230", "username", "admin", "password", secret}, kv...)...)
}

// processGone reports whether a process has ended (gone, or a zombie
// waiting for its parent).
func processGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z'
	}
	return false
}

// errorsIsAny reports whether err wraps any of targets.
func errorsIsAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}
