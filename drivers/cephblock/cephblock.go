// Package cephblock fences a node from its Ceph storage without a BMC: its
// off adds the node's addresses to the Ceph cluster's client blocklist
// (ceph osd blocklist add, or range add for a CIDR), so that every OSD
// refuses the I/O of every client at those addresses, and its on removes
// them; its status reads the blocklist back (ceph osd blocklist ls). This
// is the isolation Rook applies when the out-of-service taint appears
// (CSI-Addons' NetworkFence), as a fence method: a level of the isolation
// step, proof that the node can no longer write to its RBD images and
// CephFS files, whatever its power.
//
// A method's plug is the node's addresses, separated by commas: IP
// addresses, or CIDRs no wider than max_addresses (16 by default: a typo
// never blocklists a whole network), or PlugNodeAddresses, which a
// controller replaces with the InternalIP addresses of the node's Node
// object. The commands go through the ceph command-line tool
// (fencegroup.CLI), as the client named by id with its keyring.
package cephblock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/fencegroup"
)

// PlugNodeAddresses is the plug that stands for the node's own addresses:
// a controller replaces it with the InternalIP addresses of the node's
// Node object before the method runs (fence.PlugNodeAddresses).
const PlugNodeAddresses = fence.PlugNodeAddresses

// Defaults of Options.
const (
	// DefaultExpire is how long a blocklist entry lasts when the off does
	// not say: five years, as Rook's network fence has it (Ceph's own
	// default is an hour, after which a fenced node could write again).
	DefaultExpire = 5 * 365 * 24 * time.Hour
	// DefaultMaxAddresses bounds the addresses one CIDR of a plug may
	// cover.
	DefaultMaxAddresses = 16
	// MaxPlugEntries bounds the addresses and CIDRs of one plug (after
	// repeats are dropped): one command runs for each.
	MaxPlugEntries = 64
)

// Options configures a Device.
type Options struct {
	// CLI runs the ceph commands (its configuration, client and keyring).
	CLI fencegroup.CLI
	// Expire is how long an off's blocklist entries last; zero means
	// DefaultExpire.
	Expire time.Duration
	// MaxAddresses bounds the addresses one CIDR of a plug may cover; zero
	// means DefaultMaxAddresses.
	MaxAddresses int
	// AllowLoopback accepts loopback addresses in a plug. A node's address
	// never is one; only a Ceph cluster whose clients share its host (a
	// test cluster) blocklists them.
	AllowLoopback bool
	// Now is the clock a status compares the entries' expiry with; nil
	// means time.Now.
	Now func() time.Time
}

// Device is a fence.Device over a Ceph cluster's client blocklist. Its
// plugs are address lists (see the package documentation). Safe for
// concurrent use: each call runs its own ceph commands.
type Device struct {
	o Options
}

// New returns a Device. It does no I/O.
func New(o Options) (*Device, error) {
	if o.Expire == 0 {
		o.Expire = DefaultExpire
	}
	if o.Expire < time.Second {
		return nil, &fence.ParamError{Key: "expire", Value: o.Expire.String(), Reason: "want at least a second"}
	}
	if o.MaxAddresses == 0 {
		o.MaxAddresses = DefaultMaxAddresses
	}
	if o.MaxAddresses < 1 {
		return nil, &fence.ParamError{Key: "max_addresses", Value: strconv.Itoa(o.MaxAddresses), Reason: "want at least 1"}
	}
	return &Device{o: o}, nil
}

// ErrNoAddress means a plug names no address: a node whose Node object has
// no InternalIP, or an empty plug. Nothing is written.
var ErrNoAddress = errors.New("no address to blocklist")

// Prefixes parses a plug: addresses and CIDRs separated by commas (or
// white space), each CIDR covering at most maxAddresses addresses, at most
// MaxPlugEntries of them once repeats are dropped. No address a node's own
// can never be is taken: the unspecified address (0.0.0.0, ::), a
// broadcast, multicast, link-local or loopback address, or a CIDR that
// holds one. An error wraps fence.ErrUnknownPlug (and ErrNoAddress for an
// empty plug).
func Prefixes(plug string, maxAddresses int) ([]netip.Prefix, error) {
	return prefixes(plug, maxAddresses, false)
}

