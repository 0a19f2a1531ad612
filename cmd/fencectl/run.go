package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fencekit/fencekit/fence"
)

// The agents' messages (fencing.py fail() and fail_usage()).
const (
	msgLoginDenied  = "Unable to connect/login to fencing device"
	msgTimedOut     = "Connection timed out"
	msgWaitingOn    = "Failed: Timed out waiting to power ON"
	msgWaitingOff   = "Failed: Timed out waiting to power OFF"
	msgStatus       = "Failed: Unable to obtain correct plug status or plug is not available"
	msgRebootOnFail = "Timed out waiting to power ON"
	msgUsage        = "Please use '-h' for usage"
	msgNoList       = "NOTICE: List option is not working on this device yet"
)

// unbounded stands for the agents' power timeout 0 ("wait for ever"):
// long enough never to end before the caller (Pacemaker) gives up.
const unbounded = 10 * 365 * 24 * time.Hour

// cli is one run of the program.
type cli struct {
	prog    string // base name of argv[0]
	reg     *fence.Registry
	stdout  io.Writer
	stderr  io.Writer // redacting; io.Discard under --quiet
	debug   io.Writer // the debug file, redacting; nil if none
	closers []io.Closer
	getenv  func(string) string
	now     func() time.Time
	secrets *secretSet
	quiet   bool
}

// run is the program: args is the whole command line, program name first.
// It returns the exit status: 0 success, 2 for status when the plug is
// off, 1 for any failure, as the agents.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	prog := "fencectl"
	if len(args) > 0 && args[0] != "" {
		prog = filepath.Base(args[0])
		args = args[1:]
	}
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	secrets := &secretSet{}
	c := &cli{
		prog: prog, reg: fence.DefaultRegistry(), stdout: stdout,
		stderr: &redactWriter{w: stderr, s: secrets}, getenv: getenv, now: time.Now,
		secrets: secrets,
	}
	var code int
	if !strings.HasPrefix(prog, "fence_") && len(args) > 0 && args[0] == "validate" {
		code = c.validateConfig(args[1:], stdin)
	} else {
		code = c.main(ctx, args, stdin)
	}
	for _, cl := range c.closers {
		cl.Close()
	}
	return code
}

// StrictProgram is the program name under which fencectl runs in strict
// mode by default.
const StrictProgram = "fence_fencekit"

// strict reports whether the run is in strict mode: by default under the
// name fence_fencekit, else when FENCEKIT_STRICT=1; FENCEKIT_STRICT=0
// turns it off. In strict mode, what the agents let pass (a standard-input
// line that does not parse or names no option, an option given twice, a
// state file in a missing directory) is an error.
func (c *cli) strict() bool {
	switch c.getenv("FENCEKIT_STRICT") {
	case "1", "yes", "true", "on":
		return true
	case "0", "no", "false", "off":
		return false
	}
	return c.prog == StrictProgram
}

// logf writes one line in the agents' log format, "2006-01-02
// 15:04:05,000 LEVEL: message", to stderr (unless quiet) and the debug file.
func (c *cli) logf(level, format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	msg = strings.ReplaceAll(strings.TrimRight(msg, "\n"), "\n", "; ")
	line := c.now().Format("2006-01-02 15:04:05,000") + " " + level + ": " + msg + "\n"
	if !c.quiet {
		io.WriteString(c.stderr, line)
	}
	if c.debug != nil {
		io.WriteString(c.debug, line)
	}
}

// usage reports a usage error as fail_usage does, and returns 1.
func (c *cli) usage(msgs ...string) int {
	for _, m := range msgs {
		c.logf("ERROR", "%s", m)
	}
	c.logf("ERROR", "%s", msgUsage)
	return 1
}

