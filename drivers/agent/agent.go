package agent

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fencekit/fencekit/fence"
)

// Defaults of Options.
const (
	// DefaultTimeout bounds each run of an agent when Options.Timeout is
	// zero; the call's context may end it sooner.
	DefaultTimeout = 60 * time.Second
	// DefaultOutputLimit is how much of each of an agent's standard output
	// and standard error is read; an agent that prints more is killed.
	DefaultOutputLimit = 1 << 20
)

// closeWait bounds how long Close waits for the runs it kills to end.
const closeWait = 3 * time.Second

// Options configure a Device.
type Options struct {
	// Path is the agent: a name such as "fence_ipmilan", or an absolute
	// path (see LookPath).
	Path string
	// Params are the method's parameters, canonical keys (see doc.go for
	// which are passed to the agent and how). Credentials among them only
	// ever reach the agent on its standard input.
	Params fence.Params
	// Address, when its Host is set and Params have no ip (or ipaddr),
	// stands for ip and, when it has a port, ipport.
	Address fence.Address
	// Timeout bounds each run of the agent, whatever the call's context
	// allows; default DefaultTimeout.
	Timeout time.Duration
	// Env is added to the agent's environment, as "KEY=value" entries
	// (such as https_proxy or HOME); the environment is otherwise minimal
	// and inherits nothing from this process (see doc.go).
	// PCMK_service, which lifts the agents' own time limits, is refused.
	Env []string
	// Limit is how many runs of the agent may be under way at once on
	// this device; default 1, as Pacemaker's pcmk_action_limit, since many
	// devices take one session at a time. Further calls wait their turn,
	// within their context.
	Limit int
	// OutputLimit bounds what is read of each of the agent's standard
	// output and standard error; default DefaultOutputLimit.
	OutputLimit int
	// Logger receives a debug record per run; nil discards them.
	Logger *slog.Logger
	// NoPlugCheck turns off the check of a plug read off against the
	// device's plug list (see Device.Status). Leave it off: some agents
	// read a plug the device does not have as off.
	NoPlugCheck bool
}

// Device is a fence device driven by a ClusterLabs fence agent: every call
// runs the agent once, with its options on standard input. It implements
// fence.Device, fence.Cycler, fence.Lister, fence.Monitor and io.Closer;
// a capability the agent lacks fails with fence.ErrUnsupported. View
// returns the device with exactly the agent's capabilities, for the engine.
// A Device is safe for concurrent use.
type Device struct {
	path    string
	name    string
	meta    *Meta
	cfg     *config
	timeout time.Duration
	env     []string
	limit   int
	logger  *slog.Logger

	sem chan struct{}

	checkPlugs bool
	plugsMu    sync.Mutex
	plugs      map[string]bool // IDs and names of the last plug list read

	mu       sync.Mutex
	closed   chan struct{}
	isClosed bool
	runs     sync.WaitGroup
}

// New resolves the agent, reads its metadata (cached per agent, see
// Metadata), checks that it can serve as a power device (it lists the
// status, on and off actions), and validates the parameters against the
// metadata: an unknown parameter, a missing required one or a value of the
// wrong type is a *fence.ParamError naming the key. It does not contact
// the device.
func New(ctx context.Context, o Options) (*Device, error) {
	path, err := LookPath(o.Path)
	if err != nil {
		return nil, err
	}
	for _, e := range o.Env {
		k, _, ok := strings.Cut(e, "=")
		if !ok || k == "" {
			return nil, &fence.ParamError{Key: "env", Value: "[entry]", Reason: "an environment entry is KEY=value"}
		}
		if k == "PCMK_service" {
			return nil, &fence.ParamError{Key: "env", Value: k, Reason: "PCMK_service lifts the agents' own time limits: refused"}
		}
	}
	d := &Device{
		path: path, name: agentName(path),
		timeout: o.Timeout, env: append([]string(nil), o.Env...), limit: o.Limit,
		logger: o.Logger, closed: make(chan struct{}), checkPlugs: !o.NoPlugCheck,
	}
	if d.timeout <= 0 {
		d.timeout = DefaultTimeout
	}
	if d.limit <= 0 {
		d.limit = 1
	}
	if d.logger == nil {
		d.logger = slog.New(slog.DiscardHandler)
	}
	outLimit := o.OutputLimit
	if outLimit <= 0 {
		outLimit = DefaultOutputLimit
	}
	d.sem = make(chan struct{}, d.limit)
	d.meta, err = metadata(ctx, path, d.timeout, d.env)
	if err != nil {
		return nil, err
	}
	for _, a := range []string{"status", "on", "off"} {
		if !d.meta.HasAction(a) {
			return nil, &fence.ParamError{Key: "agent", Value: o.Path,
				Reason: fmt.Sprintf("%s does not list the %s action: it cannot serve as a power device", d.meta.Name, a)}
		}
	}
	d.cfg, err = buildConfig(d.meta, o.Params, o.Address)
	if err != nil {
		return nil, err
	}
	d.cfg.outputLimit = outLimit
	return d, nil
}

