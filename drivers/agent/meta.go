package agent

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fencekit/fencekit/fence"
)

// Meta is what an agent says of itself in its metadata (fence_x -o
// metadata): the resource-agent XML that Pacemaker reads.
type Meta struct {
	// Name is the agent's name, such as "fence_ipmilan".
	Name string
	// ShortDesc and LongDesc describe the agent.
	ShortDesc, LongDesc string
	// Symlinks are the other names the agent is installed under
	// (fence_ipmilan lists fence_idrac, fence_ilo3, ...).
	Symlinks []string
	// Params are the agent's parameters, in the agent's order.
	Params []Param
	// Actions are the actions the agent lists ("on", "off", "status",
	// "list", "list-status", "monitor", "metadata", ...).
	Actions []string

	// byKey maps a canonical key to the index of its parameter, the one
	// that is not deprecated when two share a key.
	byKey map[string]int
}

// Param is one parameter of an agent.
type Param struct {
	// Name is the agent's spelling, which is also the key the agent reads
	// on standard input ("ip", "username", "resourceGroup").
	Name string
	// Key is Name's canonical form (fence.CanonicalKey).
	Key string
	// Required is the metadata's required="1".
	Required bool
	// Deprecated marks an old name kept for compatibility (login,
	// passwd, ipaddr, port).
	Deprecated bool
	// Obsoletes names the old name this parameter replaces (username
	// obsoletes login).
	Obsoletes string
	// Type is the metadata's content type: "string", "integer", "second",
	// "boolean" or "select".
	Type string
	// Default is the agent's default value, if it has one.
	Default string
	// Choices are the values of a "select".
	Choices []string
	// Getopt is the command-line spelling, such as "-a, --ip=[ip]".
	Getopt string
	// ShortDesc describes the parameter.
	ShortDesc string
	// Secret is true for a credential (see IsSecret): its value is never
	// printed.
	Secret bool
}

// Param returns the parameter named k, in any spelling (it is
// canonicalised: "power-timeout" finds power_timeout); when a current and a
// deprecated name share a canonical key, the current one. A deprecated
// name (login, ipaddr, port) finds its own entry, Deprecated set.
func (m *Meta) Param(k string) (Param, bool) {
	i, ok := m.byKey[fence.CanonicalKey(k)]
	if !ok {
		return Param{}, false
	}
	return m.Params[i], true
}

// HasAction reports whether the agent lists action a ("list-status").
func (m *Meta) HasAction(a string) bool { return slices.Contains(m.Actions, a) }

// CanCycle reports whether the agent offers a native power cycle: it lists
// the reboot action and its method parameter has the choice "cycle".
func (m *Meta) CanCycle() bool {
	p, ok := m.Param("method")
	return ok && m.HasAction("reboot") && slices.Contains(p.Choices, "cycle")
}

// CanList reports whether the agent lists its plugs (list or list-status).
func (m *Meta) CanList() bool { return m.HasAction("list") || m.HasAction("list-status") }

// identity returns the current name of the option that p is a spelling of:
// p's own key, or for a deprecated name the key of the parameter that
// obsoletes it.
func (m *Meta) identity(p Param) string {
	if !p.Deprecated {
		return p.Key
	}
	for _, q := range m.Params {
		if q.Obsoletes != "" && fence.CanonicalKey(q.Obsoletes) == p.Key {
			return q.Key
		}
	}
	return p.Key
}

