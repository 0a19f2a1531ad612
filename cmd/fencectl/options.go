package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/nearest"
)

// optKind says where an option's value goes.
type optKind uint8

const (
	// kindParam options are method parameters: they are handed to the
	// driver as fence.Params.
	kindParam optKind = iota
	// kindCLI options are handled by fencectl itself (action, verbose, ...).
	kindCLI
	// kindIgnored options are an agent's that mean nothing natively: they
	// are accepted, and ignored with a debug line (see agentProfile).
	kindIgnored
)

// option is one option of the command line and one key of standard input.
type option struct {
	Key      string   // canonical key (lower case, '_'), as in fence.Params and on stdin
	Aliases  []string // other canonical keys: the agents' internal names (ipaddr, login, passwd, port)
	Short    byte     // short option letter, 0 if none
	Flag     bool     // takes no value (a boolean)
	Count    bool     // may be stacked (-vvv)
	Type     string   // string, integer, second, boolean or select
	Choices  []string // for select
	Metavar  string   // shown in --help and metadata: "[ip]"
	Desc     string
	Default  string
	Required bool
	Secret   bool
	Kind     optKind
	Driver   string // the driver that declares it; "" for common options
	// Varies is set when a driver re-declares a common option with a
	// default of its own (redfish's ipport 443): without a driver, the
	// option has no one default.
	Varies bool
}

// long returns the option's primary long name, "--" excluded.
func (o *option) long() string { return strings.ReplaceAll(o.Key, "_", "-") }

// longNames returns every long name of the option, "--" excluded.
func (o *option) longNames() []string {
	out := []string{o.long()}
	for _, a := range o.Aliases {
		out = append(out, strings.ReplaceAll(a, "_", "-"))
	}
	return out
}

// getopt returns the option as the agents' help and metadata show it:
// "-a, --ip=[ip]", "--power-timeout=[seconds]", "-q, --quiet".
func (o *option) getopt() string {
	s := "--" + o.long()
	if !o.Flag {
		s += "=" + o.Metavar
	}
	if o.Short != 0 {
		s = "-" + string(o.Short) + ", " + s
	}
	return s
}

// The agents' short options (fencing.py all_opt), for the options fencectl has.
var shortOf = map[string]byte{
	"ip": 'a', "ipport": 'u', "username": 'l', "password": 'p', "plug": 'n',
	"action": 'o', "method": 'm', "verbose": 'v', "quiet": 'q', "help": 'h',
	"version": 'V', "separator": 'C', "password_script": 'S', "debug_file": 'D',
}

// The agents' placeholders in --help.
var metavarOf = map[string]string{
	"ip": "[ip]", "ipport": "[port]", "username": "[name]", "password": "[password]",
	"plug": "[id]", "action": "[action]", "method": "[method]", "address": "[url]",
	"retry_on": "[attempts]", "retry_off": "[attempts]", "driver": "[name]",
	"separator": "[char]", "debug_file": "[debugfile]", "password_script": "[script]",
	"disable_timeout": "[true/false]", "verbose_level": "[level]",
}

func metavarFor(key, typ string) string {
	if m, ok := metavarOf[key]; ok {
		return m
	}
	if strings.HasSuffix(key, "_file") {
		return "[file]"
	}
	switch typ {
	case "second":
		return "[seconds]"
	case "integer":
		return "[number]"
	}
	return "[value]"
}

// The actions fencectl knows, as --help and metadata list them.
var actions = []string{"on", "off", "reboot", "status", "list", "list-status", "monitor", "metadata", "manpage", "validate-all"}