// Meta returns the agent's metadata.
func (d *Device) Meta() *Meta { return d.meta }

// Path returns the agent's path.
func (d *Device) Path() string { return d.path }

// Status runs the agent's status action: "Status: ON" with exit status 0
// is on, "Status: OFF" with exit status 2 is off. Anything else (no status
// line, a status line that contradicts the exit status) is an error
// wrapping fence.ErrBadState and ErrGarbage, and StateUnknown; a failure is
// classified as doc.go tells. For an agent that lists its plugs, a plug
// read off must be in the device's plug list (by ID or name), or Status
// fails with fence.ErrUnknownPlug (see Options.NoPlugCheck).
func (d *Device) Status(ctx context.Context, plug string) (fence.State, error) {
	out, fail := d.call(ctx, "status", plug)
	if out.err != nil {
		return fence.StateUnknown, fail(out.err)
	}
	var words []string
	for _, l := range lines(out.stdout) {
		if w, ok := strings.CutPrefix(l, "Status:"); ok {
			words = append(words, strings.ToUpper(strings.TrimSpace(w)))
		}
	}
	switch {
	case out.exit == 0 && len(words) == 1 && words[0] == "ON":
		return fence.StateOn, nil
	case out.exit == 2 && len(words) == 1 && words[0] == "OFF":
		if err := d.checkPlug(ctx, plug); err != nil {
			return fence.StateUnknown, err
		}
		return fence.StateOff, nil
	case out.exit == 0 || out.exit == 2:
		why := "no Status line"
		switch {
		case len(words) > 1:
			why = fmt.Sprintf("%d Status lines", len(words))
		case len(words) == 1:
			why = fmt.Sprintf("Status: %s with exit status %d (ON goes with 0, OFF with 2)", words[0], out.exit)
		}
		return fence.StateUnknown, fail(fmt.Errorf("%w: %w: %s", fence.ErrBadState, ErrGarbage, why))
	}
	cause, _ := classify(out)
	return fence.StateUnknown, fail(cause)
}

// checkPlug makes sure that a plug read off is one the device has, for an
// agent that lists its plugs: some agents read any plug they cannot find
// as off (fence_apc_snmp, given an outlet number the switch lacks), and an
// off that is no off would count as fenced. The list is read on the first
// such check, and again when the plug is not in it; the plug must be a
// listed ID or name. Errors wrap fence.ErrUnknownPlug, or are the list's.
func (d *Device) checkPlug(ctx context.Context, plug string) error {
	if plug == "" || !d.checkPlugs || !d.meta.CanList() {
		return nil
	}
	d.plugsMu.Lock()
	known := d.plugs[plug]
	cached := d.plugs != nil
	d.plugsMu.Unlock()
	if known {
		return nil
	}
	list, err := d.List(ctx)
	if err != nil {
		return fmt.Errorf("agent %s read plug %q off, and its plug list, read to make sure the plug exists, failed: %w", d.name, plug, err)
	}
	m := make(map[string]bool, 2*len(list))
	for _, p := range list {
		m[p.ID] = true
		if p.Name != "" {
			m[p.Name] = true
		}
	}
	d.plugsMu.Lock()
	d.plugs = m
	d.plugsMu.Unlock()
	if m[plug] {
		return nil
	}
	again := ""
	if cached {
		again = " (read again)"
	}
	return fence.NotDone(&Error{Agent: d.name, Host: d.cfg.host, Action: "status", Plug: plug, Exit: 2,
		Err: fmt.Errorf("%w: the agent read it off, but the device's plug list%s holds no such plug ID or name; an agent may read a plug it cannot find as off", fence.ErrUnknownPlug, again)})
}