// Specs returns the agent's parameters as fence.ParamSpecs, deprecated
// names as aliases of their replacements, for --help and validation.
func (m *Meta) Specs() []fence.ParamSpec {
	var out []fence.ParamSpec
	idx := map[string]int{}
	for _, p := range m.Params {
		if p.Deprecated {
			continue
		}
		typ := p.Type
		if typ == "select" {
			typ = "string"
		}
		idx[p.Key] = len(out)
		out = append(out, fence.ParamSpec{Name: p.Key, Description: p.ShortDesc, Type: typ,
			Default: p.Default, Required: p.Required, Secret: p.Secret})
	}
	for _, p := range m.Params {
		if !p.Deprecated {
			continue
		}
		id := m.identity(p)
		if i, ok := idx[id]; ok && id != p.Key {
			out[i].Aliases = append(out[i].Aliases, p.Key)
		} else if !ok {
			out = append(out, fence.ParamSpec{Name: p.Key, Description: p.ShortDesc, Type: p.Type,
				Default: p.Default, Required: p.Required, Secret: p.Secret})
		}
	}
	return out
}

// ErrMetadata is wrapped by the errors of reading an agent's metadata.
var ErrMetadata = errors.New("unusable agent metadata")

// The XML of the metadata.
type xmlAgent struct {
	XMLName   xml.Name     `xml:"resource-agent"`
	Name      string       `xml:"name,attr"`
	ShortDesc string       `xml:"shortdesc,attr"`
	LongDesc  string       `xml:"longdesc"`
	Symlinks  []xmlSymlink `xml:"symlink"`
	Params    []xmlParam   `xml:"parameters>parameter"`
	Actions   []xmlAction  `xml:"actions>action"`
}

type xmlSymlink struct {
	Name string `xml:"name,attr"`
}

type xmlParam struct {
	Name       string `xml:"name,attr"`
	Required   string `xml:"required,attr"`
	Deprecated string `xml:"deprecated,attr"`
	Obsoletes  string `xml:"obsoletes,attr"`
	Getopt     struct {
		Mixed string `xml:"mixed,attr"`
	} `xml:"getopt"`
	Content struct {
		Type    string `xml:"type,attr"`
		Default string `xml:"default,attr"`
		Options []struct {
			Value string `xml:"value,attr"`
		} `xml:"option"`
	} `xml:"content"`
	ShortDesc []struct {
		Lang string `xml:"lang,attr"`
		Text string `xml:",chardata"`
	} `xml:"shortdesc"`
}

type xmlAction struct {
	Name string `xml:"name,attr"`
}

// ParseMetadata parses an agent's metadata XML. It refuses a document
// that is not a resource-agent, has no name, or lists no actions; errors
// wrap ErrMetadata.
func ParseMetadata(b []byte) (*Meta, error) {
	var x xmlAgent
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = true
	if err := dec.Decode(&x); err != nil {
		return nil, fmt.Errorf("%w: not resource-agent XML: %v", ErrMetadata, err)
	}
	m := &Meta{
		Name:      strings.TrimSpace(x.Name),
		ShortDesc: strings.TrimSpace(x.ShortDesc),
		LongDesc:  strings.TrimSpace(x.LongDesc),
		byKey:     map[string]int{},
	}
	if m.Name == "" {
		return nil, fmt.Errorf("%w: the resource-agent has no name", ErrMetadata)
	}
	for _, s := range x.Symlinks {
		if s.Name != "" {
			m.Symlinks = append(m.Symlinks, s.Name)
		}
	}
	for _, xp := range x.Params {
		name := strings.TrimSpace(xp.Name)
		if name == "" || strings.ContainsAny(name, "= \t\r\n#\"") {
			return nil, fmt.Errorf("%w: parameter name %q", ErrMetadata, name)
		}
		p := Param{
			Name:       name,
			Key:        fence.CanonicalKey(name),
			Required:   xp.Required == "1",
			Deprecated: xp.Deprecated == "1",
			Obsoletes:  strings.TrimSpace(xp.Obsoletes),
			Type:       strings.TrimSpace(xp.Content.Type),
			Default:    xp.Content.Default,
			Getopt:     xp.Getopt.Mixed,
		}
		if p.Type == "" {
			p.Type = "string"
		}
		for _, o := range xp.Content.Options {
			p.Choices = append(p.Choices, o.Value)
		}
		for _, d := range xp.ShortDesc {
			if d.Lang == "" || d.Lang == "en" {
				p.ShortDesc = strings.TrimSpace(d.Text)
				break
			}
		}
		p.Secret = IsSecret(p.Key)
		if i, dup := m.byKey[p.Key]; !dup || (m.Params[i].Deprecated && !p.Deprecated) {
			m.byKey[p.Key] = len(m.Params)
		}
		m.Params = append(m.Params, p)
	}
	for _, a := range x.Actions {
		if a.Name != "" && !slices.Contains(m.Actions, a.Name) {
			m.Actions = append(m.Actions, a.Name)
		}
	}
	if len(m.Actions) == 0 {
		return nil, fmt.Errorf("%w: %s lists no actions", ErrMetadata, m.Name)
	}
	return m, nil
}