// cliOptions are fencectl's own options, beyond fence.CommonParams and the
// drivers' parameters.
var cliOptions = []option{
	{Key: "driver", Type: "string", Desc: "Driver: a driver name (fake, ...) or the name of an agent it stands in for (fence_dummy); default: the program's name when it is an agent's, else the scheme of --address"},
	{Key: "separator", Type: "string", Default: ",", Desc: "Separator for CSV created by 'list' operation"},
	{Key: "password_script", Aliases: []string{"passwd_script"}, Type: "string", Secret: true, Desc: "Script to run to retrieve password"},
	{Key: "snmp_priv_passwd_script", Type: "string", Secret: true, Desc: "Script to run to retrieve the SNMPv3 privacy password"},
	{Key: "disable_timeout", Type: "string", Desc: "Disable timeout (true/false): wait for the state without a power timeout (default: true when run from Pacemaker 2.0+)"},
	{Key: "quiet", Flag: true, Type: "boolean", Desc: "Disable logging to stderr"},
	{Key: "verbose", Flag: true, Count: true, Type: "boolean", Desc: "Verbose mode: debug records on stderr"},
	{Key: "verbose_level", Type: "integer", Desc: "Level of debugging detail in output; > 0 is verbose"},
	{Key: "debug_file", Aliases: []string{"debug"}, Type: "string", Desc: "Debugging to output file"},
	{Key: "version", Flag: true, Type: "boolean", Desc: "Display version information and exit"},
	{Key: "help", Flag: true, Type: "boolean", Desc: "Display this help and exit"},
}

// fromSpec turns a fence.ParamSpec into an option.
func fromSpec(s fence.ParamSpec, driver string) option {
	key := fence.CanonicalKey(s.Name)
	o := option{
		Key: key, Short: shortOf[key], Type: s.Type, Desc: s.Description,
		Default: s.Default, Required: s.Required, Secret: s.Secret || fence.IsSecret(key),
		Driver: driver,
	}
	if o.Type == "" {
		o.Type = "string"
	}
	for _, a := range s.Aliases {
		o.Aliases = append(o.Aliases, fence.CanonicalKey(a))
	}
	if o.Type == "boolean" {
		o.Flag = true
	}
	if key == "method" {
		o.Type, o.Choices = "select", []string{"onoff", "cycle"}
	}
	if key == "action" {
		o.Kind = kindCLI
		o.Required = true
		o.Desc = "Action: on, off, reboot (default), status, list, list-status, monitor, metadata, manpage or validate-all"
	}
	o.Metavar = metavarFor(key, o.Type)
	return o
}

// table is the set of options of one run: the common parameters, the
// chosen driver's parameters (or every driver's, when none is chosen yet),
// and fencectl's own.
type table struct {
	opts    []*option
	byLong  map[string]*option // long names, dashes
	byKey   map[string]*option // canonical keys and aliases, underscores
	byShort map[byte]*option
}

// keys returns the table's keys and aliases, sorted.
func (t *table) keys() []string {
	return slices.Sorted(maps.Keys(t.byKey))
}

// newTable builds the table for drivers (the chosen one, or all of them).
func newTable(drivers []*fence.Driver) *table {
	t := &table{byLong: map[string]*option{}, byKey: map[string]*option{}, byShort: map[byte]*option{}}
	add := func(o option) {
		if prev, ok := t.byKey[o.Key]; ok {
			// A driver re-declares a parameter: its description, default,
			// requirement and aliases win; the name stays.
			if o.Desc != "" {
				prev.Desc = o.Desc
			}
			if o.Default != "" {
				prev.Varies = prev.Varies || prev.Default != o.Default
				prev.Default = o.Default
			}
			prev.Required = prev.Required || o.Required
			prev.Secret = prev.Secret || o.Secret
			for _, a := range o.Aliases {
				if _, taken := t.byKey[a]; !taken {
					prev.Aliases = append(prev.Aliases, a)
					t.index(prev)
				}
			}
			return
		}
		p := &o
		t.opts = append(t.opts, p)
		t.index(p)
	}
	for _, s := range fence.CommonParams {
		add(fromSpec(s, ""))
		if s.Name == "action" {
			for _, c := range cliOptions[:1] { // driver right after action
				add(withDefaults(c))
			}
		}
	}
	for _, d := range drivers {
		for _, s := range d.Params {
			add(fromSpec(s, d.Name))
		}
		for _, o := range engineDefaults(d) {
			add(o)
		}
	}
	for _, c := range cliOptions[1:] {
		add(withDefaults(c))
	}
	return t
}

// engineDefaults returns the common options whose default the driver
// changes (fence.Driver's IOTimeout, PowerTimeout and RebootMethod), as
// re-declarations with the driver's default: the help and metadata then
// show the default the run uses.
func engineDefaults(d *fence.Driver) []option {
	var out []option
	secs := func(key string, v time.Duration) {
		if v > 0 {
			out = append(out, option{Key: key, Default: strconv.FormatFloat(v.Seconds(), 'f', -1, 64)})
		}
	}
	secs("io_timeout", d.IOTimeout)
	secs("power_timeout", d.PowerTimeout)
	if d.RebootMethod != fence.RebootOnOff {
		out = append(out, option{Key: "method", Default: d.RebootMethod.String()})
	}
	return out
}

