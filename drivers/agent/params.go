package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fencekit/fencekit/fence"
)

// agentDirs are searched, after PATH, for an agent given by name: where
// Debian, Red Hat and source installs put the fence agents, which are
// often not on a service's PATH.
var agentDirs = []string{"/usr/sbin", "/usr/bin", "/sbin", "/usr/local/sbin", "/usr/local/bin"}

// agentNameRE is what an agent given by name must look like.
var agentNameRE = regexp.MustCompile(`^fence_[A-Za-z0-9_.+-]+$`)

// LookPath resolves an agent: a name such as "fence_ipmilan", searched in
// PATH and then /usr/sbin, /usr/bin, /sbin, /usr/local/sbin and
// /usr/local/bin; or an absolute path to an executable file (any name).
// A relative path (with a slash) is refused, since its meaning would depend
// on the working directory, and so is a name that does not start with
// "fence_", so that a configuration cannot run an arbitrary program by
// name. Symbolic links are not resolved: some agents read the name they
// were run under (fence_ipmilanplus). Errors are *fence.ParamError values
// for the key "agent".
func LookPath(agent string) (string, error) {
	a := strings.TrimSpace(agent)
	bad := func(reason string) (string, error) {
		return "", &fence.ParamError{Key: "agent", Value: agent, Reason: reason}
	}
	switch {
	case a == "":
		return bad("no agent named: give a name such as fence_ipmilan, or an absolute path")
	case strings.ContainsRune(a, '/'):
		if !filepath.IsAbs(a) {
			return bad("a relative path is refused: give a name such as fence_ipmilan, or an absolute path")
		}
		a = filepath.Clean(a)
		if err := executable(a); err != nil {
			return bad(err.Error())
		}
		return a, nil
	case !agentNameRE.MatchString(a):
		return bad("an agent given by name is called fence_something")
	}
	if p, err := exec.LookPath(a); err == nil && filepath.IsAbs(p) {
		return p, nil
	}
	for _, dir := range agentDirs {
		p := filepath.Join(dir, a)
		if executable(p) == nil {
			return p, nil
		}
	}
	return bad(fmt.Sprintf("not found in PATH nor in %s (Debian and Red Hat package fence-agents)", strings.Join(agentDirs, ", ")))
}

// executable checks that path is an executable regular file.
func executable(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return errors.New("no such file")
		}
		return err
	}
	if !st.Mode().IsRegular() {
		return errors.New("not a regular file")
	}
	if st.Mode().Perm()&0o111 == 0 {
		return errors.New("not executable")
	}
	return nil
}

// IsSecret reports whether an agent parameter holds a credential whose
// value must never be printed: fence.IsSecret's (passwords, communities,
// SNMP privacy passphrases, tokens, keys) and the agents' API keys, access
// keys and IPMI Kg keys.
func IsSecret(key string) bool {
	k := fence.CanonicalKey(key)
	if fence.IsSecret(k) {
		return true
	}
	switch k {
	case "apikey", "api_key", "access_key", "hexadecimal_kg", "kg":
		return true
	}
	return false
}

// fencekitKeys are read by fencekit itself (fence.Registry.Open, the
// configuration, this driver) and never passed to an agent.
var fencekitKeys = map[string]bool{
	"driver": true, "agent_name": true, "agent": true, "agent_timeout": true, "agent_check_plugs": true,
	"address": true, "io_timeout": true, "retry_off": true, "soft": true,
	"must_succeed": true, "must_sucess": true, "template": true, "nodename": true,
}

// controlledKeys are set by this package on every run, whatever the
// parameters say, or left out on purpose (see doc.go):
//
//   - action, plug and port, method: per call;
//   - delay, power_wait, retry_on, power_timeout, stonith_status_sleep: the
//     engine (fence.Do) owns the delay, the waits, the retries and the
//     verification; each run is one attempt;
//   - quiet (hides the messages the errors are made of), verbose,
//     verbose_level, debug, debug_file (print the agent's exchanges with
//     the device, credentials included), help, version (exit 0 without
//     acting), disable_timeout (lifts the agent's own time limits),
//     separator, plug_separator (the defaults are what this package parses
//     and refuses in a plug).
var controlledKeys = map[string]bool{
	"action": true, "plug": true, "port": true, "method": true,
	"delay": true, "power_wait": true, "retry_on": true, "power_timeout": true, "stonith_status_sleep": true,
	"quiet": true, "verbose": true, "verbose_level": true, "debug": true, "debug_file": true,
	"help": true, "version": true, "disable_timeout": true, "separator": true, "plug_separator": true,
}

