package config

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/errfmt"
	"github.com/fencekit/fencekit/internal/properties"
)

// ConfigMap is the part of a Kubernetes ConfigMap that the fence
// configuration uses. It marshals to and unmarshals from the Kubernetes
// shape (kind, apiVersion, metadata.name, metadata.namespace, data) in JSON,
// and in YAML through sigs.k8s.io/yaml.
type ConfigMap struct {
	Name      string
	Namespace string
	Data      map[string]string
}

type configMapMeta struct {
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

type configMapJSON struct {
	Kind       string            `json:"kind,omitempty"`
	APIVersion string            `json:"apiVersion,omitempty"`
	Metadata   configMapMeta     `json:"metadata"`
	Data       map[string]string `json:"data,omitempty"`
}

// MarshalJSON writes the ConfigMap in the Kubernetes shape, with kind
// ConfigMap and apiVersion v1.
func (c ConfigMap) MarshalJSON() ([]byte, error) {
	return json.Marshal(configMapJSON{
		Kind: "ConfigMap", APIVersion: "v1",
		Metadata: configMapMeta{Name: c.Name, Namespace: c.Namespace},
		Data:     c.Data,
	})
}

// UnmarshalJSON reads a ConfigMap in the Kubernetes shape. Fields other than
// kind, metadata.name, metadata.namespace and data are ignored; a kind other
// than ConfigMap is an error, a missing kind is not.
func (c *ConfigMap) UnmarshalJSON(b []byte) error {
	var j configMapJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	if j.Kind != "" && j.Kind != "ConfigMap" {
		return fmt.Errorf("kind %q is not ConfigMap", j.Kind)
	}
	*c = ConfigMap{Name: j.Metadata.Name, Namespace: j.Metadata.Namespace, Data: j.Data}
	return nil
}

// Error is an error of the fence configuration. It names the ConfigMap
// and, when known, the key, the line of the .properties body (1-based, 0
// when unknown) and the node. Its message never quotes the value of a
// secret parameter (see IsSecret). It matches ErrConfig with errors.Is.
type Error struct {
	ConfigMap string
	Key       string
	Line      int
	Node      string
	Err       error
}

// Error returns "fence config: configmap NAME, line N, key KEY, node NODE:
// cause", leaving out the parts that are not known.
func (e *Error) Error() string {
	var b errfmt.Labels
	b.Start("fence config").Add("configmap", e.ConfigMap)
	if e.Line > 0 {
		b.AddRaw("line", strconv.Itoa(e.Line))
	}
	return b.Add("key", e.Key).Add("node", e.Node).Cause(e.Err, "invalid")
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// Is makes a Error match ErrConfig.
func (e *Error) Is(target error) bool { return target == fence.ErrConfig }

// Sentinels wrapped by some ConfigErrors, for errors.Is.
var (
	// ErrNodeMismatch means a fence-config-<node> ConfigMap's node_name
	// names another node. Taking either name would risk fencing the wrong
	// node, the worst failure of all, so the configuration is refused.
	ErrNodeMismatch = errors.New("node_name does not match the node of the ConfigMap's name")
	// ErrNodeNotConfigured means no fence-config-<node> ConfigMap names the
	// node.
	ErrNodeNotConfigured = errors.New("node has no fence configuration")
	// ErrMethodNotConfigured means the node's fence-config does not list the
	// method.
	ErrMethodNotConfigured = errors.New("method is not listed in the node's fence configuration")
)

// LoadConfigMaps reads ConfigMaps from YAML or JSON: a YAML list of
// ConfigMaps as the design writes them ("- kind: ConfigMap ..."), several
// YAML documents separated by "---", a single ConfigMap, a "kind: List" (or
// any kind ending in "List") with items, or JSON of any of these, including a
// stream of JSON values. Objects of other kinds are skipped; an object with no
// kind, or a ConfigMap with no name, is an error. Every error is a
// *Error; all the errors of the input are returned, joined, with no
// ConfigMaps.
func LoadConfigMaps(r io.Reader) ([]ConfigMap, error) {
	in, err := io.ReadAll(r)
	if err != nil {
		return nil, &Error{Err: fmt.Errorf("read: %w", err)}
	}
	in = bytes.TrimPrefix(in, []byte("\uFEFF"))
	l := &cmLoader{}
	trimmed := bytes.TrimSpace(in)
	if len(trimmed) == 0 {
		return nil, nil
	}
	var jerr error
	if trimmed[0] == '{' || trimmed[0] == '[' {
		// JSON, or YAML in flow style: try JSON first.
		var docs []json.RawMessage
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		for {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err == io.EOF {
				break
			} else if err != nil {
				jerr = err
				break
			}
			docs = append(docs, raw)
		}
		if jerr == nil {
			for i, d := range docs {
				l.value(d, fmt.Sprintf("JSON value %d", i+1))
			}
			return l.result()
		}
	}
	for _, d := range splitYAML(in) {
		j, err := yaml.YAMLToJSONStrict(d.text)
		where := fmt.Sprintf("YAML document starting on line %d", d.line)
		if err != nil {
			if jerr != nil {
				// Neither JSON nor YAML: it looked like JSON.
				return nil, &Error{Err: fmt.Errorf("JSON: %w", jerr)}
			}
			l.fail("", "", fmt.Errorf("%s: %w", where, err))
			continue
		}
		l.value(j, where)
	}
	return l.result()
}

func (l *cmLoader) result() ([]ConfigMap, error) {
	if len(l.errs) > 0 {
		return nil, errors.Join(l.errs...)
	}
	return l.cms, nil
}

type cmLoader struct {
	cms  []ConfigMap
	errs []error
}

func (l *cmLoader) fail(cm, key string, err error) {
	l.errs = append(l.errs, &Error{ConfigMap: cm, Key: key, Err: err})
}

// value takes a document: a list, an object or nothing.
func (l *cmLoader) value(raw []byte, where string) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
	case raw[0] == '[':
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			l.fail("", "", fmt.Errorf("%s: %w", where, err))
			return
		}
		for i, it := range items {
			l.object(it, fmt.Sprintf("%s, item %d", where, i+1))
		}
	case raw[0] == '{':
		l.object(raw, where)
	default:
		l.fail("", "", fmt.Errorf("%s: neither a ConfigMap nor a list", where))
	}
}