func withDefaults(c option) option {
	c.Kind = kindCLI
	c.Short = shortOf[c.Key]
	if c.Metavar == "" && !c.Flag {
		c.Metavar = metavarFor(c.Key, c.Type)
	}
	return c
}

func (t *table) index(o *option) {
	for _, k := range append([]string{o.Key}, o.Aliases...) {
		if _, ok := t.byKey[k]; !ok {
			t.byKey[k] = o
		}
	}
	for _, l := range o.longNames() {
		if _, ok := t.byLong[l]; !ok {
			t.byLong[l] = o
		}
	}
	if o.Short != 0 {
		if _, ok := t.byShort[o.Short]; !ok {
			t.byShort[o.Short] = o
		}
	}
}

// usageError is a command-line or stdin error the agents report with
// fail_usage: the message, then "Please use '-h' for usage".
type usageError struct{ msgs []string }

func (e *usageError) Error() string { return strings.Join(e.msgs, "; ") }

func usagef(format string, a ...any) *usageError {
	return &usageError{msgs: []string{fmt.Sprintf(format, a...)}}
}

// input is what the command line or standard input said.
type input struct {
	values   map[string]string // option key -> value; the last occurrence wins
	given    map[string]string // option key -> the name it was given under, for messages
	verbose  int               // count of -v
	unused   []string          // positional arguments
	warnings []string          // stdin warnings, logged once quiet is known
	repeated []string          // options given more than once, as given
	nodename string            // stdin nodename=, a label only
	stdin    bool
}

func newInput() *input {
	return &input{values: map[string]string{}, given: map[string]string{}}
}

func (in *input) set(o *option, name, v string) {
	if _, again := in.given[o.Key]; again && !o.Count {
		in.repeated = append(in.repeated, name)
	}
	in.values[o.Key] = v
	in.given[o.Key] = name
	if o.Count && v != "0" {
		in.verbose++
	}
	if o.Key == "verbose" && v == "0" {
		in.verbose = 0
	}
}

// lookupLong finds a long option as getopt does: an exact name, or an
// unambiguous prefix of one.
func (t *table) lookupLong(name string) (*option, error) {
	if o, ok := t.byLong[name]; ok {
		return o, nil
	}
	var found *option
	for l, o := range t.byLong {
		if strings.HasPrefix(l, name) {
			if found != nil && found != o {
				return nil, usagef("Parse error: option --%s not a unique prefix", name)
			}
			found = o
		}
	}
	if found == nil || name == "" {
		return nil, usagef("Parse error: option --%s not recognized", name)
	}
	return found, nil
}

// parseArgs parses the command line (without the program name) as the
// agents' getopt.gnu_getopt does: --opt=value, --opt value, -ovalue,
// -o value, stacked flags (-vq), unambiguous long prefixes, "--" ending the
// options, and positional arguments anywhere (warned about, not used).
func (t *table) parseArgs(args []string) (*input, error) {
	in, err := t.parseArgsRaw(args)
	return in, t.scrub(in, err)
}

// scrub replaces, in a parse's error, warnings and stray arguments, every
// value given to a secret option: a password typed twice (as a value and,
// by mistake, as an option's name or a stray word) is not repeated.
func (t *table) scrub(in *input, err error) error {
	if in == nil {
		return err
	}
	var secrets []fence.Secret
	for k, v := range in.values {
		if o := t.byKey[k]; o != nil && o.Secret && len(v) >= minSecret {
			secrets = append(secrets, fence.NewSecret(v))
		}
	}
	if len(secrets) == 0 {
		return err
	}
	clean := func(m string) string { return fence.Scrub(m, secrets...) }
	for i := range in.warnings {
		in.warnings[i] = clean(in.warnings[i])
	}
	for i := range in.unused {
		in.unused[i] = clean(in.unused[i])
	}
	var ue *usageError
	if errors.As(err, &ue) {
		for i := range ue.msgs {
			ue.msgs[i] = clean(ue.msgs[i])
		}
	}
	return err
}

