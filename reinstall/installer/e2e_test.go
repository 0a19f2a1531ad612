package installer_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/apiauth"
	_ "github.com/fencekit/fencekit/drivers/ipmi"
	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/ipmisim"
	"github.com/fencekit/fencekit/reinstall"
	"github.com/fencekit/fencekit/reinstall/installer"
	"github.com/fencekit/fencekit/reinstall/reinstalltest"
)

// End to end over HTTP: the API side (reinstall.Service behind
// NewHandler, over TLS) whose machine is powered by a live IPMI simulator
// (OpenIPMI's ipmi_sim) through the ipmi driver: the reinstall sets the
// boot device to PXE and reboots the machine with a verified power cycle;
// the installer then runs as its own program would, against the API side
// through reinstall.Client (lookup and report), with the installer's own
// credential (signed requests), which may not order reinstalls.

const operatorToken = "operator-token-0123456789abcdef"

type e2e struct {
	sim       *ipmisim.Sim
	store     *reinstall.MemStore
	operator  *reinstall.Client
	installer *reinstall.Client
	ports     installer.Ports
	disks     *reinstalltest.Disks
	kexec     *reinstalltest.Kexec
	boot      reinstall.FenceBootOrder
	key       *apiauth.HMAC
}

// installerKeyOf returns a fresh key for the installers' signed requests.
func installerKeyOf(t *testing.T) *apiauth.HMAC {
	key := make([]byte, 32)
	_, err := rand.Read(key)
	require.NoError(t, err)
	return &apiauth.HMAC{Key: key}
}

func newE2E(t *testing.T) *e2e {
	sim := ipmisim.StartIPMISim(t, ipmisim.SimOptions{})
	m, err := fence.DefaultRegistry().Open(t.Context(), "", &fence.MethodOptions{Node: "m1", Name: "bmc", Driver: "ipmi", Params: fence.Params{
		"address": sim.URL(), "username": sim.User, "password": sim.Password, "lanplus": "1", "power_timeout": "10"}})
	require.NoError(t, err)
	m.Options.PollInterval = 100 * time.Millisecond
	method := func(string) (*fence.Method, error) { return m, nil }

	e := &e2e{sim: sim, key: installerKeyOf(t), store: reinstall.NewMemStore(reinstalltest.Machine("m1", "ubuntu-22.04")),
		disks: reinstalltest.NewDisks(reinstalltest.Inventory()), kexec: &reinstalltest.Kexec{},
		boot: reinstall.FenceBootOrder{Method: method}}
	svc, err := reinstall.NewService(reinstall.Ports{Store: e.store, Images: reinstalltest.Images(), BootOrder: e.boot,
		SwitchPorts: &reinstalltest.SwitchPorts{}, Power: reinstall.FencePower{Method: method}}, &reinstall.Options{Deadline: time.Hour})
	require.NoError(t, err)

	tokens, err := apiauth.NewTokens(operatorToken)
	require.NoError(t, err)
	installerKey := e.key
	srv := httptest.NewTLSServer(reinstall.NewHandler(svc, &reinstall.HandlerOptions{Auth: tokens, InstallerAuth: installerKey}))
	t.Cleanup(srv.Close)
	client := func(s apiauth.Signer) *reinstall.Client {
		hc := *srv.Client()
		hc.Transport = &apiauth.Transport{Signer: s, Base: hc.Transport}
		return &reinstall.Client{BaseURL: srv.URL, HTTPClient: &hc}
	}
	e.operator = client(apiauth.Bearer(operatorToken))
	e.installer = client(installerKey)
	e.ports = installer.Ports{Allocations: e.installer, Reporter: e.installer, Disks: e.disks, BootOrder: e.boot,
		SwitchPorts: &reinstalltest.SwitchPorts{}, Kexec: e.kexec}
	return e
}

// bootparam is what ipmitool reads of the boot flags.
func (e *e2e) bootparam(t *testing.T) string {
	t.Helper()
	ipmitool := ipmisim.RequireTool(t, "ipmitool", "ipmitool")
	out, err := exec.CommandContext(t.Context(), ipmitool, "-I", "lanplus", "-C", "3", "-H", ipmisim.Host, "-p", fmt.Sprint(e.sim.Port),
		"-U", e.sim.User, "-P", e.sim.Password, "chassis", "bootparam", "get", "5").CombinedOutput()
	require.NoError(t, err, string(out))
	return string(out)
}

func (e *e2e) machine(t *testing.T) reinstall.Machine {
	m, err := e.store.Get(t.Context(), "m1")
	require.NoError(t, err)
	return m
}