// The metadata cache: running an agent for its metadata starts a Python
// interpreter, so each agent's metadata is read once per version of its
// file (path, size, modification time).
type metaKey struct {
	path  string
	size  int64
	mtime time.Time
}

type metaEntry struct {
	done chan struct{}
	meta *Meta
	err  error
}

var metaCache struct {
	sync.Mutex
	m map[metaKey]*metaEntry
}

// Metadata returns the metadata of an agent, given by name (fence_apc) or
// absolute path (see LookPath): it runs the agent with "-o metadata" once
// and caches the result for as long as the agent's file does not change.
// The run is bounded by ctx and by DefaultTimeout. Errors are *Error values
// wrapping ErrMetadata, or the error of LookPath.
func Metadata(ctx context.Context, agent string) (*Meta, error) {
	path, err := LookPath(agent)
	if err != nil {
		return nil, err
	}
	return metadata(ctx, path, DefaultTimeout, nil)
}

func metadata(ctx context.Context, path string, timeout time.Duration, env []string) (*Meta, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, &Error{Agent: agentName(path), Action: "metadata", Exit: -1, Err: fence.NotDone(err)}
	}
	key := metaKey{path: path, size: st.Size(), mtime: st.ModTime()}
	// At most two rounds: a caller that waited for another's run, which
	// failed, runs the agent itself once.
	for round := 0; ; round++ {
		metaCache.Lock()
		if metaCache.m == nil {
			metaCache.m = map[metaKey]*metaEntry{}
		}
		e, ok := metaCache.m[key]
		if !ok {
			e = &metaEntry{done: make(chan struct{})}
			metaCache.m[key] = e
			metaCache.Unlock()
			e.meta, e.err = readMetadata(ctx, path, timeout, env)
			if e.err != nil {
				// Failures are not cached: the next caller tries again.
				metaCache.Lock()
				if metaCache.m[key] == e {
					delete(metaCache.m, key)
				}
				metaCache.Unlock()
			}
			close(e.done)
			return e.meta, e.err
		}
		metaCache.Unlock()
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, &Error{Agent: agentName(path), Action: "metadata", Exit: -1, Err: fence.NotDone(ctx.Err())}
		}
		if e.err == nil || round > 0 {
			return e.meta, e.err
		}
	}
}

// readMetadata runs the agent for its metadata.
func readMetadata(ctx context.Context, path string, timeout time.Duration, env []string) (*Meta, error) {
	r := runSpec{path: path, args: []string{"-o", "metadata"}, env: env, timeout: timeout, limit: DefaultOutputLimit}
	out := r.run(ctx)
	fail := func(cause error) error {
		return &Error{Agent: agentName(path), Action: "metadata", Exit: out.exit, Output: errorLines(out, nil), Err: cause}
	}
	if out.err != nil {
		return nil, fail(out.err)
	}
	if out.exit != 0 {
		return nil, fail(fmt.Errorf("%w: -o metadata exited with status %d", ErrMetadata, out.exit))
	}
	m, err := ParseMetadata(out.stdout)
	if err != nil {
		return nil, fail(err)
	}
	return m, nil
}
