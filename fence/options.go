package fence

import (
	"log/slog"
	"time"
)

// Defaults of Options, as the ClusterLabs fence agents' (lib/fencing.py).
const (
	DefaultPowerTimeout = 20 * time.Second
	DefaultPollInterval = 1 * time.Second
	DefaultRetryOn      = 1
	DefaultIOTimeout    = 10 * time.Second
)

// NoRetry, as Options.RetryOn, asks for no retry at all.
const NoRetry = -1

// DefaultMinOff is the least time a reboot holds a plug off before it
// switches it on again (Options.MinOff): longer than the hold-up of a
// server's power supplies (tens of milliseconds, some hundreds with
// redundant supplies), and fence_ipmilan's power_wait of 2 s, which its
// reboot sleeps between the off and the on. Some BMCs refuse or reorder an
// on that comes right after an off.
const DefaultMinOff = 2 * time.Second

// NoMinOff, as Options.MinOff, asks a reboot for no hold at all between
// the confirmed off and the on (the parameter min_off=0).
const NoMinOff = -1

// Bounds of Options. Values from outside (parameters, command lines) above
// them are refused by OptionsFromParams with an error naming the parameter;
// an Options set in code is clamped to them, so that no number can make an
// action run zero attempts or wait for ever.
const (
	// MaxRetry bounds RetryOn and RetryOff.
	MaxRetry = 100
	// MaxWait bounds every duration of Options (PowerTimeout, PowerWait,
	// PollInterval, Delay, SoftTimeout, IOTimeout, MinOff).
	MaxWait = time.Hour
)

// Options tune a verified action. The zero value gives the agents' defaults.
type Options struct {
	// PowerTimeout bounds the wait for the plug to reach the wanted state
	// after a set (the agents' --power-timeout). Default 20 s.
	PowerTimeout time.Duration
	// PowerWait is slept after each set before the first status read (the
	// agents' --power-wait). Default 0.
	PowerWait time.Duration
	// PollInterval is slept between two status reads while waiting (the
	// agents' --stonith-status-sleep). The first read comes right after the
	// set (and PowerWait): a device that switches at once is confirmed at
	// once. Default 1 s.
	PollInterval time.Duration
	// RetryOn is how many more times a failed power on is tried (the agents'
	// --retry-on): an on makes 1+RetryOn attempts; the on phase of a reboot
	// makes RetryOn attempts, at least one. 0 means the default, 1; NoRetry
	// means none.
	RetryOn int
	// RetryOff is how many more times a failed power off is tried. The agents
	// never retry an off; fencekit does when asked, re-reading the state
	// before each retry. Default 0.
	RetryOff int
	// Delay is slept before an off or a reboot starts, before even the first
	// status read (the agents' --delay), so that in a two-node cluster one
	// side wins a fencing race. Default 0.
	Delay time.Duration
	// MinOff is the least time a reboot holds the plug off before its on,
	// measured from the off's confirmation; in a level of several methods
	// (DoLevels), from the moment every device was confirmed off together,
	// with the longest MinOff of the level's methods. 0 means
	// DefaultMinOff; NoMinOff (negative) none. A native cycle
	// (RebootCycle) is the device's own.
	MinOff time.Duration
	// RebootMethod chooses onoff (default) or the device's native cycle.
	RebootMethod RebootMethod
	// Soft asks for a graceful (operating system) shutdown before a hard
	// off, where the device has one (SoftOffer). When the soft off is refused
	// or the plug is not verified off within SoftTimeout, a hard off follows.
	Soft bool
	// SoftTimeout bounds the wait for a soft off. Default PowerTimeout.
	SoftTimeout time.Duration
	// SkipIdentity turns off the check of the machine's identity before an
	// off (Method.SystemUUID): the parameter verify_identity=false.
	SkipIdentity bool
	// IOTimeout bounds each single call to the device. Default 10 s.
	IOTimeout time.Duration

	// Observer, if set, receives every attempt's outcome and timing.
	Observer Observer
	// Logger receives debug and error records; nil discards them.
	Logger *slog.Logger
}

var discardLogger = slog.New(slog.DiscardHandler)

// withDefaults returns o with every zero field set to its default.
func (o *Options) withDefaults() Options {
	var x Options
	if o != nil {
		x = *o
	}
	if x.PowerTimeout <= 0 {
		x.PowerTimeout = DefaultPowerTimeout
	}
	if x.PollInterval <= 0 {
		x.PollInterval = DefaultPollInterval
	}
	switch {
	case x.RetryOn == 0:
		x.RetryOn = DefaultRetryOn
	case x.RetryOn < 0:
		x.RetryOn = 0
	}
	if x.RetryOff < 0 {
		x.RetryOff = 0
	}
	if x.PowerWait < 0 {
		x.PowerWait = 0
	}
	if x.Delay < 0 {
		x.Delay = 0
	}
	switch {
	case x.MinOff == 0:
		x.MinOff = DefaultMinOff
	case x.MinOff < 0:
		x.MinOff = NoMinOff // none, and none again when defaulted twice
	}
	if x.SoftTimeout <= 0 {
		x.SoftTimeout = x.PowerTimeout
	}
	if x.IOTimeout <= 0 {
		x.IOTimeout = DefaultIOTimeout
	}
	x.MinOff = min(x.MinOff, MaxWait)
	x.RetryOn = min(x.RetryOn, MaxRetry)
	x.RetryOff = min(x.RetryOff, MaxRetry)
	for _, d := range []*time.Duration{&x.PowerTimeout, &x.PowerWait, &x.PollInterval, &x.Delay, &x.SoftTimeout, &x.IOTimeout} {
		*d = min(*d, MaxWait)
	}
	if x.Logger == nil {
		x.Logger = discardLogger
	}
	return x
}

// Outcome is how one attempt ended.
type Outcome uint8

const (
	// OutcomeConfirmed: the device confirmed the wanted state.
	OutcomeConfirmed Outcome = iota + 1
	// OutcomeAlready: the plug was already in the wanted state; nothing was done.
	OutcomeAlready
	// OutcomeNotDone: the attempt failed and surely did not act.
	OutcomeNotDone
	// OutcomeUncertain: the attempt failed and may have acted.
	OutcomeUncertain
	// OutcomeRead: a read (status, list, monitor) succeeded.
	OutcomeRead
)

// String returns the outcome's name.
func (o Outcome) String() string {
	switch o {
	case OutcomeConfirmed:
		return "confirmed"
	case OutcomeAlready:
		return "already"
	case OutcomeNotDone:
		return "not-done"
	case OutcomeUncertain:
		return "unknown"
	case OutcomeRead:
		return "read"
	}
	return "none"
}

// Event is one attempt's report to an Observer.
type Event struct {
	Node, Method, Driver, Plug string
	// Action is what the caller asked for; Phase is the part of it this
	// attempt carried out: ActionOff or ActionOn within a reboot, ActionStatus
	// for the first read.
	Action, Phase Action
	// Attempt counts the attempts of the phase from 1; 0 for the first read.
	Attempt int
	Outcome Outcome
	// State is the last state read, StateUnknown if none was.
	State State
	// Polls counts the status reads of the attempt.
	Polls    int
	Start    time.Time
	Duration time.Duration
	Err      error
}

// Observer receives every attempt's outcome and timing, so that a host
// application can export metrics or traces. Observe must be fast and safe for
// concurrent use; it must not keep the Event's Err past the call if that
// matters to it.
type Observer interface {
	Observe(Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Event)

// Observe calls f(e).
func (f ObserverFunc) Observe(e Event) { f(e) }
