package snmpsim

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gosnmp/gosnmp"

	"github.com/fencekit/fencekit/fence"
)

// Responder is an SNMPv1 and v2c agent in the test process, on 127.0.0.1,
// that emulates a model with the same objects as a simulator's handler. It
// needs no snmpd, so that examples run everywhere, and it can tamper with
// its replies, so that tests can feed a driver any answer. It has no SNMPv3;
// Start's simulators are the real peers.
type Responder struct {
	// Port is the responder's UDP port on Host.
	Port int
	// Options are the options it runs with, defaults filled in (Users is
	// not used).
	Options Options

	conn     net.PacketConn
	spec     spec
	done     chan struct{}
	requests atomic.Int64

	mu     sync.Mutex
	st     *state
	drop   bool
	tamper func(req gosnmp.PDUType, vars []gosnmp.SnmpPDU) []gosnmp.SnmpPDU
}

// NewResponder starts a responder with o. Close it when done.
func NewResponder(o Options) (*Responder, error) {
	o = withDefaults(o)
	sp, ok := specs[o.Model]
	if !ok {
		return nil, fmt.Errorf("snmpsim: unknown model %d", o.Model)
	}
	c, err := net.ListenPacket("udp4", net.JoinHostPort(Host, "0"))
	if err != nil {
		return nil, err
	}
	r := &Responder{Port: c.LocalAddr().(*net.UDPAddr).Port, Options: o, conn: c, spec: sp,
		done: make(chan struct{}), st: newState(o.Outlets, o.Names, sp.names)}
	go r.serve()
	return r, nil
}

// Addr returns the responder's address, host:port.
func (r *Responder) Addr() string { return net.JoinHostPort(Host, strconv.Itoa(r.Port)) }

// Close stops the responder.
func (r *Responder) Close() error {
	err := r.conn.Close()
	<-r.done
	return err
}

// Requests returns how many requests the responder received (answered or
// not).
func (r *Responder) Requests() int64 { return r.requests.Load() }

// Truth returns an outlet's true state, by number.
func (r *Responder) Truth(plug string) fence.State {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := strconv.Atoi(plug)
	if err != nil || n < 1 || n > r.Options.Outlets {
		return fence.StateUnknown
	}
	if r.st.on(n) {
		return fence.StateOn
	}
	return fence.StateOff
}

// SetTruth sets an outlet's state, by number, and clears its raw value.
func (r *Responder) SetTruth(plug string, v fence.State) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.st.Outlets[plug] = v.String()
	delete(r.st.Raw, plug)
}

// SetRaw makes an outlet's state object report v, until the outlet is
// switched or SetTruth sets it.
func (r *Responder) SetRaw(outlet, v int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.st.Raw[strconv.Itoa(outlet)] = v
}

// SetName renames an outlet.
func (r *Responder) SetName(outlet int, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.st.Names[strconv.Itoa(outlet)] = name
}

// SetSysObjectID changes the sysObjectID the responder reports, as if
// another device took its address.
func (r *Responder) SetSysObjectID(oid string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Options.SysObjectID = oid
}

// Drop makes the responder ignore every request (as an agent ignores a
// wrong community), or answer again.
func (r *Responder) Drop(drop bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drop = drop
}

// Tamper installs f, which may change the variables of every reply before
// it is sent (its name, type and value); nil removes it.
func (r *Responder) Tamper(f func(req gosnmp.PDUType, vars []gosnmp.SnmpPDU) []gosnmp.SnmpPDU) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tamper = f
}

// Sets returns how many SETs the responder applied or refused.
func (r *Responder) Sets() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st.SetCount
}

func (r *Responder) serve() {
	defer close(r.done)
	buf := make([]byte, 65536)
	for {
		n, from, err := r.conn.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		r.requests.Add(1)
		if out := r.answer(buf[:n]); out != nil {
			_, _ = r.conn.WriteTo(out, from)
		}
	}
}

// maxBulk bounds the variables of a GETBULK reply.
const maxBulk = 200