func (t *table) parseArgsRaw(args []string) (*input, error) {
	in := newInput()
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			in.unused = append(in.unused, args[i+1:]...)
			return in, nil
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			o, err := t.lookupLong(name)
			if err != nil {
				return in, err
			}
			long := "--" + name
			if l := o.longNames(); !slices.Contains(l, name) {
				long = "--" + o.long()
			}
			if o.Flag {
				if hasVal {
					b, err := fence.ParseBool(val)
					if err != nil || val == "" {
						return in, usagef("Parse error: option %s must not have an argument", long)
					}
					val = boolWord(b)
				} else {
					val = "1"
				}
			} else if !hasVal {
				if i+1 >= len(args) {
					return in, usagef("Parse error: option %s requires argument", long)
				}
				i++
				val = args[i]
			}
			in.set(o, long, val)
		case strings.HasPrefix(a, "-") && a != "-":
			for j := 1; j < len(a); j++ {
				c := a[j]
				o := t.byShort[c]
				if o == nil {
					return in, usagef("Parse error: option -%c not recognized", c)
				}
				name := "--" + o.long()
				if o.Flag {
					in.set(o, name, "1")
					continue
				}
				var val string
				if j+1 < len(a) {
					val = a[j+1:]
				} else if i+1 < len(args) {
					i++
					val = args[i]
				} else {
					return in, usagef("Parse error: option -%c requires argument", c)
				}
				in.set(o, name, val)
				break
			}
		default:
			in.unused = append(in.unused, a)
		}
	}
	return in, nil
}

func boolWord(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// quoted is the agents' regular expression for one pair of surrounding
// double quotes.
var quoted = regexp.MustCompile(`^"(.*)"$`)

// readLines reads standard input's lines.
func readLines(r io.Reader) ([]string, error) {
	var lines []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines, sc.Err()
}

// parseStdin parses key=value lines as the agents do (fencing.py
// _parse_input_stdin): lines are trimmed; blank lines and lines starting
// with '#' are skipped; the value is everything after the first '=', with
// one pair of surrounding double quotes removed; a key is an option's key or
// one of its aliases (ipaddr, login, passwd, port, ...), or its long name
// with '-' or '_'; keys are case-sensitive; nodename= is silently taken (as
// a label); any other key is warned about and ignored. Flags take
// 1/yes/on/true or 0/no/off/false. Values are never repeated in warnings.
// optionName is what an option's name on standard input looks like; a
// line whose part before '=' is anything else is not repeated in warnings.
var optionName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,63}$`)

func (t *table) parseStdin(lines []string) *input {
	in := newInput()
	in.stdin = true
	for n, line := range lines {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, hasEq := strings.Cut(line, "=")
		if !hasEq || !optionName.MatchString(name) {
			// Not name=value: the line may be a password written alone
			// (or "password: ..."), so it is never repeated.
			in.warnings = append(in.warnings, fmt.Sprintf("Parse error: Ignoring line %d of standard input: not name=value (the line is not shown: it may hold a secret)", n+1))
			continue
		}
		value = quoted.ReplaceAllString(value, "$1")
		o := t.byKey[strings.ReplaceAll(name, "-", "_")]
		if o == nil || name != strings.ToLower(name) {
			if name == "nodename" {
				in.nodename = value
				continue
			}
			// Repeated only when it is a typo of an option (ACTION,
			// pasword): a line that names no option may be a secret
			// with '=' in it.
			if near := nearest.Name(strings.ToLower(strings.ReplaceAll(name, "-", "_")), t.keys()); near != "" {
				in.warnings = append(in.warnings, fmt.Sprintf("Parse error: Ignoring unknown option '%s'", name))
			} else {
				in.warnings = append(in.warnings, fmt.Sprintf("Parse error: Ignoring an unknown option on line %d of standard input (not shown: it may hold a secret)", n+1))
			}
			continue
		}
		if o.Flag {
			switch strings.ToLower(value) {
			case "1", "yes", "on", "true":
				value = "1"
			case "0", "no", "off", "false":
				value = "0"
			default:
				in.warnings = append(in.warnings, fmt.Sprintf("Parse error: Ignoring option '%s' because it does not have value", name))
				continue
			}
		}
		in.set(o, "--"+o.long(), value)
	}
	return in
}
