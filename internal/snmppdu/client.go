package snmppdu

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gosnmp/gosnmp"

	"github.com/fencekit/fencekit/fence"
)

// errConnect marks a failure to set up the socket (a host name that does
// not resolve): nothing was sent.
var errConnect = errors.New("cannot reach the device")

// recConn counts the datagrams sent and, for SNMPv3, keeps the last one
// received, so that an unauthenticated report (wrong credentials) can be
// read after gosnmp has refused it.
type recConn struct {
	net.Conn
	sent atomic.Int64
	keep bool
	last []byte // only with the device's turn held
}

// Read reads a datagram, and keeps a copy for SNMPv3.
func (c *recConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if c.keep && n > 0 {
		c.last = append(c.last[:0], b[:n]...)
	}
	return n, err
}

// Write sends a datagram, and counts it.
func (c *recConn) Write(b []byte) (int, error) {
	c.sent.Add(1)
	return c.Conn.Write(b)
}

// session returns the device's SNMP session, setting it up on first use
// (a UDP socket: nothing is sent). The turn must be held.
func (d *Device) session() (*gosnmp.GoSNMP, error) {
	if d.g != nil {
		return d.g, nil
	}
	g := &gosnmp.GoSNMP{
		Target:    d.cfg.Host,
		Port:      uint16(d.cfg.Port),
		Transport: "udp",
		Community: d.cfg.Community.Reveal(),
		Version:   d.set.version,
		Timeout:   d.cfg.Timeout,
		Retries:   d.cfg.Retries,
		MaxOids:   gosnmp.MaxOids,
		Context:   context.Background(),
	}
	if d.set.version == gosnmp.Version3 {
		g.SecurityModel = gosnmp.UserSecurityModel
		g.MsgFlags = d.set.flags
		g.SecurityParameters = &gosnmp.UsmSecurityParameters{
			UserName:                 d.cfg.Username,
			AuthenticationProtocol:   d.set.auth,
			AuthenticationPassphrase: d.cfg.AuthPassword.Reveal(),
			PrivacyProtocol:          d.set.priv,
			PrivacyPassphrase:        d.cfg.PrivPassword.Reveal(),
		}
	}
	if err := g.Connect(); err != nil {
		return nil, fmt.Errorf("%w: %s", errConnect, d.scrub(err.Error()))
	}
	d.conn = &recConn{Conn: g.Conn, keep: d.set.version == gosnmp.Version3}
	g.Conn = d.conn
	d.g = g
	return g, nil
}

// exchange runs one request with the turn held: f calls gosnmp on the
// session. Reads are sent again within the retries; a write is sent once.
// A context that ends stops the wait for the reply at once.
func (d *Device) exchange(ctx context.Context, r *request, f func(*gosnmp.GoSNMP) (*gosnmp.SnmpPacket, error)) (*gosnmp.SnmpPacket, error) {
	r.tries, r.timeout = 1+d.cfg.Retries, d.cfg.Timeout
	if r.write {
		r.tries = 1
	}
	if err := ctx.Err(); err != nil {
		return nil, d.fail(*r, d.classify(ctx, *r, err))
	}
	g, err := d.session()
	if err != nil {
		return nil, d.fail(*r, d.classify(ctx, *r, err))
	}
	if d.set.version == gosnmp.Version3 && d.engineID == "" && !r.discovery {
		if err := d.discover(ctx, g); err != nil {
			return nil, fence.NotDone(err) // the request itself was not sent
		}
	}
	// The call ends when ctx does, or when the device is closed.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopLife := context.AfterFunc(d.life, cancel)
	defer stopLife()
	g.Context = cctx
	g.Timeout = d.cfg.Timeout
	g.Retries = r.tries - 1
	conn := d.conn
	conn.last = conn.last[:0]
	before := conn.sent.Load()
	fired := make(chan struct{})
	stop := context.AfterFunc(cctx, func() {
		defer close(fired)
		_ = conn.Conn.SetDeadline(time.Unix(1, 0)) // wake the read at once
	})
	res, err := f(g)
	if !stop() {
		<-fired
	}
	g.Context = context.Background()
	d.requests.Add(conn.sent.Load() - before)
	r.sent = conn.sent.Load() > before
	if err == nil && res == nil {
		err = fmt.Errorf("%w: no reply packet", ErrMalformed)
	}
	if err == nil && res.Error != gosnmp.NoError {
		err = &snmpStatus{status: res.Error, index: res.ErrorIndex}
	}
	if err != nil {
		if len(conn.last) > 0 {
			r.report = reportOID(conn.last)
		}
		return res, d.fail(*r, d.classify(ctx, *r, err))
	}
	return res, nil
}

// fail wraps a classified cause into the device's *Error.
func (d *Device) fail(r request, err error) error {
	return &Error{Driver: d.driver, Addr: d.addr, Op: r.op, Object: r.object, OID: r.oid, Err: err}
}

