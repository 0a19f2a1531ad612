package redfish

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/fencekit/fencekit/fence"
)

// bootTargets maps boot devices to Redfish's BootSourceOverrideTarget.
var bootTargets = map[fence.BootDevice]string{
	fence.BootPXE:  "Pxe",
	fence.BootDisk: "Hdd",
	fence.BootCD:   "Cd",
	fence.BootBIOS: "BiosSetup",
}

// bootDoc is the Boot property of a ComputerSystem.
type bootDoc struct {
	Boot *struct {
		Target       string   `json:"BootSourceOverrideTarget"`
		Enabled      string   `json:"BootSourceOverrideEnabled"`
		Mode         string   `json:"BootSourceOverrideMode"`
		Allowed      []string `json:"BootSourceOverrideTarget@Redfish.AllowableValues"`
		AllowedModes []string `json:"BootSourceOverrideMode@Redfish.AllowableValues"`
	}
}

// SetBootDevice sets the plug's system's boot source override for the next
// boot only: a PATCH of Boot.BootSourceOverrideTarget (Pxe, Hdd, Cd,
// BiosSetup) with BootSourceOverrideEnabled Once, and
// BootSourceOverrideMode when Options.BootMode is set, after checking that
// the system offers the target and the mode when it lists those it offers;
// then it reads the system again and fails unless all are as asked.
func (d *Device) SetBootDevice(ctx context.Context, plug string, b fence.BootDevice) error {
	target, ok := bootTargets[b]
	if !ok {
		return fence.NotDone(fmt.Errorf("redfish %s: boot device %q: %w", d.host, b, fence.ErrUnsupported))
	}
	uri, err := d.systemURI(ctx, plug)
	if err != nil {
		return fence.NotDone(err)
	}
	before, err := d.readBoot(ctx, uri)
	if err != nil {
		return fence.NotDone(err)
	}
	if before.Boot == nil {
		return fence.NotDone(d.fail(http.MethodGet, uri, "Boot", "the system has no Boot property", nil, fence.ErrUnsupported))
	}
	if len(before.Boot.Allowed) > 0 && !slices.Contains(before.Boot.Allowed, target) {
		return fence.NotDone(d.fail(http.MethodPatch, uri, "Boot/BootSourceOverrideTarget",
			fmt.Sprintf("%s not offered (it offers: %s); not sent", target, strings.Join(before.Boot.Allowed, ", ")), nil, fence.ErrUnsupported))
	}
	mode := d.o.BootMode
	if mode != "" && len(before.Boot.AllowedModes) > 0 && !slices.Contains(before.Boot.AllowedModes, mode) {
		return fence.NotDone(d.fail(http.MethodPatch, uri, "Boot/BootSourceOverrideMode",
			fmt.Sprintf("%s not offered (it offers: %s); not sent", mode, strings.Join(before.Boot.AllowedModes, ", ")), nil, fence.ErrUnsupported))
	}
	if err := d.checkOpen(http.MethodPatch, uri); err != nil {
		return fence.NotDone(err)
	}
	modeJSON := ""
	if mode != "" {
		modeJSON = `,"BootSourceOverrideMode":` + quoteJSON(mode)
	}
	body := []byte(`{"Boot":{"BootSourceOverrideTarget":` + quoteJSON(target) + `,"BootSourceOverrideEnabled":"Once"` + modeJSON + `}}`)
	r, se := d.send(ctx, http.MethodPatch, uri, body)
	if se != nil {
		if !se.mayHaveSent {
			return fence.NotDone(se.err)
		}
		return se.err
	}
	if r.status < 200 || r.status > 299 {
		e := d.statusError(http.MethodPatch, uri, r)
		if r.status >= 400 && r.status <= 499 {
			return fence.NotDone(e)
		}
		return e
	}
	after, err := d.readBoot(ctx, uri)
	if err != nil {
		return err
	}
	if after.Boot == nil || after.Boot.Target != target || after.Boot.Enabled != "Once" || (mode != "" && after.Boot.Mode != mode) {
		want, got := target+", Once", "no Boot property"
		if after.Boot != nil {
			got = after.Boot.Target + ", " + after.Boot.Enabled
		}
		if mode != "" {
			want += ", " + mode
			if after.Boot != nil {
				got += ", " + after.Boot.Mode
			}
		}
		return d.fail(http.MethodGet, uri, "Boot", "the service took the override "+want+" but reads back "+got, nil)
	}
	return nil
}

// readBoot GETs the system's Boot property.
func (d *Device) readBoot(ctx context.Context, uri string) (*bootDoc, error) {
	if err := d.checkOpen(http.MethodGet, uri); err != nil {
		return nil, err
	}
	var raw json.RawMessage
	if err := d.getJSON(ctx, uri, &raw); err != nil {
		return nil, err
	}
	var doc bootDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, d.fail(http.MethodGet, uri, "Boot", "reply is not the expected JSON", err, ErrMalformedReply)
	}
	return &doc, nil
}

var _ fence.BootSetter = (*Device)(nil)