// plugSeparator is the agents' default plug_separator: a plug holding it
// would name several plugs.
const plugSeparator = ","

// stdinLine is one "name=value" line of an agent's standard input.
type stdinLine struct{ name, value string }

// config is what New derives from the parameters and the metadata.
type config struct {
	lines        []stdinLine       // the method's parameters, validated, in the agent's spelling
	secrets      []string          // secret values, longest first, for scrubbing
	host         string            // for errors
	plugName     string            // the agent's plug parameter ("plug", "port"), or ""
	plugRequired bool              // the agent needs a plug for on, off, status
	portAsIP     bool              // port_as_ip is set: the plug is the device's address
	powerTimeout int               // seconds (the agents' power_timeout is a count of status reads)
	statusSleep  int               // seconds between the agent's own status reads, at least 1
	has          map[string]string // controlled key → the agent's spelling, for those it has
	outputLimit  int               // bytes kept of each output stream
}

// buildConfig validates p against the agent's metadata and maps it to the
// agent's standard input. Every error is a *fence.ParamError naming the
// key (and, unless secret, the value).
func buildConfig(m *Meta, p fence.Params, addr fence.Address) (*config, error) {
	c := &config{powerTimeout: int(fence.DefaultPowerTimeout / time.Second), statusSleep: 1, has: map[string]string{}}
	p = p.Clone()
	if p == nil {
		p = fence.Params{}
	}
	// An address (agent://host:port, or the address parameter) stands for
	// ip and ipport.
	if addr.Host != "" {
		if addr.Path != "" || len(addr.Query) > 0 {
			return nil, &fence.ParamError{Key: "address", Value: addr.String(), Reason: "the agent driver takes a host and a port; give the agent's own parameters for the rest"}
		}
		if _, ok := p.Get("ip", "ipaddr"); !ok {
			p["ip"] = addr.Host
			if _, ok := p.Get("ipport"); !ok && addr.Port != 0 {
				p["ipport"] = strconv.Itoa(addr.Port)
			}
		}
	}
	for _, k := range []string{"power_timeout", "stonith_status_sleep"} {
		d, ok, err := p.Seconds(k)
		if err != nil {
			return nil, err
		}
		if !ok {
			if mp, has := m.Param(k); has && mp.Default != "" {
				if d, err = fence.ParseSeconds(mp.Default); err != nil {
					continue
				}
			} else {
				continue
			}
		}
		n := int(math.Ceil(d.Seconds()))
		if k == "power_timeout" {
			c.powerTimeout = max(n, 1)
		} else {
			c.statusSleep = max(n, 1)
		}
	}
	for k := range controlledKeys {
		if mp, ok := m.Param(k); ok {
			c.has[k] = mp.Name
		}
	}
	if mp, ok := m.Param("plug"); ok {
		c.plugName = mp.Name
		c.plugRequired = mp.Required
	} else if mp, ok := m.Param("port"); ok {
		c.plugName = mp.Name
		c.plugRequired = mp.Required
	}

	given := map[string]string{} // the option's identity → the key that set it
	for _, k := range slices.Sorted(maps.Keys(p)) {
		v := p[k]
		if IsSecret(k) && v != "" {
			c.secrets = append(c.secrets, v)
			if t := strings.TrimSpace(v); t != v && t != "" {
				c.secrets = append(c.secrets, t)
			}
		}
		if fencekitKeys[k] || controlledKeys[k] {
			continue
		}
		if k == "missing_as_off" {
			// A plug the device does not have would read off, and an off
			// that is no off would count as fenced.
			if b, err := fence.ParseBool(v); err != nil || b {
				return nil, &fence.ParamError{Key: k, Value: v, Reason: "a missing plug must fail, never read off: refused"}
			}
			continue
		}
		mp, ok := m.Param(k)
		if !ok {
			return nil, &fence.ParamError{Key: k, Value: v, Reason: fmt.Sprintf("%s has no such parameter", m.Name)}
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, &fence.ParamError{Key: k, Value: v, Reason: "a line break or NUL cannot be passed to an agent"}
		}
		id := m.identity(mp)
		if prev, dup := given[id]; dup {
			if p[prev] != v {
				return nil, &fence.ParamError{Key: k, Value: v, Reason: fmt.Sprintf("set twice, differently, as %s and %s", prev, k)}
			}
			continue
		}
		given[id] = k
		val, keep, err := agentValue(mp, k, v)
		if err != nil {
			return nil, err
		}
		if id == "port_as_ip" {
			c.portAsIP = keep && val == "1"
		}
		if keep {
			name := mp.Name
			if cur, ok := m.Param(id); ok {
				name = cur.Name // the current spelling, not the deprecated one
			}
			c.lines = append(c.lines, stdinLine{name, val})
		}
	}
	for _, mp := range m.Params {
		if !mp.Required || mp.Deprecated {
			continue
		}
		id := m.identity(mp)
		if id == "action" || id == "plug" || id == "port" || (id == "ip" || id == "ipaddr") && c.portAsIP {
			continue
		}
		if _, ok := given[id]; !ok {
			return nil, &fence.ParamError{Key: mp.Key, Reason: fmt.Sprintf("not set, and %s requires it", m.Name)}
		}
	}
	slices.SortFunc(c.secrets, func(a, b string) int { return len(b) - len(a) })
	if ip, ok := p.Get("ip", "ipaddr"); ok {
		c.host = printable(strings.TrimSpace(ip))
		if port, ok := p.Get("ipport"); ok && strings.TrimSpace(port) != "" {
			c.host += ":" + printable(strings.TrimSpace(port))
		}
	}
	return c, nil
}