// reportOID returns the OID of an SNMPv3 report's variable, if pkt is a
// report that can be read without keys (agents send the reports of refused
// messages unauthenticated and in clear).
func reportOID(pkt []byte) string {
	x := &gosnmp.GoSNMP{
		Version: gosnmp.Version3, SecurityModel: gosnmp.UserSecurityModel, MsgFlags: gosnmp.NoAuthNoPriv,
		SecurityParameters: &gosnmp.UsmSecurityParameters{UserName: "report"},
	}
	p, err := x.SnmpDecodePacket(pkt)
	if err != nil || p == nil || p.PDUType != gosnmp.Report || len(p.Variables) != 1 {
		return ""
	}
	return normOID(p.Variables[0].Name)
}

// get reads oids in one GET; the turn must be held. The reply must name
// the objects asked for, in order. oid is the object errors name.
func (d *Device) get(ctx context.Context, object, oid string, oids []string) ([]gosnmp.SnmpPDU, error) {
	r := request{op: "GET", object: object, oid: oid}
	res, err := d.exchange(ctx, &r, func(g *gosnmp.GoSNMP) (*gosnmp.SnmpPacket, error) { return g.Get(oids) })
	if err != nil {
		var st *snmpStatus
		var e *Error
		if errors.As(err, &st) && st.status == gosnmp.NoSuchName && int(st.index) >= 1 && int(st.index) <= len(oids) && errors.As(err, &e) {
			// SNMPv1 names the missing object by its position.
			e.OID = oids[st.index-1]
		}
		return nil, err
	}
	if len(res.Variables) != len(oids) {
		return nil, d.fail(r, fmt.Errorf("%w: %d objects in the reply to a GET of %d", ErrMalformed, len(res.Variables), len(oids)))
	}
	for i, v := range res.Variables {
		if normOID(v.Name) != oids[i] {
			return nil, d.fail(r, fmt.Errorf("%w: the reply names %s where %s was asked", ErrMalformed, normOID(v.Name), oids[i]))
		}
	}
	return res.Variables, nil
}

// setInt writes one INTEGER in one SET, sent once; the turn must be held.
func (d *Device) setInt(ctx context.Context, object, oid string, v int) error {
	r := request{op: "SET", object: object, oid: oid, write: true}
	res, err := d.exchange(ctx, &r, func(g *gosnmp.GoSNMP) (*gosnmp.SnmpPacket, error) {
		return g.Set([]gosnmp.SnmpPDU{{Name: oid, Type: gosnmp.Integer, Value: v}})
	})
	if err != nil {
		return err
	}
	// A response without error status means the device took the value.
	// Check that it is the answer to this request: the same object.
	if len(res.Variables) != 1 || normOID(res.Variables[0].Name) != oid {
		return d.fail(r, fence.OutcomeUnknown(fmt.Errorf("%w: the reply to the SET names other objects", ErrMalformed)))
	}
	return nil
}

// maxWalk bounds the rows of a walk: no PDU has that many outlets.
const maxWalk = 2 * MaxOutlet

// walk reads the columns cols of a table together, row by row: GETBULK
// (SNMPv2c and v3) or GETNEXT (SNMPv1) until each column has left its
// subtree. It returns, per column, its cells in order. The turn must be
// held. It is bounded by maxWalk cells per column, a request count, and
// ctx.
func (d *Device) walk(ctx context.Context, object string, cols []string) ([][]gosnmp.SnmpPDU, error) {
	out := make([][]gosnmp.SnmpPDU, len(cols))
	cur := append([]string(nil), cols...)
	done := make([]bool, len(cols))
	reps := uint32(maxRepetitions)
	op := "GETBULK"
	if d.set.version == gosnmp.Version1 {
		op = "GETNEXT"
	}
	for requests := 0; requests < maxWalk+len(cols)+16; requests++ {
		var active []int
		var oids []string
		for i := range cols {
			if !done[i] {
				active = append(active, i)
				oids = append(oids, cur[i])
			}
		}
		if len(active) == 0 {
			return out, nil
		}
		r := request{op: op, object: object, oid: strings.Join(oids, " ")}
		res, err := d.exchange(ctx, &r, func(g *gosnmp.GoSNMP) (*gosnmp.SnmpPacket, error) {
			if d.set.version == gosnmp.Version1 {
				return g.GetNext(oids)
			}
			return g.GetBulk(oids, 0, reps)
		})
		var st *snmpStatus
		if errors.As(err, &st) {
			switch {
			case st.status == gosnmp.NoSuchName && d.set.version == gosnmp.Version1 && int(st.index) >= 1 && int(st.index) <= len(active):
				// SNMPv1's end of the MIB view for that column.
				done[active[st.index-1]] = true
				continue
			case st.status == gosnmp.TooBig && reps > 1:
				reps /= 2
				continue
			}
		}
		if err != nil {
			return nil, err
		}
		if len(res.Variables) == 0 || len(res.Variables)%len(active) != 0 {
			return nil, d.fail(r, fmt.Errorf("%w: %d objects in the reply to a walk of %d columns", ErrMalformed, len(res.Variables), len(active)))
		}
		for j, v := range res.Variables {
			i := active[j%len(active)]
			if done[i] {
				continue
			}
			name := normOID(v.Name)
			if v.Type == gosnmp.EndOfMibView || v.Type == gosnmp.NoSuchObject || v.Type == gosnmp.NoSuchInstance ||
				!strings.HasPrefix(name, cols[i]+".") {
				done[i] = true
				continue
			}
			if cmpOID(name, cur[i]) <= 0 {
				return nil, d.fail(r, fmt.Errorf("%w: the walk does not advance (%s after %s)", ErrMalformed, name, cur[i]))
			}
			if len(out[i]) >= maxWalk {
				return nil, d.fail(r, fmt.Errorf("%w: more than %d rows", ErrMalformed, maxWalk))
			}
			cur[i] = name
			out[i] = append(out[i], v)
		}
	}
	return nil, d.fail(request{op: op, object: object}, fmt.Errorf("%w: the walk did not end", ErrMalformed))
}