// A reinstall that completes: PXE set and a verified reboot on the
// simulator, the installer's lookup and report over HTTP, the OS disk
// alone wiped and written, the boot device back to disk.
func TestE2EReinstallCompletes(t *testing.T) {
	e := newE2E(t)
	res, err := e.operator.Reinstall(t.Context(), "m1", "ubuntu-24.04")
	require.NoError(t, err)
	assert.Equal(t, reinstall.PhasePending, res.Status.Phase)
	assert.Contains(t, e.bootparam(t), "Boot Device Selector : Force PXE")
	assert.Equal(t, "pxe", e.sim.BootDevice())
	st, err := e.sim.Truth()
	require.NoError(t, err)
	assert.Equal(t, fence.StateOn, st, "rebooted: off, verified, then on")

	// The installer's credential cannot order a reinstall, the operators'
	// cannot act as the installer.
	_, err = e.installer.Reinstall(t.Context(), "m1", "debian-12")
	var ae *reinstall.APIError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, http.StatusUnauthorized, ae.StatusCode)
	_, err = e.operator.Lookup(t.Context(), "m1")
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, http.StatusUnauthorized, ae.StatusCode)

	s, err := installer.Run(t.Context(), "m1", e.ports, nil)
	require.NoError(t, err)
	assert.Equal(t, installer.PhaseBooted, s.Phase)
	assert.Equal(t, reinstall.TargetNewOS, s.Target)
	assert.Equal(t, []string{"sda"}, e.disks.Wiped(), "the OS disk alone")
	assert.Equal(t, []string{"sda"}, e.disks.Written())
	m := e.machine(t)
	assert.Equal(t, reinstall.PhaseSucceeded, m.Reinstall.Phase)
	assert.Equal(t, "ubuntu-24.04", m.Allocation.Image)
	assert.Contains(t, e.bootparam(t), "Boot Device Selector : Force Boot from default Hard-Drive", "the boot device back to disk")

	// The next lookup boots the local OS: no reinstall loop.
	o, err := e.installer.Lookup(t.Context(), "m1")
	require.NoError(t, err)
	assert.Equal(t, reinstall.OrderBootLocal, o.Kind)
}

// A reinstall that aborts before the wipe: the installer cannot read the
// machine's disks; it reports the failure (nothing wiped) over HTTP and
// boots the old OS; the API side keeps the old image.
func TestE2EReinstallAbortsBeforeTheWipe(t *testing.T) {
	e := newE2E(t)
	_, err := e.operator.Reinstall(t.Context(), "m1", "ubuntu-24.04")
	require.NoError(t, err)
	assert.Equal(t, "pxe", e.sim.BootDevice())
	e.disks.Inject(reinstalltest.Fault{Op: reinstalltest.OpInventory})
	s, err := installer.Run(t.Context(), "m1", e.ports, nil)
	require.NoError(t, err)
	assert.Equal(t, installer.PhaseBooted, s.Phase)
	assert.Equal(t, reinstall.TargetLocalOS, s.Target)
	assert.Empty(t, e.disks.Wiped())
	m := e.machine(t)
	assert.Equal(t, reinstall.PhaseFailed, m.Reinstall.Phase)
	assert.Equal(t, "ubuntu-22.04", m.Allocation.Image)
	assert.False(t, m.Allocation.Reinstall)
	assert.Equal(t, "default", e.sim.BootDevice(), "back to disk")

	// A report of a stale attempt is refused over HTTP too.
	err = e.installer.Report(t.Context(), reinstall.Report{Machine: "m1", Generation: 9, Attempt: 1, Outcome: reinstall.OutcomeSucceeded})
	assert.ErrorIs(t, err, reinstall.ErrStaleReport)
}

// The installer endpoints read strictly and refuse the anonymous.
func TestInstallerEndpoints(t *testing.T) {
	e := newE2E(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	anonymous := &reinstall.Client{BaseURL: e.operator.BaseURL, HTTPClient: &http.Client{Transport: e.operator.HTTPClient.Transport.(*apiauth.Transport).Base}}
	_, err := anonymous.Lookup(ctx, "m1")
	var ae *reinstall.APIError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "unauthorized", ae.Code)
	o, err := e.installer.Lookup(ctx, "m1")
	require.NoError(t, err)
	assert.Equal(t, reinstall.OrderBootLocal, o.Kind)
	_, err = e.installer.Lookup(ctx, "m9")
	assert.ErrorIs(t, err, reinstall.ErrMachineNotFound)
	// A captured signed report, sent again, is refused.
	body := `{"generation":9,"attempt":1,"outcome":"failed","wiped":false}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.operator.BaseURL+"/v1/machine/m1/report", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	require.NoError(t, e.key.Sign(req))
	hdr := req.Header.Clone()
	plain := &http.Client{Transport: e.operator.HTTPClient.Transport.(*apiauth.Transport).Base}
	resp, err := plain.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusConflict, resp.StatusCode, "authenticated, and stale")
	again, err := http.NewRequestWithContext(ctx, http.MethodPost, req.URL.String(), strings.NewReader(body))
	require.NoError(t, err)
	again.Header = hdr
	resp, err = plain.Do(again)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "replayed")

	_, err = reinstall.DecodeReportBody("m1", []byte(`{"generation":1,"attempt":1,"outcome":"done","wiped":false}`))
	assert.ErrorIs(t, err, reinstall.ErrBadRequest)
	_, err = reinstall.DecodeReportBody("m1", []byte(`{"generation":1,"attempt":1,"outcome":"failed","wiped":false,"image":"x"}`))
	assert.ErrorIs(t, err, reinstall.ErrBadRequest)
	_, err = reinstall.OrderBody{Kind: "reinstall", Machine: "m1"}.Order()
	assert.Error(t, err, "a reinstall order without image or disk is never acted on")
}
