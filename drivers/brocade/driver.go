package brocade

import (
	"context"
	"strconv"
	"strings"

	"github.com/fencekit/fencekit/fence"
)

// Driver is the driver this package registers in fence's default registry
// under the name "brocade", standing in for the agent fence_brocade (with
// --ssh; telnet is not offered).
//
// Its address is brocade+ssh://HOST[:PORT] (or brocade://...), or the
// parameters ip and ipport (default 22). Beyond fence.CommonParams it
// takes:
//
//   - username (required) and password, or identity_file (a private key;
//     an encrypted key's passphrase is the password, as with the agents);
//   - known_hosts: OpenSSH known_hosts files holding the switch's host key,
//     separated by commas (default ~/.ssh/known_hosts and
//     /etc/ssh/ssh_known_hosts, those that exist);
//   - host_key_fingerprint: the host key's fingerprint, SHA256:... as
//     ssh-keygen -l prints it, instead of or besides known_hosts;
//   - ssh_insecure: skip the host key check (never the default: without
//     known_hosts files or a fingerprint, opening fails);
//   - login_timeout (seconds, default 5): connecting, logging in and the
//     first prompt;
//   - command_timeout (seconds, default 10): one command's reply;
//   - command_prompt (alias cmd_prompt): a regular expression the prompt
//     line matches (the agents' --command-prompt, such as "> ");
//   - command_mode: shell (default) or exec (see Mode);
//   - ssh (alias secure): accepted as the agent has it (SSH is always
//     used); ssh=no is refused;
//   - ssh_options: the agent's --ssh-options, of which this driver reads
//     -o UserKnownHostsFile= and GlobalKnownHostsFile= (as known_hosts; a
//     file /dev/null or none holds no key), StrictHostKeyChecking= (no or
//     off skips the host key check, as ssh_insecure, and then no
//     known_hosts file but /dev/null may be given; yes, ask and
//     accept-new check against the known_hosts files, which are never
//     written), ConnectTimeout= (as login_timeout), Port=, IdentityFile=,
//     -i and -p, and ignores -o PubkeyAuthentication=,
//     PasswordAuthentication=, BatchMode=, LogLevel=, ServerAliveInterval=,
//     ServerAliveCountMax=, ConnectionAttempts=, -4, -6, -q, -t and -T;
//     anything else is refused.
//
// See Device for plugs and commands.
var Driver = fence.Driver{
	Name:        "brocade",
	Description: "Brocade FC switch over SSH: fabric fencing by persistently disabling the node's switch port (fence_brocade compatible)",
	Agents:      []string{"fence_brocade"},
	// fence_brocade does fabric fencing: off by default, no reboot.
	DefaultAction: fence.ActionOff,
	Params: []fence.ParamSpec{
		{Name: "ip", Aliases: []string{"ipaddr"}, Description: "IP address or hostname of fencing device", Type: "string", Required: true},
		{Name: "ipport", Description: "TCP/UDP port to use for connection with device", Type: "integer", Default: "22"},
		{Name: "plug", Aliases: []string{"port"}, Description: "Switch port that connects the node: its index, or slot/port on a director", Type: "string", Required: true},
		{Name: "username", Aliases: []string{"login"}, Description: "Login name", Type: "string", Required: true},
		{Name: "password", Aliases: []string{"passwd"}, Description: "Login password or passphrase (of identity_file when it is encrypted)", Type: "string", Secret: true},
		{Name: "identity_file", Description: "Identity file (private key) for SSH", Type: "string"},
		{Name: "known_hosts", Description: "known_hosts file(s) holding the switch's SSH host key, comma-separated (default: ~/.ssh/known_hosts and /etc/ssh/ssh_known_hosts)", Type: "string"},
		{Name: "host_key_fingerprint", Description: "Expected SSH host key fingerprint, SHA256:... as ssh-keygen -l prints it (comma-separated for several)", Type: "string"},
		{Name: "ssh_insecure", Description: "Do not verify the switch's SSH host key (insecure: anyone on the path can pose as the switch)", Type: "boolean", Default: "no"},
		{Name: "login_timeout", Description: "Wait X seconds for cmd prompt after login", Type: "second", Default: "5"},
		{Name: "command_timeout", Description: "Wait X seconds for the reply to one command (its output and the prompt after it)", Type: "second", Default: "10"},
		{Name: "command_prompt", Aliases: []string{"cmd_prompt"}, Description: "Regular expression the switch's prompt line matches (default: NAME:...:USER>)", Type: "string"},
		{Name: "command_mode", Description: "shell (one interactive CLI session per connection, as fence_brocade) or exec (one SSH exec request per command)", Type: "string", Default: "shell"},
		{Name: "ssh", Aliases: []string{"secure"}, Description: "Use SSH connection (always: telnet is not supported)", Type: "boolean", Default: "yes"},
		{Name: "ssh_options", Description: "SSH options to use, as ssh takes them; supported: -o UserKnownHostsFile=, GlobalKnownHostsFile=, StrictHostKeyChecking=, ConnectTimeout=, Port=, IdentityFile=, -i, -p", Type: "string"},
	},
	Ignored: fence.IgnoredParams("fence_brocade",
		fence.ParamSpec{Name: "inet4_only", Type: "boolean"},
		fence.ParamSpec{Name: "inet6_only", Type: "boolean"},
		fence.ParamSpec{Name: "plug_separator", Type: "string", Default: ","},
		fence.ParamSpec{Name: "ssh_path", Type: "string", Default: "/usr/bin/ssh"},
		fence.ParamSpec{Name: "telnet_path", Type: "string", Default: "/usr/bin/telnet"},
	),
	Check: fence.CheckParams(OptionsFromParams),
	Open:  open,
}