func (l *cmLoader) object(raw json.RawMessage, where string) {
	var head struct {
		Kind  string            `json:"kind"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		l.fail("", "", fmt.Errorf("%s: %w", where, err))
		return
	}
	switch {
	case head.Kind == "ConfigMap":
		var cm ConfigMap
		if err := json.Unmarshal(raw, &cm); err != nil {
			l.fail("", "", fmt.Errorf("%s: %w", where, err))
			return
		}
		if cm.Name == "" {
			l.fail("", "metadata.name", fmt.Errorf("%s: ConfigMap without a name", where))
			return
		}
		l.cms = append(l.cms, cm)
	case strings.HasSuffix(head.Kind, "List"):
		for i, it := range head.Items {
			l.object(it, fmt.Sprintf("%s, item %d", where, i+1))
		}
	case head.Kind == "":
		l.fail("", "kind", fmt.Errorf("%s: object without a kind", where))
	}
}

type yamlDoc struct {
	text []byte
	line int
}

// splitYAML splits a YAML stream into documents at "---" lines (and
// "..." end markers), as Kubernetes tools do.
func splitYAML(in []byte) []yamlDoc {
	var docs []yamlDoc
	cur := yamlDoc{line: 1}
	for i, ln := range bytes.SplitAfter(in, []byte("\n")) {
		l := bytes.TrimRight(ln, "\r\n")
		switch {
		case bytes.Equal(l, []byte("---")) || bytes.HasPrefix(l, []byte("--- ")) || bytes.HasPrefix(l, []byte("---\t")):
			docs = append(docs, cur)
			cur = yamlDoc{line: i + 1, text: append([]byte("   "), ln[3:]...)}
		case bytes.Equal(bytes.TrimRight(l, " \t"), []byte("...")):
			docs = append(docs, cur)
			cur = yamlDoc{line: i + 2}
		default:
			cur.text = append(cur.text, ln...)
		}
	}
	return append(docs, cur)
}

// MaxStepLevels is the number of levels a step can have: the step's own key
// (isolation=...) is level 1, and isolation.2= ... isolation.9= are the
// fallback levels, tried in order when the one before fails.
const MaxStepLevels = 9

// NodeConfig is the fence configuration of one node, from its
// fence-config-<node> ConfigMap.
type NodeConfig struct {
	// Node is the node's name, from the ConfigMap's name.
	Node string
	// ConfigMap is the name of the ConfigMap, fence-config-<node>.
	ConfigMap string
	// Steps holds the methods of each configured step: one slice of method
	// names per level, level 1 first, each run in order. A step that is not
	// configured has no entry.
	Steps map[fence.Step][][]string
	// Actions holds the own action (action= in its ConfigMap or template)
	// of each method that has one, by method name. A method without one
	// takes its step's action (see StepAction and PlanLevel).
	Actions map[string]fence.Action
	// Kdump is the kdump (or kdump_enabled) setting: the node dumps its
	// kernel to the network when it crashes, and the controller should
	// watch for it. Nothing in this package acts on it yet.
	Kdump bool

	keys map[fence.Step][]keyLine // the key and line of each level, for errors
}

type keyLine struct {
	key  string
	line int
}

// Methods returns the levels of step s: method names, level 1 first.
func (n *NodeConfig) Methods(s fence.Step) [][]string { return n.Steps[s] }

func (n *NodeConfig) clone() *NodeConfig {
	c := *n
	c.Steps = make(map[fence.Step][][]string, len(n.Steps))
	for s, levels := range n.Steps {
		ls := make([][]string, len(levels))
		for i, l := range levels {
			ls[i] = slices.Clone(l)
		}
		c.Steps[s] = ls
	}
	c.Actions = maps.Clone(n.Actions)
	c.keys = nil
	return &c
}

// Config is a parsed fence configuration: the nodes' configurations and their
// methods' parameters, templates merged. It is not changed after Parse
// and is safe for concurrent use.
type Config struct {
	nodes   map[string]*NodeConfig
	methods map[string]*methodConfig // by ConfigMap name
	secrets SecretSource             // reads the secret references; nil: none
}

// WithSecrets returns a copy of c whose methods read their secret
// references (password_secret=NAME/KEY, see SecretSuffix) from src when they
// are opened (Levels, OpenMethod). Without it, a method that names a Secret
// fails to open with an error wrapping ErrNoSecretSource.
func (c *Config) WithSecrets(src SecretSource) *Config {
	cp := *c
	cp.secrets = src
	return &cp
}

// origin says where a parameter was set.
type origin struct {
	cm   string
	key  string // as written, canonical form
	line int
}

type methodConfig struct {
	cm        string
	driver    string // agent_name or driver, else the address scheme's driver
	driverKey string // the key that named the driver, "" when the address did
	params    fence.Params
	origins   map[string]origin // canonical key → where it was set
}

// Names of the ConfigMaps and their data keys.
const (
	cmPrefix         = "fence-"
	cmConfigPrefix   = "fence-config-"
	cmMethodPrefix   = "fence-method-"
	cmTemplatePrefix = "fence-method-template-"
	dataConfig       = "config.properties"
	dataMethod       = "method.properties"
	dataTemplate     = "template.properties"
)

// aliasGroups maps a parameter name to the name of its group: keys of one
// group are one parameter, so that two of them in one ConfigMap are
// duplicates and a method's key overrides its template's alias of it.
var aliasGroups = func() map[string]string {
	g := map[string]string{
		"agent_name":  "driver",
		"must_sucess": "must_succeed", // the design's spelling
	}
	for _, p := range fence.CommonParams {
		for _, a := range p.Aliases {
			g[fence.CanonicalKey(a)] = p.Name
		}
	}
	return g
}()

func aliasGroup(k string) string {
	if base, ok := strings.CutSuffix(k, SecretSuffix); ok && base != "" {
		// A secret reference (password_secret) is its parameter.
		return aliasGroup(base)
	}
	if g, ok := aliasGroups[k]; ok {
		return g
	}
	return k
}

// lookupAlias finds the key of m that is in the group of k.
func lookupAlias[V any](m map[string]V, k string) (string, V, bool) {
	g := aliasGroup(k)
	if v, ok := m[k]; ok {
		return k, v, true
	}
	for key, v := range m {
		if aliasGroup(key) == g {
			return key, v, true
		}
	}
	var zero V
	return "", zero, false
}

var methodNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$`)

// propEntry is one parameter of a ConfigMap's body.
type propEntry struct {
	raw   string // as written
	key   string // canonical
	value string // trimmed
	line  int
}

type cmKind uint8

const (
	kindNode cmKind = iota + 1
	kindMethod
	kindTemplate
)

// parsedCM is a fence ConfigMap whose body was read.
type parsedCM struct {
	name    string
	kind    cmKind
	suffix  string // the node, or the template's short name
	entries []propEntry
	ok      bool
}

func (p *parsedCM) get(key string) (propEntry, bool) {
	for _, e := range p.entries {
		if e.key == key {
			return e, true
		}
	}
	return propEntry{}, false
}

type configParser struct {
	errs      []error
	seenErrs  map[string]bool
	badNodes  map[string]bool
	cms       map[string]*parsedCM
	order     []*parsedCM
	nodes     map[string]*NodeConfig
	methods   map[string]*methodConfig
	templates map[string]*parsedCM
}

func (p *configParser) fail(cm, key string, line int, node string, err error) {
	e := &Error{ConfigMap: cm, Key: key, Line: line, Node: node, Err: err}
	// A template's error shows once, not once per method using it.
	if msg := e.Error(); !p.seenErrs[msg] {
		p.seenErrs[msg] = true
		p.errs = append(p.errs, e)
	}
}

// Load reads ConfigMaps with LoadConfigMaps and parses them with
// Parse.
func Load(r io.Reader) (*Config, error) {
	cms, err := LoadConfigMaps(r)
	if err != nil {
		return nil, err
	}
	return Parse(cms)
}

// Parse parses the fence configuration held in cms. ConfigMaps whose
// names do not start with "fence-" are ignored, as are fence- ConfigMaps of
// other shapes than these three:
//
//   - fence-config-<node>, data key config.properties: node_name (optional;
//     when present it must equal <node>, or the configuration is refused:
//     the design's own example has fence-config-host1 with node_name=host,
//     which is an error here), isolation, power_management and recovery
//     (each a space-separated list of method names, run in order: one level),
//     and kdump or kdump_enabled (yes/no). As an extension, isolation.2 to
//     isolation.9 (and so for every step) give fallback levels, tried in
//     order when the level before fails; levels must not skip a number. Any
//     other key is an error.
//   - fence-method-<method>-<node>, data key method.properties: the method's
//     parameters, and optionally template=, which names a template by its
//     ConfigMap name (fence-method-template-fc-switch-brocade) or its short
//     name (fc-switch-brocade). The method's keys override the template's.
//   - fence-method-template-<name>, data key template.properties: parameters
//     shared by methods. Its name= key is informational.
//
// A node's methods are found by building the name
// fence-method-<method>-<node> for each method its fence-config lists (names
// are never split: methods and nodes both contain dashes). A method
// ConfigMap that two nodes would both use (node a's method x-b and node b-a's
// method x) is an error.
//
// Keys are canonical (see CanonicalKey: snmp-priv-prot is snmp_priv_prot),
// values are trimmed of surrounding white space, and the aliases of a
// parameter (ipaddr and ip, login and username, agent_name and driver, the
// design's must_sucess and must_succeed, ...) count as one key: given twice in
// one ConfigMap they are an error, and a method's alias overrides its
// template's. The driver is picked by agent_name (a fence agent, such as
// fence_brocade) or driver (such as brocade), else by the scheme of the
// address parameter; a method with neither is an error. The parameters that
// this package reads itself (the address, timeouts, retries, action,
// must_succeed) are checked too.
//
// A secret parameter may name a key of a Secret instead of holding the
// value: password_secret=bmc-creds/password (see SecretSuffix). The
// reference and the value are one parameter, as aliases are; the value is
// read when the method is opened, from the SecretSource of
// Config.WithSecrets.
//
// Parse knows no driver: the keys a driver takes, the parameters it
// requires and the values it refuses are checked by Config.Validate, or at
// once by ParseFor and ValidateConfigMaps.
//
// Every error is a *Error. All the errors found are returned, joined,
// and no Config.
func Parse(cms []ConfigMap) (*Config, error) {
	cfg, err := ParsePartial(cms)
	if err != nil {
		return nil, err
	}
	return cfg, nil
}

// ParsePartial parses as Parse does, but keeps what is valid:
// the Config holds every node whose own configuration (its fence-config, and
// every method and template it uses) has no error, and the error joins all
// the errors found, as Parse's does. A controller uses it so that one
// broken ConfigMap stops the fencing of the nodes it concerns, not of every
// node; ErrorsFor picks a node's errors out of the joined error.
func ParsePartial(cms []ConfigMap) (*Config, error) {
	p := &configParser{
		cms:       map[string]*parsedCM{},
		nodes:     map[string]*NodeConfig{},
		methods:   map[string]*methodConfig{},
		templates: map[string]*parsedCM{},
		seenErrs:  map[string]bool{},
		badNodes:  map[string]bool{},
	}
	namespaces := map[string]string{}
	for _, cm := range cms {
		if !strings.HasPrefix(cm.Name, cmPrefix) {
			continue
		}
		if ns, dup := namespaces[cm.Name]; dup {
			where := ""
			if ns != cm.Namespace {
				where = fmt.Sprintf(" (namespaces %q and %q)", ns, cm.Namespace)
			}
			p.fail(cm.Name, "", 0, "", fmt.Errorf("ConfigMap given twice%s", where))
			if pc := p.cms[cm.Name]; pc != nil {
				pc.ok = false
			}
			continue
		}
		namespaces[cm.Name] = cm.Namespace
		p.read(cm)
	}
	for _, pc := range p.order {
		if pc.kind == kindNode && pc.ok {
			p.node(pc)
		}
	}
	for _, pc := range p.order {
		if pc.kind == kindMethod && pc.ok {
			p.method(pc)
		}
	}
	p.resolveNodes()
	cfg := &Config{nodes: p.nodes, methods: p.methods}
	if len(p.errs) > 0 {
		return cfg, errors.Join(p.errs...)
	}
	return cfg, nil
}

// ErrorsFor returns the errors of err (as Parse or
// ParsePartial return them) that concern node: those naming it, and
// those of its fence-config-<node> ConfigMap. It returns nil when there is
// none, even if err is not nil (the error may concern a template or another
// node).
func ErrorsFor(err error, node string) error {
	var out []error
	for _, e := range unjoin(err) {
		var ce *Error
		if errors.As(e, &ce) && (ce.Node == node || ce.ConfigMap == cmConfigPrefix+node) {
			out = append(out, e)
		}
	}
	return errors.Join(out...)
}

// read classifies a fence ConfigMap and reads its body.
func (p *configParser) read(cm ConfigMap) {
	pc := &parsedCM{name: cm.Name}
	var dataKey string
	switch {
	case strings.HasPrefix(cm.Name, cmConfigPrefix):
		pc.kind, pc.suffix, dataKey = kindNode, strings.TrimPrefix(cm.Name, cmConfigPrefix), dataConfig
	case strings.HasPrefix(cm.Name, cmTemplatePrefix):
		pc.kind, pc.suffix, dataKey = kindTemplate, strings.TrimPrefix(cm.Name, cmTemplatePrefix), dataTemplate
	case strings.HasPrefix(cm.Name, cmMethodPrefix):
		pc.kind, pc.suffix, dataKey = kindMethod, strings.TrimPrefix(cm.Name, cmMethodPrefix), dataMethod
	default:
		return // another fence- ConfigMap: not ours
	}
	p.cms[cm.Name] = pc
	p.order = append(p.order, pc)
	if pc.kind == kindTemplate {
		p.templates[cm.Name] = pc
	}
	if pc.suffix == "" {
		p.fail(cm.Name, "", 0, "", fmt.Errorf("ConfigMap name has nothing after %q", strings.TrimSuffix(cm.Name, pc.suffix)))
		return
	}
	body, ok := cm.Data[dataKey]
	if !ok {
		p.fail(cm.Name, dataKey, 0, "", fmt.Errorf("ConfigMap has no data key %s", dataKey))
		return
	}
	entries, err := properties.Parse(body)
	if err != nil {
		for _, e := range unjoin(err) {
			var pe *properties.Error
			if !errors.As(e, &pe) {
				p.fail(cm.Name, dataKey, 0, "", e)
				continue
			}
			inner := pe.Err
			if pe.PrevLine > 0 {
				inner = fmt.Errorf("%w: defined again (first on line %d)", pe.Err, pe.PrevLine)
			}
			p.fail(cm.Name, fence.CanonicalKey(pe.Key), pe.Line, "", fmt.Errorf("%s: %w", dataKey, inner))
		}
		return
	}
	ok = true
	seen := map[string]propEntry{} // by alias group
	for _, e := range entries {
		k := fence.CanonicalKey(e.Key)
		if k == "" {
			p.fail(cm.Name, "", e.Line, "", errors.New("entry with an empty key"))
			ok = false
			continue
		}
		g := aliasGroup(k)
		if pc.kind == kindNode {
			g = nodeKeyGroup(k)
		}
		if first, dup := seen[g]; dup {
			p.fail(cm.Name, k, e.Line, "", fmt.Errorf("%w: %s means the same as %s on line %d", properties.ErrDuplicate, e.Key, first.raw, first.line))
			ok = false
			continue
		}
		pe := propEntry{raw: e.Key, key: k, value: strings.TrimSpace(e.Value), line: e.Line}
		seen[g] = pe
		pc.entries = append(pc.entries, pe)
	}
	if pc.kind == kindTemplate {
		if e, has := pc.get("template"); has {
			p.fail(cm.Name, "template", e.line, "", errors.New("a template cannot name a template"))
			ok = false
		}
	}
	pc.ok = ok
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// nodeKeyGroup maps the keys of config.properties that mean the same to one
// name: recover and recovery, isolation and isolation.1, kdump and
// kdump_enabled.
func nodeKeyGroup(k string) string {
	if k == "kdump_enabled" {
		return "kdump"
	}
	if s, n, ok := parseStepKey(k); ok && n > 0 {
		return s.String() + "." + strconv.Itoa(n)
	}
	return k
}

// parseStepKey parses a step key: a step, optionally followed by ".N". n is
// 0 when the level suffix is not a number from 1 to MaxStepLevels.
func parseStepKey(k string) (s fence.Step, n int, ok bool) {
	base, suffix, dotted := strings.Cut(k, ".")
	s, err := fence.ParseStep(base)
	if err != nil {
		return 0, 0, false
	}
	if !dotted {
		return s, 1, true
	}
	n, err = strconv.Atoi(suffix)
	if err != nil || n < 1 || n > MaxStepLevels || suffix != strconv.Itoa(n) {
		return s, 0, true
	}
	return s, n, true
}

// node reads a fence-config-<node> ConfigMap.
func (p *configParser) node(pc *parsedCM) {
	node := pc.suffix
	nc := &NodeConfig{Node: node, ConfigMap: pc.name, Steps: map[fence.Step][][]string{}, keys: map[fence.Step][]keyLine{}}
	ok := true
	fail := func(key string, line int, err error) {
		p.fail(pc.name, key, line, node, err)
		ok = false
	}
	type level struct {
		methods []string
		kl      keyLine
	}
	levels := map[fence.Step]map[int]level{}
	for _, e := range pc.entries {
		switch e.key {
		case "node_name":
			if e.value != node {
				fail(e.key, e.line, fmt.Errorf("%w: node_name %q, but the ConfigMap %s is for node %q; fencing the wrong node is worse than fencing none, so fix one of them", ErrNodeMismatch, e.value, pc.name, node))
			}
			continue
		case "kdump", "kdump_enabled":
			b, err := fence.ParseBool(e.value)
			if err != nil {
				fail(e.key, e.line, fmt.Errorf("%q is not yes or no", e.value))
				continue
			}
			nc.Kdump = b
			continue
		}
		s, n, isStep := parseStepKey(e.key)
		if !isStep {
			fail(e.key, e.line, fmt.Errorf("unknown key (want node_name, isolation, power_management, recovery, fallback levels such as isolation.2, or kdump)"))
			continue
		}
		if n == 0 {
			fail(e.key, e.line, fmt.Errorf("a step's fallback levels are numbered from 2 to %d, as %s.2", MaxStepLevels, s))
			continue
		}
		methods := strings.Fields(e.value)
		if len(methods) == 0 && n == 1 {
			continue // an empty step: nothing to do
		}
		if len(methods) == 0 {
			fail(e.key, e.line, errors.New("a fallback level lists no methods"))
			continue
		}
		valid := methods[:0]
		for _, m := range methods {
			switch {
			case !methodNameRE.MatchString(m):
				fail(e.key, e.line, fmt.Errorf("method name %q: a method name must be lower case letters, digits, '-' and '.', as ConfigMap names are (separate methods with spaces)", m))
			case strings.HasPrefix(m, "template-"):
				fail(e.key, e.line, fmt.Errorf("method name %q: fence-method-template- names templates, so a method name cannot start with template-", m))
			default:
				valid = append(valid, m)
			}
		}
		methods = valid
		if levels[s] == nil {
			levels[s] = map[int]level{}
		}
		levels[s][n] = level{methods: methods, kl: keyLine{e.key, e.line}}
	}
	for _, s := range fence.Steps() {
		ls := levels[s]
		if len(ls) == 0 {
			continue
		}
		for _, n := range slices.Sorted(maps.Keys(ls)) {
			if n > 1 {
				if _, prev := ls[n-1]; !prev {
					fail(ls[n].kl.key, ls[n].kl.line, fmt.Errorf("level %d of %s is given, but not level %d", n, s, n-1))
					break
				}
			}
			nc.Steps[s] = append(nc.Steps[s], ls[n].methods)
			nc.keys[s] = append(nc.keys[s], ls[n].kl)
		}
	}
	// A node with errors is still resolved, to report its methods' errors
	// too, and dropped after.
	p.nodes[node] = nc
	if !ok {
		p.badNodes[node] = true
	}
}

// method resolves a fence-method ConfigMap: its template merged under it,
// its driver found, and the parameters this package reads checked.
func (p *configParser) method(pc *parsedCM) {
	merged := map[string]string{}
	origins := map[string]origin{}
	fail := func(key string, err error) {
		o := origins[key]
		if o.cm == "" {
			o = origin{cm: pc.name}
		}
		p.fail(o.cm, key, o.line, "", err)
	}
	if te, has := pc.get("template"); has {
		name := te.value
		if !strings.HasPrefix(name, cmTemplatePrefix) {
			name = cmTemplatePrefix + name
		}
		tpl, found := p.templates[name]
		switch {
		case te.value == "":
			p.fail(pc.name, "template", te.line, "", errors.New("template= names no template"))
			return
		case !found:
			p.fail(pc.name, "template", te.line, "", fmt.Errorf("template %q: no ConfigMap %s", te.value, name))
			return
		case !tpl.ok:
			return // its errors are reported already
		}
		for _, e := range tpl.entries {
			merged[e.key] = e.value
			origins[e.key] = origin{cm: tpl.name, key: e.key, line: e.line}
		}
	}
	for _, e := range pc.entries {
		if e.key == "template" {
			continue
		}
		g := aliasGroup(e.key)
		for k := range merged {
			if aliasGroup(k) == g {
				delete(merged, k)
				delete(origins, k)
			}
		}
		merged[e.key] = e.value
		origins[e.key] = origin{cm: pc.name, key: e.key, line: e.line}
	}
	params := fence.Params(merged)
	mc := &methodConfig{cm: pc.name, params: params, origins: origins}
	ok := true
	bad := func(key string, err error) {
		fail(key, err)
		ok = false
	}
	if k, v, has := lookupAlias(merged, "driver"); has {
		if v == "" {
			bad(k, errors.New("names no driver"))
		}
		mc.driver, mc.driverKey = v, k
	}
	addr, field, err := fence.AddressFromParams(params)
	if err != nil {
		k, _, _ := lookupAlias(merged, field)
		if k == "" {
			k = field
		}
		bad(k, err)
	} else if mc.driver == "" && mc.driverKey == "" {
		if addr.Driver == "" {
			p.fail(pc.name, "agent_name", 0, "", errors.New("no driver: set agent_name (a fence agent, such as fence_ipmilan) or driver (such as ipmi) in the method or its template, or give an address with a scheme (ipmi://...)"))
			ok = false
		}
		mc.driver = addr.Driver
	}
	if _, err := fence.OptionsFromParams(fence.Options{}, params); err != nil {
		var pe *fence.ParamError
		key := ""
		if errors.As(err, &pe) {
			key, _, _ = lookupAlias(merged, pe.Key)
		}
		bad(key, err)
	}
	if k, v, has := lookupAlias(merged, "action"); has && v != "" {
		if a, err := fence.ParseAction(v); err != nil {
			bad(k, err)
		} else if !a.Switches() {
			bad(k, fmt.Errorf("a method's action is on, off or reboot, not %v", a))
		}
	}
	if k, v, has := lookupAlias(merged, "must_succeed"); has {
		if _, err := fence.ParseBool(v); err != nil {
			bad(k, fmt.Errorf("%q is not yes or no", v))
		}
	}
	if ok {
		p.methods[pc.name] = mc
	}
}

// resolveNodes finds every method each node lists.
func (p *configParser) resolveNodes() {
	type user struct{ node, method string }
	users := map[string]user{} // method ConfigMap → its first user
	for _, node := range slices.Sorted(maps.Keys(p.nodes)) {
		nc := p.nodes[node]
		ok := true
		for _, s := range fence.Steps() {
			for i, level := range nc.Steps[s] {
				kl := nc.keys[s][i]
				for _, m := range level {
					name := methodConfigMap(m, node)
					if other, used := users[name]; used && other.node != node {
						p.fail(name, "", 0, node, fmt.Errorf("the ConfigMap would serve node %q as method %q and node %q as method %q; rename a method", other.node, other.method, node, m))
						ok = false
						continue
					}
					users[name] = user{node, m}
					pc, found := p.cms[name]
					switch {
					case !found:
						p.fail(nc.ConfigMap, kl.key, kl.line, node, fmt.Errorf("method %q: no ConfigMap %s", m, name))
						ok = false
					case pc.kind != kindMethod:
						p.fail(nc.ConfigMap, kl.key, kl.line, node, fmt.Errorf("method %q: %s is not a method ConfigMap", m, name))
						ok = false
					case p.methods[name] == nil:
						ok = false // its errors are reported already
					default:
						if _, v, has := lookupAlias(p.methods[name].params, "action"); has && strings.TrimSpace(v) != "" {
							if a, err := fence.ParseAction(v); err == nil {
								if nc.Actions == nil {
									nc.Actions = map[string]fence.Action{}
								}
								nc.Actions[m] = a
							}
						}
					}
				}
			}
		}
		if !ok || p.badNodes[node] {
			delete(p.nodes, node)
		}
	}
}

func methodConfigMap(method, node string) string { return cmMethodPrefix + method + "-" + node }

// Nodes returns the names of the configured nodes, sorted.
func (c *Config) Nodes() []string { return slices.Sorted(maps.Keys(c.nodes)) }

// Node returns a copy of the configuration of a node.
func (c *Config) Node(name string) (*NodeConfig, bool) {
	n, ok := c.nodes[name]
	if !ok {
		return nil, false
	}
	return n.clone(), true
}

// MethodParams returns the driver and the parameters of a method the node's
// configuration lists: the template's parameters with the method's over
// them, template= left out. driver is the agent_name or driver parameter
// (either may name a driver for Registry.Open), else the driver of the
// address's scheme. An unknown node or a method the node does not list is a
// *Error wrapping ErrNodeNotConfigured or ErrMethodNotConfigured.
func (c *Config) MethodParams(node, method string) (driver string, p fence.Params, err error) {
	mc, err := c.lookup(node, method)
	if err != nil {
		return "", nil, err
	}
	return mc.driver, mc.params.Clone(), nil
}

func (c *Config) lookup(node, method string) (*methodConfig, error) {
	nc, ok := c.nodes[node]
	if !ok {
		return nil, &Error{ConfigMap: cmConfigPrefix + node, Node: node, Err: ErrNodeNotConfigured}
	}
	for _, levels := range nc.Steps {
		for _, l := range levels {
			if slices.Contains(l, method) {
				return c.methods[methodConfigMap(method, node)], nil
			}
		}
	}
	return nil, &Error{ConfigMap: nc.ConfigMap, Node: node, Err: fmt.Errorf("%w: %q", ErrMethodNotConfigured, method)}
}

// Levels opens the methods of a node's step with reg (DefaultRegistry when
// nil) and returns them as levels for DoLevels, level 1 first. A step the
// node does not configure gives no levels and no error. On any error, the
// methods already opened are closed and the error
// is returned: a *Error for an unknown node or step, else Registry.Open's
// error.
func (c *Config) Levels(ctx context.Context, reg *fence.Registry, node string, step fence.Step, logger *slog.Logger) ([]fence.Level, error) {
	if reg == nil {
		reg = fence.DefaultRegistry()
	}
	nc, ok := c.nodes[node]
	if !ok {
		return nil, &Error{ConfigMap: cmConfigPrefix + node, Node: node, Err: ErrNodeNotConfigured}
	}
	if step < fence.StepIsolation || step > fence.StepRecovery {
		return nil, &Error{ConfigMap: nc.ConfigMap, Node: node, Err: fmt.Errorf("%v is not a step", step)}
	}
	var levels []fence.Level
	closeAll := func() {
		for _, l := range levels {
			for _, m := range l.Methods {
				_ = m.Close()
			}
		}
	}
	for _, names := range nc.Steps[step] {
		levels = append(levels, fence.Level{})
		l := &levels[len(levels)-1]
		for _, name := range names {
			mc, err := c.lookup(node, name)
			if err != nil {
				closeAll()
				return nil, err
			}
			m, err := c.open(ctx, reg, node, name, mc, logger)
			if err != nil {
				closeAll()
				return nil, err
			}
			l.Methods = append(l.Methods, m)
		}
	}
	return levels, nil
}

// Validate checks, without opening any device, every method ConfigMap
// against reg (DefaultRegistry when nil): that its driver is registered,
// that the address's scheme, if any, names the same driver, that the
// parameters the driver requires are set, that every key is one the driver
// takes (its parameters and their aliases, the common ones, the options of
// the agents it stands in for that it ignores, the configuration's own
// keys, and NAME_secret references for its secret parameters; an unknown
// key is an error with the nearest known key as a suggestion), and that the
// driver's own reading of the parameters (Driver.Check) finds nothing
// wrong. All the errors found are returned, joined, each a *Error
// naming the ConfigMap, line and key at fault; the errors of a method a
// node uses name the node too.
func (c *Config) Validate(reg *fence.Registry) error {
	_, bad := c.validate(reg)
	return errors.Join(bad...)
}

// validate returns the errors of every method, and the method ConfigMaps
// that have some.
func (c *Config) validate(reg *fence.Registry) (map[string]bool, []error) {
	if reg == nil {
		reg = fence.DefaultRegistry()
	}
	// The node of each method ConfigMap a node uses (one at most: the
	// parser refuses a ConfigMap two nodes would share).
	users := map[string]string{}
	for _, node := range c.Nodes() {
		for _, levels := range c.nodes[node].Steps {
			for _, l := range levels {
				for _, name := range l {
					users[methodConfigMap(name, node)] = node
				}
			}
		}
	}
	var errs []error
	badCMs := map[string]bool{}
	for _, cm := range slices.Sorted(maps.Keys(c.methods)) {
		mine := c.methods[cm].validate(reg, users[cm])
		if len(mine) > 0 {
			badCMs[cm] = true
		}
		for _, e := range mine {
			// A template's error shows once, not once per method.
			if !slices.ContainsFunc(errs, func(x error) bool { return x.Error() == e.Error() }) {
				errs = append(errs, e)
			}
		}
	}
	return badCMs, errs
}

// ParseFor parses as ParsePartial does and validates the result
// against reg (DefaultRegistry when nil) as Validate does: the Config holds
// every node whose configuration has no error of either kind, and the
// error joins every error found. A controller uses it so that a typo in one
// method stops only the fencing of the node that uses it, at once and with
// the ConfigMap, line and key named, instead of when the node is to be
// fenced.
func ParseFor(cms []ConfigMap, reg *fence.Registry) (*Config, error) {
	cfg, perr := ParsePartial(cms)
	bad, verrs := cfg.validate(reg)
	if len(bad) > 0 {
		keep := map[string]*NodeConfig{}
	nodes:
		for name, nc := range cfg.nodes {
			for _, levels := range nc.Steps {
				for _, l := range levels {
					for _, m := range l {
						if bad[methodConfigMap(m, name)] {
							continue nodes
						}
					}
				}
			}
			keep[name] = nc
		}
		cfg = &Config{nodes: keep, methods: cfg.methods, secrets: cfg.secrets}
	}
	if perr == nil && len(verrs) == 0 {
		return cfg, nil
	}
	return cfg, errors.Join(append(unjoin(perr), verrs...)...)
}

// ValidateConfigMaps reports every problem of the fence configuration held
// in cms at once: the errors of Parse and those of Config.Validate
// against reg (DefaultRegistry when nil), joined, each a *Error. It
// returns nil when the configuration is good. fencectl's validate runs it.
func ValidateConfigMaps(cms []ConfigMap, reg *fence.Registry) error {
	_, err := ParseFor(cms, reg)
	return err
}

func (mc *methodConfig) validate(reg *fence.Registry, node string) []error {
	var errs []error
	fail := func(key string, err error) {
		o, ok := mc.origins[key]
		if !ok {
			o = origin{cm: mc.cm}
		}
		errs = append(errs, &Error{ConfigMap: o.cm, Key: key, Line: o.line, Node: node, Err: err})
	}
	d, params, ok := reg.Resolve(mc.driver, mc.params)
	if !ok {
		key := mc.driverKey
		if key == "" {
			key, _, _ = lookupAlias(mc.params, "address")
		}
		fail(key, fmt.Errorf("%w %q", fence.ErrUnknownDriver, mc.driver))
		return errs
	}
	addr, _, aerr := fence.AddressFromParams(mc.params)
	if aerr == nil && addr.Driver != "" {
		if ad, ok := reg.Lookup(addr.Driver); !ok || ad != d {
			k, _, _ := lookupAlias(mc.params, "address")
			if k == "" {
				k, _, _ = lookupAlias(mc.params, "ip")
			}
			fail(k, fmt.Errorf("address scheme %q does not name driver %q", addr.Scheme(), d.Name))
		}
	}
	keys := paramKeys(d)
	for _, k := range slices.Sorted(maps.Keys(mc.params)) {
		if err := checkKey(d, keys, k, mc.params[k]); err != nil {
			if errors.Is(err, errKeyNotShown) {
				// Named by its line only (see checkKey).
				o := mc.origins[k]
				errs = append(errs, &Error{ConfigMap: cmOr(o.cm, mc.cm), Line: o.line, Node: node, Err: err})
				continue
			}
			fail(k, err)
		}
	}
	missing := false
	for _, spec := range d.Params {
		if !spec.Required {
			continue
		}
		names := append([]string{spec.Name}, spec.Aliases...)
		set := false
		for _, n := range names {
			if v, ok := params.Get(n, n+SecretSuffix); ok && strings.TrimSpace(v) != "" {
				set = true
			}
		}
		if !set {
			missing = true
			errs = append(errs, &Error{ConfigMap: mc.cm, Key: fence.CanonicalKey(spec.Name), Node: node, Err: fmt.Errorf("driver %s requires this parameter", d.Name)})
		}
	}
	if d.Check != nil && !missing && aerr == nil && len(errs) == 0 {
		// Secret references stand for values the check cannot see: a
		// placeholder takes their place.
		p := params.Clone()
		for k := range p {
			if base := secretRefBase(d, keys, k); base != "" {
				delete(p, k)
				p[base] = "placeholder"
			}
		}
		if a, _, err := fence.AddressFromParams(p); err == nil {
			if a.Driver == "" {
				a.Driver = d.Name
			}
			if err := d.Check(a, p); err != nil {
				key := ""
				var pe *fence.ParamError
				if errors.As(err, &pe) {
					key, _, _ = lookupAlias(mc.params, pe.Key)
					if key == "" {
						key = pe.Key
					}
				}
				fail(key, err)
			}
		}
	}
	return errs
}

// Fencer returns the configuration as a fence.Fencer for step (usually
// fence.StepPowerManagement): each call opens the node's levels of that step
// with reg (DefaultRegistry when nil), as Levels does, and closes them after.
func (c *Config) Fencer(reg *fence.Registry, step fence.Step, logger *slog.Logger) fence.Fencer {
	return fence.NewFencer(func(ctx context.Context, node string) ([]fence.Level, error) {
		return c.Levels(ctx, reg, node, step, logger)
	})
}

// OpenMethod opens one method of a node with reg (DefaultRegistry when
// nil), as Levels does for a whole step. The caller closes the method
// (Method.Close) when done.
func (c *Config) OpenMethod(ctx context.Context, reg *fence.Registry, node, method string, logger *slog.Logger) (*fence.Method, error) {
	if reg == nil {
		reg = fence.DefaultRegistry()
	}
	mc, err := c.lookup(node, method)
	if err != nil {
		return nil, err
	}
	return c.open(ctx, reg, node, method, mc, logger)
}

// open opens a method with its secret references resolved.
func (c *Config) open(ctx context.Context, reg *fence.Registry, node, method string, mc *methodConfig, logger *slog.Logger) (*fence.Method, error) {
	params := mc.params.Clone()
	if d, _, ok := reg.Resolve(mc.driver, params); ok {
		var err error
		if params, err = resolveSecrets(ctx, d, params, mc.origins, mc.cm, node, c.secrets); err != nil {
			return nil, err
		}
	}
	return reg.Open(ctx, "", &fence.MethodOptions{Node: node, Name: method, Driver: mc.driver, Params: params, Logger: logger})
}

// cmOr returns cm, or def when cm is empty.
func cmOr(cm, def string) string {
	if cm == "" {
		return def
	}
	return cm
}
