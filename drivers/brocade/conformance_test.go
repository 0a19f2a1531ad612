package brocade

import (
	"context"
	"testing"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/fencetest"
	"github.com/fencekit/fencekit/internal/brocadesim"
)

// conformance runs fence's conformance suite against one emulated switch
// (a real sshd), a device opened per subtest.
func conformance(t *testing.T, sw *brocadesim.Switch, opts func() Options, plugs []string, missing string) {
	fencetest.Run(t, func(t *testing.T) *fencetest.Fixture {
		return &fencetest.Fixture{
			Device:      openDevice(t, opts()),
			Plugs:       plugs,
			MissingPlug: missing,
			Truth:       func(_ context.Context, plug string) (fence.State, error) { return sw.Truth(plug) },
		}
	})
}

func TestConformance(t *testing.T) {
	sw := start(t, brocadesim.Options{Ports: 16})
	plugs := []string{"1", "4", "7"}
	t.Run("password", func(t *testing.T) {
		conformance(t, sw, func() Options { return passwordOptions(sw) }, plugs, "16")
	})
	t.Run("key", func(t *testing.T) {
		conformance(t, sw, func() Options { return keyOptions(sw) }, plugs, "99")
	})
	t.Run("exec", func(t *testing.T) {
		conformance(t, sw, func() Options { o := passwordOptions(sw); o.Mode = ModeExec; return o }, plugs, "16")
	})
}

// A director: plugs are slot/port, and switchshow has a Slot column.
func TestConformanceDirector(t *testing.T) {
	sw := start(t, brocadesim.Options{Ports: 48, Director: true})
	conformance(t, sw, func() Options { return passwordOptions(sw) }, []string{"1/0", "2/5", "3/15"}, "4/0")
}

// A switch that prints a banner and odd white space everywhere.
func TestConformanceOddSwitch(t *testing.T) {
	sw := start(t, brocadesim.Options{Ports: 8, OddWhitespace: true, Banner: oddBanner, SSHBanner: "Authorised use only.\n"})
	conformance(t, sw, func() Options { return passwordOptions(sw) }, []string{"0", "5"}, "8")
}

// oddBanner is a login notice with lines that look like prompts.
const oddBanner = "\x1b[1mWarning>\x1b[0m this switch is monitored\n" +
	"Fabric OS (sw0)\n" +
	"old-sw:admin>\n" +
	"sw0:FID128:admin> (this line is not the prompt)\n" +
	"\n" +
	"Index Port Address  Media Speed   State       Proto\n" +
	"=====\n"