func init() { fence.Register(Driver) }

func open(_ context.Context, oo fence.OpenOptions) (fence.Device, error) {
	o, err := OptionsFromParams(oo.Address, oo.Params)
	if err != nil {
		return nil, err
	}
	o.Logger = oo.Logger
	return New(o)
}

// OptionsFromParams reads Options from a method's address and parameters
// (see Driver). Errors are *fence.ParamError values; they name the
// parameter at fault and never quote a secret.
func OptionsFromParams(a fence.Address, p fence.Params) (Options, error) {
	var o Options
	bad := func(key, val, reason string) (Options, error) {
		return o, &fence.ParamError{Key: key, Value: val, Reason: reason}
	}
	if a.Driver != "" && a.Driver != "brocade" {
		return bad("address", a.Scheme()+"://...", "not a brocade address")
	}
	switch a.Transport {
	case "", "ssh":
	default:
		return bad("address", a.Scheme()+"://...", "the transport is ssh (telnet is not supported)")
	}
	if len(a.Query) > 0 || (a.Path != "" && a.Path != "/") {
		return bad("address", a.Scheme()+"://...", "a brocade address is brocade+ssh://host[:port], with no path or query")
	}
	o.Host, o.Port = a.Host, a.Port
	o.Username, _ = p.Get("username", "login")
	o.Password = p.Secret("password", "passwd")
	if v, ok := p.Get("identity_file"); ok {
		o.IdentityFile = strings.TrimSpace(v)
	}
	if v, ok := p.Get("known_hosts"); ok {
		o.KnownHostsFiles = splitList(v)
	}
	if v, ok := p.Get("host_key_fingerprint"); ok {
		o.HostKeyFingerprints = splitList(v)
	}
	insecure, _, err := p.Bool("ssh_insecure")
	if err != nil {
		return o, err
	}
	o.InsecureIgnoreHostKey = insecure
	if d, ok, err := p.Seconds("login_timeout"); err != nil {
		return o, err
	} else if ok {
		if d <= 0 {
			return bad("login_timeout", p["login_timeout"], "not a positive number of seconds")
		}
		o.LoginTimeout = d
	}
	if d, ok, err := p.Seconds("command_timeout"); err != nil {
		return o, err
	} else if ok {
		if d <= 0 {
			return bad("command_timeout", p["command_timeout"], "not a positive number of seconds")
		}
		o.CommandTimeout = d
	}
	if v, ok := p.Get("command_prompt", "cmd_prompt"); ok {
		o.Prompt = v
	}
	if v, ok := p.Get("command_mode"); ok {
		m, err := ParseMode(v)
		if err != nil {
			return bad("command_mode", v, "want shell or exec")
		}
		o.Mode = m
	}
	for _, k := range []string{"ssh", "secure"} {
		if b, ok, err := p.Bool(k); err != nil {
			return o, err
		} else if ok && !b {
			return bad(k, p[k], "this driver speaks SSH only (telnet is not supported)")
		}
	}
	if b, ok, err := p.Bool("telnet"); err == nil && ok && b {
		return bad("telnet", p["telnet"], "telnet is not supported: the switch is reached over SSH")
	}
	if v, ok := p.Get("ssh_options"); ok && strings.TrimSpace(v) != "" {
		if err := applySSHOptions(&o, v); err != nil {
			return o, err
		}
	}
	return o, nil
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// applySSHOptions reads the agent's --ssh-options (see Driver).
func applySSHOptions(o *Options, v string) error {
	bad := func(reason string) error {
		return &fence.ParamError{Key: "ssh_options", Value: v, Reason: reason}
	}
	words, err := shellWords(v)
	if err != nil {
		return bad(err.Error())
	}
	var so sshOptions
	for i := 0; i < len(words); i++ {
		w := words[i]
		next := func() (string, error) {
			if len(w) > 2 {
				return w[2:], nil
			}
			if i+1 >= len(words) {
				return "", bad(w + " needs a value")
			}
			i++
			return words[i], nil
		}
		switch {
		case w == "-4" || w == "-6" || w == "-q" || w == "-t" || w == "-T" || w == "-tt":
		case strings.HasPrefix(w, "-i"):
			f, err := next()
			if err != nil {
				return err
			}
			o.IdentityFile = f
		case strings.HasPrefix(w, "-p"):
			s, err := next()
			if err != nil {
				return err
			}
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 || n > 65535 {
				return bad("-p " + s + ": not a port")
			}
			o.Port = n
		case strings.HasPrefix(w, "-o"):
			kv, err := next()
			if err != nil {
				return err
			}
			if err := so.apply(o, kv); err != nil {
				return bad(err.Error())
			}
		default:
			return bad("option " + w + " is not supported (supported: -o KEY=VALUE, -i, -p, -4, -6, -q, -t, -T)")
		}
	}
	o.KnownHostsFiles = append(o.KnownHostsFiles, so.knownHosts...)
	if so.noStrict {
		// ssh would take any key of a host it does not know; with no
		// known_hosts of its own (or /dev/null), any key at all.
		o.InsecureIgnoreHostKey = true
		o.KnownHostsFiles = nil
		for _, f := range so.knownHosts {
			if f != "/dev/null" {
				return bad("StrictHostKeyChecking=no with a known_hosts file: verify the host key, or skip the check, not both")
			}
		}
	}
	return nil
}

// sshOptions is what "-o" options said.
type sshOptions struct {
	knownHosts []string
	noStrict   bool
}

// apply reads one "-o Key=Value" (or "Key Value").
func (so *sshOptions) apply(o *Options, kv string) error {
	k, val, ok := strings.Cut(kv, "=")
	if !ok {
		k, val, ok = strings.Cut(strings.TrimSpace(kv), " ")
	}
	if !ok {
		return &optionError{"-o " + kv + ": want Key=Value"}
	}
	k, val = strings.TrimSpace(k), strings.TrimSpace(val)
	switch strings.ToLower(k) {
	case "userknownhostsfile", "globalknownhostsfile":
		for _, f := range strings.Fields(val) {
			if strings.EqualFold(f, "none") {
				f = "/dev/null"
			}
			so.knownHosts = append(so.knownHosts, f)
		}
	case "stricthostkeychecking":
		switch strings.ToLower(val) {
		case "no", "off":
			so.noStrict = true
		case "yes", "ask", "accept-new":
			// Verified against the known_hosts files; never written.
		default:
			return &optionError{"-o " + kv + ": want yes or no"}
		}
	case "connecttimeout":
		d, err := fence.ParseSeconds(val)
		if err != nil || d <= 0 {
			return &optionError{"-o " + kv + ": not a number of seconds"}
		}
		o.LoginTimeout = d
	case "port":
		n, err := strconv.Atoi(val)
		if err != nil || n < 1 || n > 65535 {
			return &optionError{"-o " + kv + ": not a port"}
		}
		o.Port = n
	case "identityfile":
		o.IdentityFile = val
	case "pubkeyauthentication", "batchmode", "loglevel", "passwordauthentication", "serveraliveinterval", "serveralivecountmax", "connectionattempts":
	default:
		return &optionError{"-o " + k + " is not supported (supported: UserKnownHostsFile, GlobalKnownHostsFile, StrictHostKeyChecking, ConnectTimeout, Port, IdentityFile)"}
	}
	return nil
}

type optionError struct{ msg string }

// Error returns the message.
func (e *optionError) Error() string { return e.msg }

// shellWords splits v into words as a POSIX shell would, with single and
// double quotes and backslashes; no expansions.
func shellWords(v string) ([]string, error) {
	var out []string
	var cur strings.Builder
	in := false
	var quote byte
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case quote == '"':
			switch {
			case c == '"':
				quote = 0
			case c == '\\' && i+1 < len(v) && strings.IndexByte(`"\$`+"`", v[i+1]) >= 0:
				i++
				cur.WriteByte(v[i])
			default:
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == '\\' && i+1 < len(v):
			i++
			cur.WriteByte(v[i])
			in = true
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if quote != 0 {
		return nil, &optionError{"unbalanced quote"}
	}
	if in {
		out = append(out, cur.String())
	}
	return out, nil
}
