package ipmi

import (
	"context"
	"testing"
	"time"

	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fence/fencetest"
	"github.com/fencekit/fencekit/internal/ipmisim"
)

// conformance runs fence's conformance suite on devices opened on p, one
// per subtest, the BMC shared.
func conformance(t *testing.T, p peer, mod func(*Options)) {
	fencetest.Run(t, func(t *testing.T) *fencetest.Fixture {
		return &fencetest.Fixture{
			Device:      p.open(t, mod),
			Plugs:       []string{""},
			MissingPlug: "2",
			Truth:       func(context.Context, string) (fence.State, error) { return p.truth() },
			Settle:      p.settle,
		}
	})
}

func TestConformanceGoBMC(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Options)
	}{
		{"lanplus/cipher=3", nil},
		{"lanplus/cipher=17", func(o *Options) { o.CipherSuite = 17 }},
		{"lan", func(o *Options) { o.V15 = true }},
		{"privlvl=operator", func(o *Options) { o.Privilege = PrivilegeOperator }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, p := goBMCPeer(t, ipmisim.GoBMCOptions{
				CipherSuites: []types.CipherSuiteID{types.CipherSuiteID3, types.CipherSuiteID17},
				CycleOffTime: 20 * time.Millisecond,
			})
			conformance(t, p, tc.mod)
		})
	}
}

func TestConformanceIPMISim(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Options)
	}{
		{"lanplus/cipher=3", nil},
		{"lan", func(o *Options) { o.V15 = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, p := simPeer(t, ipmisim.SimOptions{})
			conformance(t, p, tc.mod)
		})
	}
}