// agentValue checks a value against the parameter's type and writes it as
// the agent reads it. keep is false for a boolean to leave out.
func agentValue(mp Param, k, v string) (val string, keep bool, err error) {
	bad := func(reason string) (string, bool, error) {
		return "", false, &fence.ParamError{Key: k, Value: v, Reason: reason}
	}
	switch mp.Type {
	case "integer":
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return bad("not an integer")
		}
		return strconv.Itoa(n), true, nil
	case "second":
		d, err := fence.ParseSeconds(v)
		if err != nil {
			return bad(err.Error())
		}
		// The agents take whole seconds only; round up.
		return strconv.Itoa(int(math.Ceil(d.Seconds()))), true, nil
	case "boolean":
		b, err := fence.ParseBool(v)
		if err != nil {
			return bad(err.Error())
		}
		if b {
			return "1", true, nil
		}
		// The agents take a boolean that is present as set, even "0"
		// (ssl_insecure=0 would still skip the certificate check): leave
		// a false one out, unless the agent's default is on, which only
		// "0" may turn off (fence_ipmilanplus's lanplus).
		if def, err := fence.ParseBool(mp.Default); err == nil && def && mp.Default != "" {
			return "0", true, nil
		}
		return "", false, nil
	case "select":
		if len(mp.Choices) > 0 {
			for _, ch := range mp.Choices {
				if strings.EqualFold(strings.TrimSpace(v), ch) {
					return ch, true, nil
				}
			}
			return bad("not one of " + strings.Join(mp.Choices, ", "))
		}
	}
	return v, true, nil
}

// stdin writes the agent's standard input: one name=value line per
// option. A value with white space at either end, or wrapped in double
// quotes, is wrapped in double quotes, which the agents strip (one pair).
func stdin(lines []stdinLine) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.name)
		b.WriteByte('=')
		v := l.value
		if v != strings.TrimSpace(v) || len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = `"` + v + `"`
		}
		b.WriteString(v)
		b.WriteByte('\n')
	}
	return b.String()
}