// Set runs the agent's on or off action. The agent reads the state first,
// sets it and polls it (one attempt, bounded to fit the call's deadline;
// see doc.go); exit status 0 with a "Success:" line is accepted. An error
// is marked fence.NotDone when the agent surely did not act (it did not
// start, refused its parameters, or could not log in or connect), and
// fence.OutcomeUnknown otherwise.
func (d *Device) Set(ctx context.Context, plug string, s fence.State) error {
	var action string
	switch s {
	case fence.StateOn:
		action = "on"
	case fence.StateOff:
		action = "off"
	default:
		return fence.NotDone(fmt.Errorf("agent %s: cannot set state %v", d.name, s))
	}
	out, fail := d.call(ctx, action, plug)
	if err := d.switchFailed(out, fail); err != nil {
		return err
	}
	want, other := strings.ToUpper(action), "OFF"
	if action == "off" {
		other = "ON"
	}
	for _, l := range lines(out.stdout) {
		if w, ok := strings.CutPrefix(l, "Success:"); ok {
			f := strings.Fields(strings.ToUpper(w))
			if slices.Contains(f, other) && !slices.Contains(f, want) {
				return fence.OutcomeUnknown(fail(fmt.Errorf("%w: asked for %s, it reported %q", ErrGarbage, action, l)))
			}
			return nil
		}
	}
	return fence.OutcomeUnknown(fail(fmt.Errorf("%w: exit status 0 without a Success line", ErrGarbage)))
}

// Cycle runs the agent's reboot action with method=cycle, the device's
// native power cycle, when the agent offers one (Meta.CanCycle); else it
// fails with fence.ErrUnsupported, marked fence.NotDone. Exit status 0
// with "Success: Rebooted", and no report of a failed power on, is
// accepted; errors are marked as Set's are.
func (d *Device) Cycle(ctx context.Context, plug string) error {
	if !d.meta.CanCycle() {
		return fence.NotDone(d.unsupported("reboot", plug, "native power cycle (method=cycle)"))
	}
	out, fail := d.call(ctx, "reboot", plug, stdinLine{d.cfg.has["method"], "cycle"})
	if err := d.switchFailed(out, fail); err != nil {
		return err
	}
	if strings.Contains(strings.ToLower(string(out.stderr)), "timed out waiting to power on") {
		return fence.OutcomeUnknown(fail(fmt.Errorf("%w: the agent reported a reboot, and that the power did not come back on", fence.ErrTimeout)))
	}
	for _, l := range lines(out.stdout) {
		if strings.HasPrefix(l, "Success:") {
			return nil
		}
	}
	return fence.OutcomeUnknown(fail(fmt.Errorf("%w: exit status 0 without a Success line", ErrGarbage)))
}

// List runs the agent's list-status action (or list, when the agent lacks
// it) and parses its "plug,alias[,state]" lines. An agent that cannot list
// fails with fence.ErrUnsupported.
func (d *Device) List(ctx context.Context) ([]fence.Plug, error) {
	action := "list-status"
	if !d.meta.HasAction(action) {
		action = "list"
	}
	if !d.meta.HasAction(action) {
		return nil, d.unsupported("list", "", "plug list")
	}
	out, fail := d.call(ctx, action, "")
	if out.err != nil {
		return nil, fail(out.err)
	}
	if out.exit != 0 {
		cause, _ := classify(out)
		return nil, fail(cause)
	}
	var plugs []fence.Plug
	for _, l := range lines(out.stdout) {
		if strings.HasPrefix(l, "NOTICE:") || l == "N/A" {
			return nil, fail(fmt.Errorf("%w: plug list (%s)", fence.ErrUnsupported, printable(l)))
		}
		p := fence.Plug{State: fence.StateUnknown}
		i, j := strings.Index(l, plugSeparator), strings.LastIndex(l, plugSeparator)
		switch {
		case i <= 0:
			return nil, fail(fmt.Errorf("%w: list line %q has no plug and separator", ErrGarbage, printable(l)))
		case action == "list-status":
			if i == j {
				return nil, fail(fmt.Errorf("%w: list-status line %q has no state", ErrGarbage, printable(l)))
			}
			p.ID, p.Name = l[:i], l[i+1:j]
			if st, err := fence.ParseState(l[j+1:]); err == nil {
				p.State = st
			}
		default:
			p.ID, p.Name = l[:i], l[i+1:]
		}
		plugs = append(plugs, p)
	}
	return plugs, nil
}