func prefixes(plug string, maxAddresses int, allowLoopback bool) ([]netip.Prefix, error) {
	if plug == PlugNodeAddresses {
		return nil, fmt.Errorf("%w: %w: the plug %s stands for the node's addresses, which its controller fills in; given to the driver as it is, it names none", fence.ErrUnknownPlug, ErrNoAddress, plug)
	}
	var out []netip.Prefix
	for _, f := range strings.FieldsFunc(plug, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		var p netip.Prefix
		if strings.Contains(f, "/") {
			var err error
			if p, err = netip.ParsePrefix(f); err != nil {
				return nil, fmt.Errorf("%w: %q is not an address or a CIDR", fence.ErrUnknownPlug, f)
			}
			if p.Masked() != p {
				return nil, fmt.Errorf("%w: %q has host bits set (did you mean %s?)", fence.ErrUnknownPlug, f, p.Masked())
			}
		} else {
			a, err := netip.ParseAddr(f)
			if err != nil {
				return nil, fmt.Errorf("%w: %q is not an address or a CIDR", fence.ErrUnknownPlug, f)
			}
			if a.Zone() != "" {
				return nil, fmt.Errorf("%w: %q: want a plain IPv4 or IPv6 address", fence.ErrUnknownPlug, f)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		if !p.IsValid() || p.Addr().Is4In6() {
			return nil, fmt.Errorf("%w: %q: want a plain IPv4 or IPv6 address", fence.ErrUnknownPlug, f)
		}
		if n := new(big.Int).Lsh(big.NewInt(1), uint(p.Addr().BitLen()-p.Bits())); n.Cmp(big.NewInt(int64(maxAddresses))) > 0 {
			return nil, fmt.Errorf("%w: %s covers %s addresses, more than max_addresses (%d): a typo must never blocklist a network", fence.ErrUnknownPlug, p, n, maxAddresses)
		}
		if why := notANodes(p, allowLoopback); why != "" {
			return nil, fmt.Errorf("%w: %q is %s, never a node's address", fence.ErrUnknownPlug, f, why)
		}
		if slices.Contains(out, p) {
			continue
		}
		if len(out) == MaxPlugEntries {
			return nil, fmt.Errorf("%w: more than %d addresses and CIDRs", fence.ErrUnknownPlug, MaxPlugEntries)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %w (the plug is empty: does the node's Node object list an InternalIP address?)", fence.ErrUnknownPlug, ErrNoAddress)
	}
	return out, nil
}

// notANodes says what p is when it is or holds an address that is never a
// node's own; "" when it is none of them.
func notANodes(p netip.Prefix, allowLoopback bool) string {
	first := p.Masked().Addr()
	last := first
	for i := p.Bits(); i < first.BitLen(); i++ {
		last = setBit(last, i)
	}
	for _, a := range []netip.Addr{first, last} {
		switch {
		case a.IsUnspecified():
			return "or holds the unspecified address"
		case a.Is4() && a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
			return "or holds the broadcast address"
		case a.IsMulticast():
			return "a multicast address"
		case a.IsLinkLocalUnicast():
			return "a link-local address"
		case a.IsLoopback() && !allowLoopback:
			return "a loopback address"
		}
	}
	return ""
}

// setBit sets bit i (0 the most significant) of a.
func setBit(a netip.Addr, i int) netip.Addr {
	b := a.AsSlice()
	b[i/8] |= 0x80 >> (i % 8)
	out, _ := netip.AddrFromSlice(b)
	return out
}

// entry is how Ceph names a prefix in its blocklist: "10.0.0.5:0/0" for an
// address, "10.0.0.8:0/30" for a range.
func entry(p netip.Prefix) string {
	if p.IsSingleIP() {
		return net.JoinHostPort(p.Addr().String(), "0") + "/0"
	}
	return net.JoinHostPort(p.Addr().String(), "0") + "/" + strconv.Itoa(p.Bits())
}

// Blocklist is what the cluster blocklists.
type Blocklist struct {
	// Addrs and Ranges are the entries as Ceph names them, with the time
	// each lapses (zero when Ceph's answer did not parse as one).
	Addrs, Ranges map[string]time.Time
}

// Has reports whether p is blocklisted, however soon its entry lapses.
func (b *Blocklist) Has(p netip.Prefix) bool {
	_, ok := b.Until(p)
	return ok
}

// Until reports when p's entry lapses, and whether there is one. The time
// is zero when Ceph's expiry did not parse.
func (b *Blocklist) Until(p netip.Prefix) (time.Time, bool) {
	if p.IsSingleIP() {
		u, ok := b.Addrs[entry(p)]
		return u, ok
	}
	u, ok := b.Ranges[entry(p)]
	return u, ok
}

// ParseBlocklist parses the output of ceph osd blocklist ls --format json:
// a JSON array of addresses ({"addr", "until"}), followed, on a cluster
// that blocklists ranges, by a JSON array of ranges ({"range", "until"}).
func ParseBlocklist(out []byte) (*Blocklist, error) {
	b := &Blocklist{Addrs: map[string]time.Time{}, Ranges: map[string]time.Time{}}
	dec := json.NewDecoder(bytes.NewReader(out))
	for i := 0; ; i++ {
		var items []struct {
			Addr  string `json:"addr"`
			Range string `json:"range"`
			Until string `json:"until"`
		}
		err := dec.Decode(&items)
		if errors.Is(err, io.EOF) && i > 0 {
			return b, nil
		}
		if err != nil {
			return nil, fmt.Errorf("cephblock: ceph osd blocklist ls: not the JSON lists expected: %w", err)
		}
		if i > 1 {
			return nil, errors.New("cephblock: ceph osd blocklist ls: more than two JSON lists")
		}
		for _, it := range items {
			until, _ := time.Parse("2006-01-02T15:04:05.999999-0700", it.Until)
			switch {
			case it.Addr != "":
				b.Addrs[it.Addr] = until
			case it.Range != "":
				b.Ranges[strings.TrimPrefix(it.Range, "cidr:")] = until
			}
		}
	}
}

// List reads the cluster's blocklist.
func (d *Device) List(ctx context.Context) (*Blocklist, error) {
	out, err := d.o.CLI.Command(ctx, "osd", "blocklist", "ls", "--format", "json")
	if err != nil {
		return nil, err
	}
	return ParseBlocklist(out)
}

// Status reports the plug off when every one of its addresses and ranges
// is blocklisted for at least half the method's Expire from now, on when
// none is, and unknown (no error) when some are: an off or an on half
// done. An entry that lapses sooner (another tool's, an administrator's
// with Ceph's default hour, one already expired but still listed, one
// whose expiry does not parse) is no isolation to trust, and counts as
// none: an off that reads it switches, and writes the entry again with the
// method's expiry (Ceph keeps an existing entry's expiry on an add, so the
// off removes that entry first); an on leaves an entry that is not its own
// to lapse.
func (d *Device) Status(ctx context.Context, plug string) (fence.State, error) {
	ps, err := d.prefixes(plug)
	if err != nil {
		return fence.StateUnknown, err
	}
	b, err := d.List(ctx)
	if err != nil {
		return fence.StateUnknown, err
	}
	lasting := 0
	for _, p := range ps {
		if d.lasts(b, p) {
			lasting++
		}
	}
	switch lasting {
	case len(ps):
		return fence.StateOff, nil
	case 0:
		return fence.StateOn, nil
	}
	return fence.StateUnknown, nil
}

// lasts reports whether b holds an entry for p that lasts at least half
// the method's Expire from now: an isolation to trust.
func (d *Device) lasts(b *Blocklist, p netip.Prefix) bool {
	now := time.Now
	if d.o.Now != nil {
		now = d.o.Now
	}
	until, ok := b.Until(p)
	return ok && !until.IsZero() && !until.Before(now().Add(d.o.Expire/2))
}

func (d *Device) prefixes(plug string) ([]netip.Prefix, error) {
	return prefixes(plug, d.o.MaxAddresses, d.o.AllowLoopback)
}

// Set blocklists the plug's addresses and ranges (off), until Expire, or
// removes them from the blocklist (on). A plug that does not parse is
// refused before any command runs, marked fence.NotDone.
func (d *Device) Set(ctx context.Context, plug string, s fence.State) error {
	ps, err := d.prefixes(plug)
	if err != nil {
		return fence.NotDone(err)
	}
	if s != fence.StateOff && s != fence.StateOn {
		return fence.NotDone(fmt.Errorf("cephblock: cannot set %v", s))
	}
	if err := ctx.Err(); err != nil {
		return fence.NotDone(err)
	}
	expire := strconv.FormatInt(int64(d.o.Expire/time.Second), 10)
	var listed *Blocklist
	if s == fence.StateOff {
		// An entry there already keeps its expiry on an add: one that
		// lapses too soon is removed first, then written with Expire.
		if listed, err = d.List(ctx); err != nil {
			return fence.NotDone(fmt.Errorf("cephblock: reading the blocklist before the off: %w", err))
		}
	}
	for i, p := range ps {
		if listed != nil && listed.Has(p) && !d.lasts(listed, p) {
			rm := []string{"osd", "blocklist", "rm", p.Addr().String()}
			if !p.IsSingleIP() {
				rm = []string{"osd", "blocklist", "range", "rm", p.String()}
			}
			if _, err := d.o.CLI.Command(ctx, rm...); err != nil {
				return fmt.Errorf("cephblock: removing %s's entry, which lapses too soon, to write it again (%d of %d): %w", p, i+1, len(ps), err)
			}
		}
		var sub []string
		switch {
		case s == fence.StateOff && p.IsSingleIP():
			sub = []string{"osd", "blocklist", "add", p.Addr().String(), expire}
		case s == fence.StateOff:
			sub = []string{"osd", "blocklist", "range", "add", p.String(), expire}
		case p.IsSingleIP():
			sub = []string{"osd", "blocklist", "rm", p.Addr().String()}
		default:
			sub = []string{"osd", "blocklist", "range", "rm", p.String()}
		}
		if _, err := d.o.CLI.Command(ctx, sub...); err != nil {
			// Its effect, if any, and that of the commands before it,
			// are read back by the status that follows.
			return fmt.Errorf("cephblock: %s of %s (%d of %d): %w", map[bool]string{true: "blocklisting", false: "unblocklisting"}[s == fence.StateOff], p, i+1, len(ps), err)
		}
	}
	return nil
}

// Monitor checks that the cluster answers and lets the client read its
// blocklist (fence.Monitor).
func (d *Device) Monitor(ctx context.Context) error {
	_, err := d.List(ctx)
	return err
}

// String describes the device without credentials.
func (d *Device) String() string {
	return fmt.Sprintf("cephblock{conf=%q id=%q}", d.o.CLI.Conf, d.o.CLI.ID)
}

var (
	_ fence.Device  = (*Device)(nil)
	_ fence.Monitor = (*Device)(nil)
)