// maxRepetitions is the GETBULK max-repetitions of walks: a PDU's outlets
// in one reply, without a reply so big that an agent refuses it.
const maxRepetitions = 25

// cmpOID compares two numeric OIDs sub-identifier by sub-identifier.
func cmpOID(a, b string) int {
	as := strings.Split(strings.TrimPrefix(a, "."), ".")
	bs := strings.Split(strings.TrimPrefix(b, "."), ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, errx := strconv.ParseUint(as[i], 10, 64)
		y, erry := strconv.ParseUint(bs[i], 10, 64)
		if errx != nil || erry != nil {
			if c := strings.Compare(as[i], bs[i]); c != 0 {
				return c
			}
			continue
		}
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
	}
	switch {
	case len(as) < len(bs):
		return -1
	case len(as) > len(bs):
		return 1
	}
	return 0
}

// intValue reads an INTEGER (or an unsigned) value of a reply.
func intValue(v gosnmp.SnmpPDU) (int64, error) {
	switch v.Type {
	case gosnmp.NoSuchObject, gosnmp.NoSuchInstance, gosnmp.EndOfMibView:
		return 0, errNoSuch{v.Type}
	case gosnmp.Integer, gosnmp.Gauge32, gosnmp.Counter32, gosnmp.Uinteger32, gosnmp.TimeTicks:
	default:
		return 0, fmt.Errorf("%w: a %v where an INTEGER was expected", ErrMalformed, v.Type)
	}
	switch x := v.Value.(type) {
	case int:
		return int64(x), nil
	case int64:
		return x, nil
	case uint:
		return int64(x), nil
	case uint32:
		return int64(x), nil
	case uint64:
		if x > 1<<62 {
			return 0, fmt.Errorf("%w: value %d out of range", ErrMalformed, x)
		}
		return int64(x), nil
	}
	return 0, fmt.Errorf("%w: an INTEGER of Go type %T", ErrMalformed, v.Value)
}

// errNoSuch is a noSuchObject or noSuchInstance value (SNMPv2c and v3).
type errNoSuch struct{ t gosnmp.Asn1BER }

// Error returns the exception's SNMPv2 name.
func (e errNoSuch) Error() string {
	switch e.t {
	case gosnmp.NoSuchObject:
		return "noSuchObject"
	case gosnmp.NoSuchInstance:
		return "noSuchInstance"
	}
	return "endOfMibView"
}

// stringValue reads an OCTET STRING value of a reply.
func stringValue(v gosnmp.SnmpPDU) (string, error) {
	switch v.Type {
	case gosnmp.NoSuchObject, gosnmp.NoSuchInstance, gosnmp.EndOfMibView:
		return "", errNoSuch{v.Type}
	case gosnmp.OctetString:
		if b, ok := v.Value.([]byte); ok {
			return string(b), nil
		}
	}
	return "", fmt.Errorf("%w: a %v where an OCTET STRING was expected", ErrMalformed, v.Type)
}

// oidValue reads an OBJECT IDENTIFIER value of a reply.
func oidValue(v gosnmp.SnmpPDU) (string, error) {
	switch v.Type {
	case gosnmp.NoSuchObject, gosnmp.NoSuchInstance, gosnmp.EndOfMibView:
		return "", errNoSuch{v.Type}
	case gosnmp.ObjectIdentifier:
		if s, ok := v.Value.(string); ok {
			return normOID(s), nil
		}
	}
	return "", fmt.Errorf("%w: a %v where an OBJECT IDENTIFIER was expected", ErrMalformed, v.Type)
}