func (c *cli) main(ctx context.Context, args []string, stdin io.Reader) int {
	// Read the input with every driver's options, to learn the driver;
	// then again with the chosen driver's, so that options of other drivers
	// are refused as the agents refuse options they do not have.
	var lines []string
	all := withIgnored(newTable(c.reg.Drivers()), c.reg.Drivers()...)
	var in *input
	var perr error
	if len(args) == 0 && stdin != nil {
		var err error
		if lines, err = readLines(stdin); err != nil {
			c.logf("ERROR", "Failed: Unable to read standard input: %v", err)
			return 1
		}
	}
	// The agent driver's agent: its own options are accepted too.
	wrapped := wrappedAgent(args, lines)
	all = withAgentOptions(ctx, all, wrapped)
	if len(args) == 0 {
		in = all.parseStdin(lines)
	} else {
		in, perr = all.parseArgs(args)
	}
	c.quiet = in.values["quiet"] != "" && in.values["quiet"] != "0"
	d, derr := c.pickDriver(in)
	tab := all
	if d != nil && perr == nil {
		tab = newTable([]*fence.Driver{d})
		if d.Name == "agent" {
			tab = withAgentOptions(ctx, tab, wrapped)
		}
		if _, ok := c.profile(d); ok {
			tab = withIgnored(tab, d)
		}
		if in.stdin {
			in = tab.parseStdin(lines)
		} else {
			in, perr = tab.parseArgs(args)
		}
	}
	if perr != nil {
		var ue *usageError
		errors.As(perr, &ue)
		return c.usage(ue.msgs...)
	}
	c.quiet = in.values["quiet"] != "" && in.values["quiet"] != "0"
	if c.quiet {
		c.stderr = io.Discard
	}
	if v, ok := in.values["verbose_level"]; ok {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
			in.verbose = n
		}
	}
	if f := in.values["debug_file"]; f != "" {
		fh, err := os.OpenFile(f, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return c.usage(fmt.Sprintf("Failed: Unable to create file %s", f))
		}
		c.closers = append(c.closers, fh)
		c.debug = &redactWriter{w: fh, s: c.secrets}
	}
	if c.strict() {
		// What the agents let pass with a warning, or silently, is an
		// error here: an action line that does not parse would leave the
		// default reboot to run, a repeated option hides which value is
		// meant, and a state file in a missing directory would read off.
		var errs []string
		for _, w := range in.warnings {
			errs = append(errs, "Failed: "+strings.Replace(w, "Ignoring ", "", 1)+" (strict mode)")
		}
		for _, r := range in.repeated {
			errs = append(errs, fmt.Sprintf("Failed: option %s given more than once (strict mode)", r))
		}
		for _, k := range []string{"state_file", "status_file"} {
			if f := in.values[k]; f != "" {
				if st, err := os.Stat(filepath.Dir(f)); err != nil || !st.IsDir() {
					errs = append(errs, fmt.Sprintf("Failed: the directory of %s does not exist (strict mode: a missing state file reads off)", in.given[k]))
				}
			}
		}
		if len(errs) > 0 {
			return c.usage(errs...)
		}
	}
	for _, w := range in.warnings {
		c.logf("WARNING", "%s", w)
	}
	if len(in.unused) > 0 {
		c.logf("WARNING", "Unused arguments on command line: %s", pyList(in.unused))
	}

	if isOn(in.values["help"]) {
		c.help(tab, d)
		return 0
	}
	if isOn(in.values["version"]) {
		fmt.Fprintln(c.stdout, version())
		return 0
	}
	action, ok := in.values["action"]
	if !ok {
		action = "reboot"
		if d != nil && d.DefaultAction != fence.ActionNone {
			action = d.DefaultAction.String()
		}
	}
	action = strings.ToLower(action)
	switch action {
	case "meta-data":
		action = "metadata"
	case "enable":
		action = "on"
	case "disable":
		action = "off"
	}
	if action == "metadata" || action == "manpage" {
		c.metadata(tab, d)
		return 0
	}
	known := actions
	if prof, ok := c.profile(d); ok {
		known = prof.actions
	}
	if !slices.Contains(known, action) {
		return c.usage(fmt.Sprintf("Failed: Unrecognised action '%s'", in.values["action"]))
	}
	if derr != "" {
		return c.usage(derr)
	}
	if d == nil {
		return c.usage("Failed: You have to choose a driver (--driver) or give an address URL (--address fake://name)")
	}

	// Validation, as the agents: the first problem stops a normal action;
	// validate-all reports them all.
	problems := c.validate(tab, in, action, action == "validate-all")
	if len(problems) > 0 {
		if action == "validate-all" {
			return c.usage(append(problems, "validate-all failed")...)
		}
		return c.usage(problems[0])
	}

	params, code := c.params(ctx, tab, in)
	if code != 0 {
		return code
	}

	logger := slog.New(slog.DiscardHandler)
	var lw io.Writer
	switch {
	case in.verbose > 0 && c.debug != nil:
		lw = io.MultiWriter(c.stderr, c.debug)
	case in.verbose > 0:
		lw = c.stderr
	case c.debug != nil:
		lw = c.debug
	}
	if lw != nil {
		logger = slog.New(slog.NewTextHandler(lw, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	prof, _ := c.profile(d)
	if prof.noPlug && d.Name != "fake" || d.Name == "fake" && hasStateFile(params) {
		// Pacemaker adds port=<node name> by default; the agent this driver
		// stands in for has one plug and ignores it. A Redfish service may
		// hold several systems, which a plug names: there only the node's
		// name, as Pacemaker passes it (nodename= too), is ignored.
		if v, ok := params.Get("plug", "port"); ok && (d.Name != "redfish" || v == in.nodename) {
			logger.Debug("plug ignored: the device has one plug", "agent", c.agentName(d), "plug", v)
			delete(params, "plug")
			delete(params, "port")
		}
	}
	for _, o := range tab.opts {
		if o.Kind == kindIgnored {
			if _, given := in.values[o.Key]; given {
				logger.Debug("option accepted for compatibility and ignored", "option", "--"+o.long(), "agent", c.agentName(d))
			}
		}
	}
	logger.Debug("fencectl", "driver", d.Name, "action", action, "params", redacted(tab, params))

	m, err := c.reg.Open(ctx, "", &fence.MethodOptions{Node: in.nodename, Name: c.prog, Driver: d.Name, Params: params, Logger: logger})
	if err != nil {
		return c.openFailed(err)
	}
	defer m.Close()
	c.tune(m, in, logger)
	if action == "validate-all" {
		return 0
	}
	return c.act(ctx, m, action, in)
}

// pickDriver chooses the driver: --driver (a name or an agent name), else
// the scheme of --address (or of an --ip given as a URL), else the
// program's name when a driver stands in for that agent. It returns a usage
// message when --driver names no driver.
func (c *cli) pickDriver(in *input) (*fence.Driver, string) {
	if v := strings.TrimSpace(in.values["driver"]); v != "" {
		if d, ok := c.reg.Lookup(v); ok {
			return d, ""
		}
		var names []string
		for _, d := range c.reg.Drivers() {
			names = append(names, d.Name)
		}
		return nil, fmt.Sprintf("Failed: Unknown driver '%s' (drivers: %s)", v, strings.Join(names, ", "))
	}
	for _, k := range []string{"address", "ip"} {
		if v := in.values[k]; v != "" {
			if a, err := fence.ParseAddress(v); err == nil && a.Driver != "" {
				if d, ok := c.reg.Lookup(a.Driver); ok {
					return d, ""
				}
				return nil, fmt.Sprintf("Failed: Unknown driver '%s' in the address", a.Driver)
			}
		}
	}
	if strings.HasPrefix(c.prog, "fence_") {
		if d, ok := c.reg.Lookup(c.prog); ok && slices.Contains(d.Agents, c.prog) {
			return d, ""
		}
	}
	return nil, ""
}

// validate checks the input as the agents' _validate_input does, in their
// order: login name, fence address, password, plug, then choices and types.
func (c *cli) validate(tab *table, in *input, action string, all bool) []string {
	var out []string
	has := func(keys ...string) bool {
		for _, k := range keys {
			if strings.TrimSpace(in.values[k]) != "" {
				return true
			}
		}
		return false
	}
	required := func(key string) bool {
		o := tab.byKey[key]
		return o != nil && o.Required
	}
	if required("username") && !has("username") {
		out = append(out, "Failed: You have to set login name")
	}
	if required("ip") && !has("ip", "address") {
		out = append(out, "Failed: You have to enter fence address")
	}
	if required("password") && !has("password", "password_script") {
		out = append(out, "Failed: You have to enter password or password script")
	}
	if required("plug") && !has("plug") && action != "list" && action != "list-status" && action != "monitor" {
		out = append(out, "Failed: You have to enter plug number or machine identification")
	}
	for _, o := range tab.opts {
		switch o.Key {
		case "username", "ip", "password", "plug", "action":
			continue
		}
		if o.Required && !has(o.Key) && !(o.Key == "address" && has("ip")) {
			out = append(out, fmt.Sprintf("Failed: You have to set --%s", o.long()))
		}
	}
	for _, o := range tab.opts {
		v, ok := in.values[o.Key]
		if !ok {
			continue
		}
		name := in.given[o.Key]
		switch o.Type {
		case "select":
			if !slices.Contains(o.Choices, strings.ToLower(strings.TrimSpace(v))) {
				out = append(out, fmt.Sprintf("Failed: You have to enter a valid choice for %s from the valid values: %s", name, pyList(o.Choices)))
			}
		case "second":
			if _, err := fence.ParseSeconds(v); err != nil {
				out = append(out, fmt.Sprintf("Failed: The value you have entered for %s is not a valid time in seconds", name))
			}
		case "integer":
			if _, err := strconv.Atoi(strings.TrimSpace(v)); err != nil {
				out = append(out, fmt.Sprintf("Failed: The value you have entered for %s is not a valid integer", name))
			}
		case "boolean":
			if _, err := fence.ParseBool(v); err != nil {
				out = append(out, fmt.Sprintf("Failed: The value you have entered for %s is not a valid boolean", name))
			}
		}
		if o.Key == "disable_timeout" {
			if _, err := fence.ParseBool(v); err != nil || strings.TrimSpace(v) == "" {
				out = append(out, fmt.Sprintf("Failed: The value you have entered for %s is not true or false", name))
			}
		}
		if !all && len(out) > 0 {
			return out
		}
	}
	return out
}

// params builds the method's parameters from the input: every driver
// parameter given, and the password from --password-script.
func (c *cli) params(ctx context.Context, tab *table, in *input) (fence.Params, int) {
	p := fence.Params{}
	for _, o := range tab.opts {
		v, ok := in.values[o.Key]
		if !ok || o.Kind != kindParam {
			continue
		}
		p.Set(o.Key, v)
		if o.Secret {
			c.secrets.add(v)
		}
	}
	for _, ps := range []struct{ script, param string }{{"password_script", "password"}, {"snmp_priv_passwd_script", "snmp_priv_passwd"}} {
		if code := c.runScript(ctx, in.values[ps.script], ps.param, p); code != 0 {
			return nil, code
		}
	}
	return p, 0
}

// runScript runs a password script (the agents' --password-script and
// --snmp-priv-passwd-script) and sets param to what it prints.
func (c *cli) runScript(ctx context.Context, script, param string, p fence.Params) int {
	if script != "" {
		c.secrets.add(script)
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", script)
		// The script's standard error is not passed on: a script that
		// fails may print the password (or a part of it) there, before
		// fencectl knows what to redact.
		var errOut countWriter
		cmd.Stderr = &errOut
		out, err := cmd.Output()
		if err != nil {
			why := "it did not run"
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				why = fmt.Sprintf("exit status %d", ee.ExitCode())
			}
			if errOut > 0 {
				why += fmt.Sprintf("; it wrote %d bytes to standard error, not shown: they may hold the password", int64(errOut))
			}
			c.logf("ERROR", "Failed: Unable to run the password script: %s", why)
			return 1
		}
		pw := strings.TrimRight(string(out), " \t\r\n")
		c.secrets.add(pw)
		p.Set(param, pw)
	}
	return 0
}

// tune adjusts the opened method to the agents' conventions that
// fence.OptionsFromParams does not know.
func (c *cli) tune(m *fence.Method, in *input, logger *slog.Logger) {
	// --power-timeout 0, --disable-timeout true, or running under
	// pacemaker-fenced without --disable-timeout: wait for ever, as the
	// agents do (Pacemaker's own timeout ends the wait).
	disable := false
	if v, ok := in.values["disable_timeout"]; ok {
		disable, _ = fence.ParseBool(v)
	} else if c.getenv("PCMK_service") == "pacemaker-fenced" {
		disable = true
	}
	if v, ok := in.values["power_timeout"]; ok {
		if d, err := fence.ParseSeconds(v); err == nil && d == 0 {
			disable = true
		}
	}
	if disable {
		m.Options.PowerTimeout = unbounded
		logger.Debug("power timeout disabled")
	}
	// The agents use onoff when the device has no native cycle.
	if m.Options.RebootMethod == fence.RebootCycle {
		if _, ok := m.Device.(fence.Cycler); !ok {
			logger.Debug("the device has no native power cycle: reboot by off and on")
			m.Options.RebootMethod = fence.RebootOnOff
		}
	}
	if m.Options.Delay > 0 {
		logger.Info(fmt.Sprintf("Delay %s second(s) before logging in to the fence device",
			strconv.FormatFloat(m.Options.Delay.Seconds(), 'f', -1, 64)))
	}
	m.Options.Observer = fence.ObserverFunc(func(e fence.Event) {
		attrs := []any{"phase", e.Phase.String(), "attempt", e.Attempt, "outcome", e.Outcome.String(),
			"state", e.State.String(), "polls", e.Polls, "duration", e.Duration}
		if e.Err != nil {
			attrs = append(attrs, "error", e.Err.Error())
		}
		logger.Debug("attempt", attrs...)
	})
}

// act carries out a device action and prints its outcome as the agents.
func (c *cli) act(ctx context.Context, m *fence.Method, action string, in *input) int {
	var a fence.Action
	switch action {
	case "on":
		a = fence.ActionOn
	case "off":
		a = fence.ActionOff
	case "reboot":
		a = fence.ActionReboot
	case "status":
		a = fence.ActionStatus
	case "list", "list-status":
		a = fence.ActionList
	case "monitor":
		a = fence.ActionMonitor
	}
	res, err := fence.Do(ctx, m, a)
	if err != nil {
		if a == fence.ActionList && errors.Is(err, fence.ErrUnsupported) {
			fmt.Fprintln(c.stdout, msgNoList)
			return 0
		}
		c.logf("ERROR", "%s", agentMessage(a, err))
		c.logf("ERROR", "%s", err.Error())
		return 1
	}
	switch a {
	case fence.ActionOn, fence.ActionOff:
		word := strings.ToUpper(a.Target().String())
		if res.Already {
			fmt.Fprintf(c.stdout, "Success: Already %s\n", word)
		} else {
			fmt.Fprintf(c.stdout, "Success: Powered %s\n", word)
		}
	case fence.ActionReboot:
		if res.OnErr != nil {
			c.logf("ERROR", "%s", msgRebootOnFail)
			c.logf("ERROR", "%s", res.OnErr.Error())
		}
		fmt.Fprintln(c.stdout, "Success: Rebooted")
	case fence.ActionStatus:
		fmt.Fprintf(c.stdout, "Status: %s\n", strings.ToUpper(res.State.String()))
		if res.State == fence.StateOff {
			return 2
		}
	case fence.ActionList:
		sep := ","
		if v, ok := in.values["separator"]; ok {
			sep = v
		}
		var b strings.Builder
		for _, p := range res.Plugs {
			b.WriteString(p.ID + sep + p.Name)
			if action == "list-status" {
				st := "UNKNOWN"
				if p.State.Known() {
					st = p.State.String()
				}
				b.WriteString(sep + st)
			}
			b.WriteByte('\n')
		}
		io.WriteString(c.stdout, b.String())
	}
	return 0
}

// agentMessage maps a fence error to the agents' message for it.
func agentMessage(a fence.Action, err error) string {
	waiting := msgWaitingOff
	if a == fence.ActionOn {
		waiting = msgWaitingOn
	}
	op := ""
	var fe *fence.Error
	if errors.As(err, &fe) {
		op = fe.Op
	}
	login := errors.Is(err, fence.ErrLoginDenied) || errors.Is(err, fence.ErrUnreachable)
	switch op {
	case "set", "soft-off", "verify":
		// The plug did not reach the state: the agents' "Timed out
		// waiting", unless the device could not be reached at all.
		if login && !errors.Is(err, fence.ErrTimeout) {
			return msgLoginDenied
		}
		return waiting
	case "cycle":
		return msgTimedOut
	case "delay":
		return msgTimedOut
	}
	switch {
	case login:
		return msgLoginDenied
	case errors.Is(err, fence.ErrBadState), errors.Is(err, fence.ErrUnknownPlug):
		return msgStatus
	case errors.Is(err, fence.ErrTimeout):
		return waiting
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return msgTimedOut
	}
	return msgStatus
}

// openFailed reports a failure to open the device.
func (c *cli) openFailed(err error) int {
	var pe *fence.ParamError
	var fe *fence.Error
	field := ""
	if errors.As(err, &fe) {
		field = fe.Field
	}
	if errors.As(err, &pe) {
		field = pe.Key
	}
	switch {
	case errors.Is(err, fence.ErrLoginDenied), errors.Is(err, fence.ErrUnreachable):
		c.logf("ERROR", "%s", msgLoginDenied)
		c.logf("ERROR", "%s", err.Error())
		return 1
	case field != "":
		c.logf("ERROR", "Failed: The value you have entered for --%s is not valid", strings.ReplaceAll(field, "_", "-"))
	default:
		c.logf("ERROR", "Failed: Unable to open the fence device")
	}
	c.logf("ERROR", "%s", err.Error())
	c.logf("ERROR", "%s", msgUsage)
	return 1
}

func isOn(v string) bool {
	if v == "" {
		return false
	}
	b, err := fence.ParseBool(v)
	return err == nil && b
}

// pyList writes strings as Python prints a list of them: ['a', 'b'].
func pyList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = "'" + strings.ReplaceAll(s, "'", `\'`) + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// redacted renders parameters for logs, secrets hidden.
func redacted(tab *table, p fence.Params) string {
	shown := fence.Params{}
	for k, v := range p {
		if o := tab.byKey[k]; (o != nil && o.Secret) || fence.IsSecret(k) {
			v = fence.RedactedText
		} else if k == "address" || k == "ip" || k == "ipaddr" {
			// An address is printed redacted: its query may hold a
			// credential given there by mistake.
			if a, err := fence.ParseAddress(v); err == nil {
				v = a.Redacted()
			} else {
				v = "(not an address: not shown)"
			}
		}
		shown[k] = v
	}
	return shown.String()
}

// version is the module's version, as the build recorded it.
func version() string {
	v := "devel"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	return "fencekit " + v
}

// secretSet holds the secret values of a run, so that redactWriter can
// keep them out of any output.
type secretSet struct {
	vals    []string
	secrets []fence.Secret
}

// minSecret is the shortest secret redacted from output: shorter ones
// would mangle ordinary text and nothing prints them anyway.
const minSecret = 4

func (s *secretSet) add(v string) {
	if len(v) >= minSecret && !slices.Contains(s.vals, v) {
		s.vals = append(s.vals, v)
		s.secrets = append(s.secrets, fence.NewSecret(v))
	}
}

// redactWriter replaces every secret with REDACTED in what it writes: a
// last line of defence, should a driver's error ever quote one.
type redactWriter struct {
	w io.Writer
	s *secretSet
}

// safetyNet turns redactWriter on; the tests turn it off to prove that
// nothing needs it.
var safetyNet = true

func (r *redactWriter) Write(p []byte) (int, error) {
	if !safetyNet {
		return r.w.Write(p)
	}
	if _, err := io.WriteString(r.w, fence.Scrub(string(p), r.s.secrets...)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// countWriter counts what is written to it and keeps nothing.
type countWriter int64

func (w *countWriter) Write(p []byte) (int, error) {
	*w += countWriter(len(p))
	return len(p), nil
}

// hasStateFile reports whether the fake driver was given fence_dummy's
// status file (its one plug) rather than a fake:// device with plugs.
func hasStateFile(p fence.Params) bool {
	_, ok := p.Get("state_file", "status_file")
	return ok
}

// agentName names the agent a run stands in for: the program's name when it
// is an agent's, else the driver's first agent, else the driver's name.
func (c *cli) agentName(d *fence.Driver) string {
	if d == nil {
		return c.prog
	}
	if slices.Contains(d.Agents, c.prog) {
		return c.prog
	}
	if len(d.Agents) > 0 {
		return d.Agents[0]
	}
	return d.Name
}