// answer returns the reply to one request, or nil to ignore it.
func (r *Responder) answer(req []byte) []byte {
	x := &gosnmp.GoSNMP{Version: gosnmp.Version2c}
	p, err := x.SnmpDecodePacket(req)
	if err != nil || (p.Version != gosnmp.Version1 && p.Version != gosnmp.Version2c) {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rw := p.Community == r.Options.Community
	if r.drop || (!rw && p.Community != r.Options.ROCommunity) {
		return nil
	}
	v1 := p.Version == gosnmp.Version1
	res := &gosnmp.SnmpPacket{Version: p.Version, Community: p.Community, PDUType: gosnmp.GetResponse, RequestID: p.RequestID}
	objs := r.objects()
	find := func(oid []int, next bool) (gosnmp.SnmpPDU, bool) {
		for _, o := range objs {
			c := slices.Compare(o.oid, oid)
			if (!next && c == 0) || (next && c > 0) {
				return o.pdu(), true
			}
		}
		return gosnmp.SnmpPDU{}, false
	}
	fail := func(status gosnmp.SNMPError, i int) {
		res.Error, res.ErrorIndex = status, uint8(i+1)
		res.Variables = p.Variables
	}
	switch p.PDUType {
	case gosnmp.GetRequest, gosnmp.GetNextRequest:
		next := p.PDUType == gosnmp.GetNextRequest
		for i, v := range p.Variables {
			oid, _ := parseOID(v.Name)
			pdu, ok := find(oid, next)
			if !ok {
				if v1 {
					fail(gosnmp.NoSuchName, i)
					break
				}
				pdu = gosnmp.SnmpPDU{Name: v.Name, Type: gosnmp.NoSuchInstance}
				if next {
					pdu.Type = gosnmp.EndOfMibView
				}
			}
			res.Variables = append(res.Variables, pdu)
		}
	case gosnmp.GetBulkRequest:
		if v1 {
			return nil
		}
		cur := make([][]int, len(p.Variables))
		for i, v := range p.Variables {
			cur[i], _ = parseOID(v.Name)
		}
		for rep := 0; rep < int(p.MaxRepetitions) && len(res.Variables) < maxBulk; rep++ {
			for i := range cur {
				pdu, ok := find(cur[i], true)
				if !ok {
					pdu = gosnmp.SnmpPDU{Name: formatOID(cur[i]), Type: gosnmp.EndOfMibView}
				} else {
					cur[i], _ = parseOID(pdu.Name)
				}
				res.Variables = append(res.Variables, pdu)
			}
		}
	case gosnmp.SetRequest:
		for i, v := range p.Variables {
			oid, _ := parseOID(v.Name)
			if !rw {
				if v1 {
					fail(gosnmp.NoSuchName, i)
				} else {
					fail(gosnmp.NoAccess, i)
				}
				break
			}
			val, isInt := v.Value.(int)
			answer := "wrong-type"
			if v.Type == gosnmp.Integer && isInt {
				answer = r.spec.write(r.st, r.Options.Outlets, oid, val)
			}
			r.st.SetCount++
			switch answer {
			case "":
				res.Variables = append(res.Variables, v)
				continue
			case "wrong-value":
				fail(map[bool]gosnmp.SNMPError{true: gosnmp.BadValue, false: gosnmp.WrongValue}[v1], i)
			case "wrong-type":
				fail(map[bool]gosnmp.SNMPError{true: gosnmp.BadValue, false: gosnmp.WrongType}[v1], i)
			default:
				fail(map[bool]gosnmp.SNMPError{true: gosnmp.NoSuchName, false: gosnmp.NotWritable}[v1], i)
			}
			break
		}
	default:
		return nil
	}
	r.st.events, r.st.sets = nil, nil // the responder keeps no logs
	if r.tamper != nil {
		res.Variables = r.tamper(p.PDUType, slices.Clone(res.Variables))
	}
	return marshal(res)
}

// marshal encodes a reply. A reply the tamper hook made unencodable (an
// IPAddress that is no address, which gosnmp panics on) is not sent, as a
// device that drops a datagram: the responder goes on serving.
func marshal(res *gosnmp.SnmpPacket) (out []byte) {
	defer func() {
		if recover() != nil {
			out = nil
		}
	}()
	out, err := res.MarshalMsg()
	if err != nil {
		return nil
	}
	return out
}

// objects returns the model's objects and the system group's sysObjectID,
// sorted. The lock must be held.
func (r *Responder) objects() []object {
	objs := r.spec.objects(r.st, r.Options.Outlets)
	sysOID, _ := parseOID(".1.3.6.1.2.1.1.2.0")
	objs = append(objs, object{oid: sysOID, typ: "objectid", val: r.Options.SysObjectID})
	slices.SortFunc(objs, func(a, b object) int { return slices.Compare(a.oid, b.oid) })
	return objs
}

// pdu returns the object as a variable of a reply.
func (o object) pdu() gosnmp.SnmpPDU {
	name := formatOID(o.oid)
	switch o.typ {
	case "integer":
		n, _ := strconv.Atoi(o.val)
		return gosnmp.SnmpPDU{Name: name, Type: gosnmp.Integer, Value: n}
	case "objectid":
		return gosnmp.SnmpPDU{Name: name, Type: gosnmp.ObjectIdentifier, Value: strings.TrimPrefix(o.val, ".")}
	}
	return gosnmp.SnmpPDU{Name: name, Type: gosnmp.OctetString, Value: []byte(o.val)}
}