// Monitor runs the agent's monitor action: the device is reachable and
// the credentials work (for a device with plugs, the agents read the plug
// list). An agent without a monitor action fails with
// fence.ErrUnsupported.
func (d *Device) Monitor(ctx context.Context) error {
	if !d.meta.HasAction("monitor") {
		return d.unsupported("monitor", "", "monitor")
	}
	out, fail := d.call(ctx, "monitor", "")
	if out.err != nil {
		return fail(out.err)
	}
	if out.exit != 0 {
		cause, _ := classify(out)
		return fail(cause)
	}
	return nil
}

// Close kills the runs under way (their calls fail with ErrClosed, the
// outcome of a Set unknown) and makes later calls fail with ErrClosed,
// marked fence.NotDone. It waits at most a few seconds for the runs to
// end. Closing twice is harmless.
func (d *Device) Close() error {
	d.mu.Lock()
	if d.isClosed {
		d.mu.Unlock()
		return nil
	}
	d.isClosed = true
	close(d.closed)
	d.mu.Unlock()
	done := make(chan struct{})
	go func() {
		d.runs.Wait()
		close(done)
	}()
	t := time.NewTimer(closeWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	return nil
}

// actErr marks an error of a run that did not complete for Set and Cycle:
// one that never started is already marked not done; the others (killed)
// may have acted.
func (d *Device) actErr(err error) error {
	if fence.IsNotDone(err) {
		return err
	}
	return fence.OutcomeUnknown(err)
}

func (d *Device) unsupported(action, plug, what string) error {
	return &Error{Agent: d.name, Host: d.cfg.host, Action: action, Plug: plug, Exit: -1,
		Err: fmt.Errorf("%w: %s does not offer a %s", fence.ErrUnsupported, d.meta.Name, what)}
}

// switchFailed is the error of a run of an action that switches (on, off,
// reboot) that did not run or exited non-zero: marked fence.NotDone when
// the agent's output says nothing was switched, fence.OutcomeUnknown
// otherwise; nil for a run that exited 0.
func (d *Device) switchFailed(out runOutput, fail func(error) error) error {
	if out.err != nil {
		return d.actErr(fail(out.err))
	}
	if out.exit != 0 {
		cause, notDone := classify(out)
		if notDone {
			return fence.NotDone(fail(cause))
		}
		return fence.OutcomeUnknown(fail(cause))
	}
	return nil
}

// call runs the agent for one action on one plug, in turn with the
// device's other calls. fail wraps a cause into the run's *Error (with the
// agent's error lines, scrubbed); a cause already marked fence.NotDone
// keeps its mark.
func (d *Device) call(ctx context.Context, action, plug string, extra ...stdinLine) (runOutput, func(error) error) {
	fail := func(out runOutput) func(error) error {
		return func(cause error) error {
			e := &Error{Agent: d.name, Host: d.cfg.host, Action: action, Plug: plug, Exit: out.exit,
				Output: errorLines(out, d.cfg.secrets), Err: cause}
			if fence.IsNotDone(cause) {
				return fence.NotDone(e)
			}
			return e
		}
	}
	plugLine, err := d.plugLine(action, plug)
	if err != nil {
		return runOutput{exit: -1, err: fence.NotDone(err)}, fail(runOutput{exit: -1})
	}
	if err := ctx.Err(); err != nil {
		return runOutput{exit: -1, err: fence.NotDone(fmt.Errorf("not started: %w", err))}, fail(runOutput{exit: -1})
	}
	select {
	case d.sem <- struct{}{}:
	case <-ctx.Done():
		return runOutput{exit: -1, err: fence.NotDone(fmt.Errorf("not started, waiting for the device's other runs: %w", ctx.Err()))}, fail(runOutput{exit: -1})
	case <-d.closed:
		return runOutput{exit: -1, err: fence.NotDone(ErrClosed)}, fail(runOutput{exit: -1})
	}
	defer func() { <-d.sem }()
	d.mu.Lock()
	if d.isClosed {
		d.mu.Unlock()
		return runOutput{exit: -1, err: fence.NotDone(ErrClosed)}, fail(runOutput{exit: -1})
	}
	d.runs.Add(1)
	d.mu.Unlock()
	defer d.runs.Done()

	in := append([]stdinLine(nil), d.cfg.lines...)
	in = append(in, stdinLine{"action", action})
	if plugLine != nil {
		in = append(in, *plugLine)
	}
	in = append(in, d.timing(ctx, action)...)
	in = append(in, extra...)
	r := runSpec{path: d.path, stdin: stdin(in), env: d.env, timeout: d.timeout, limit: d.cfg.outputLimit, closed: d.closed}
	out := r.run(ctx)
	if d.logger.Enabled(ctx, slog.LevelDebug) {
		attrs := []slog.Attr{slog.String("agent", d.name), slog.String("action", action), slog.String("plug", plug),
			slog.Int("exit", out.exit), slog.Duration("duration", out.elapsed)}
		if out.err != nil {
			attrs = append(attrs, slog.String("error", scrub(out.err.Error(), d.cfg.secrets)))
		}
		d.logger.LogAttrs(ctx, slog.LevelDebug, "fence agent run", attrs...)
	}
	return out, fail(out)
}

// plugLine checks the plug for the agent and returns its line, nil when no
// plug is passed. Errors are causes wrapping fence.ErrUnknownPlug.
func (d *Device) plugLine(action, plug string) (*stdinLine, error) {
	bad := func(why string) (*stdinLine, error) {
		return nil, fmt.Errorf("%w: %s", fence.ErrUnknownPlug, why)
	}
	if strings.ContainsAny(plug, "\r\n\x00") {
		return bad("a plug cannot hold a line break")
	}
	if strings.Contains(plug, plugSeparator) {
		return bad("a plug cannot hold " + plugSeparator + ", which would name several plugs")
	}
	_, aliasIP := d.meta.Param("port_as_ip")
	switch {
	case d.cfg.plugName == "":
		if plug != "" {
			return bad(d.meta.Name + " has no plugs: the plug must be empty")
		}
		return nil, nil
	case aliasIP && !d.cfg.portAsIP:
		// The agent's plug only stands for its address, with port_as_ip.
		if plug != "" {
			return bad(d.meta.Name + " controls one machine: the plug must be empty (or set port_as_ip to give the device's address as the plug)")
		}
		return nil, nil
	case plug == "":
		if (d.cfg.plugRequired || d.cfg.portAsIP) && action != "list" && action != "list-status" && action != "monitor" {
			return bad(d.meta.Name + " needs a plug")
		}
		return nil, nil
	}
	return &stdinLine{d.cfg.plugName, plug}, nil
}

// timing returns the lines that make one run one attempt within the
// call's deadline: no delay, no wait after the set, no retry of an on
// (the engine does those), and a power_timeout (the agents' count of
// status reads after a set, and their bound on each command they run) that
// leaves a quarter of the time left, at least 2 s, for the agent's start
// and login.
func (d *Device) timing(ctx context.Context, action string) []stdinLine {
	var out []stdinLine
	add := func(k, v string) {
		if name, ok := d.cfg.has[k]; ok {
			out = append(out, stdinLine{name, v})
		}
	}
	add("delay", "0")
	add("power_wait", "0")
	add("retry_on", "0")
	add("stonith_status_sleep", fmt.Sprint(d.cfg.statusSleep))
	budget := d.timeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < budget {
		budget = time.Until(dl)
	}
	avail := (budget - max(2*time.Second, budget/4)).Seconds()
	if action == "on" || action == "off" || action == "reboot" {
		avail /= float64(d.cfg.statusSleep)
	}
	n := int(math.Floor(avail))
	add("power_timeout", fmt.Sprint(min(max(n, 1), d.cfg.powerTimeout)))
	return out
}

// lines splits output into trimmed, non-empty lines.
func lines(b []byte) []string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}
