package snmppdu

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"net"
	"time"

	"github.com/gosnmp/gosnmp"
)

// SNMPv3 keys, made here rather than by gosnmp.
//
// An SNMPv3 user's keys are its passphrases hashed over a megabyte (RFC
// 3414, A.2) and then localised to the agent's engine ID. gosnmp makes
// them only once it knows the engine ID, from the reply to its discovery
// request, and hashes the megabyte 64 bytes at a time with an allocation
// for each (and, for AES-128, a third megabyte it then discards): about
// 30 ms per device, most of a fencectl run. So this package discovers the
// engine itself, with the same request gosnmp sends, makes the keys with
// the same algorithms in large writes, and hands gosnmp the engine's
// parameters and the localised keys, which it then uses as they are.

// passwordToKey hashes a megabyte of the passphrase repeated (RFC 3414,
// A.2.1 and A.2.2).
func passwordToKey(h hash.Hash, password string) []byte {
	const total = 1 << 20
	n := len(password)
	per := max(1, 4096/n) * n // a whole number of repetitions
	buf := make([]byte, per)
	for i := range buf {
		buf[i] = password[i%n]
	}
	h.Reset()
	for done := 0; done < total; {
		k := min(per, total-done)
		h.Write(buf[:k])
		done += k
	}
	return h.Sum(nil)
}

// localize turns a key into the one of an engine: H(key | engineID | key).
func localize(h hash.Hash, key []byte, engineID string) []byte {
	h.Reset()
	h.Write(key)
	h.Write([]byte(engineID))
	h.Write(key)
	return h.Sum(nil)
}

// localKeys returns the localised authentication and privacy keys of an
// SNMPv3 user for engineID, as gosnmp makes them (v3_usm.go: genlocalkey,
// genlocalPrivKey and its key extensions).
func localKeys(auth gosnmp.SnmpV3AuthProtocol, priv gosnmp.SnmpV3PrivProtocol, authPass, privPass, engineID string) (secret, privacy []byte) {
	if auth <= gosnmp.NoAuth {
		return nil, nil
	}
	h := auth.HashType().New()
	secret = localize(h, passwordToKey(h, authPass), engineID)
	if priv <= gosnmp.NoPriv {
		return secret, nil
	}
	key := localize(h, passwordToKey(h, privPass), engineID)
	keylen := 16
	switch priv {
	case gosnmp.DES:
		return secret, key // gosnmp keeps the whole key: DES key and pre-IV
	case gosnmp.AES192, gosnmp.AES192C:
		keylen = 24
	case gosnmp.AES256, gosnmp.AES256C:
		keylen = 32
	}
	if len(key) < keylen {
		switch priv {
		case gosnmp.AES192C, gosnmp.AES256C:
			// The 3DES draft's extension (Cisco's AES192C, AES256C): the key
			// localised again, taken as a passphrase.
			key = append(key, localize(h, passwordToKey(h, string(key)), engineID)...)
		default:
			// The AES draft's extension (net-snmp's AES-192, AES-256): the
			// key's hash appended.
			h.Reset()
			h.Write(key)
			key = h.Sum(key)
		}
	}
	return secret, key[:keylen]
}

// engine is what a discovery reply tells of the agent's SNMP engine.
type engine struct {
	id          string
	boots, time uint32
}

// discover learns the agent's engine ID, boots and time with an
// unauthenticated request (RFC 3414, 4), as gosnmp would, and installs
// them and the localised keys in the session's security parameters, so
// that gosnmp neither discovers nor hashes. The turn must be held.
func (d *Device) discover(ctx context.Context, g *gosnmp.GoSNMP) error {
	var e engine
	r := request{op: "GET", object: "SNMPv3 engine discovery", discovery: true}
	_, err := d.exchange(ctx, &r, func(g *gosnmp.GoSNMP) (*gosnmp.SnmpPacket, error) {
		var err error
		e, err = d.discoverOnce(ctx, g)
		if err != nil {
			return nil, err
		}
		return &gosnmp.SnmpPacket{}, nil
	})
	if err != nil {
		return err
	}
	sp, ok := g.SecurityParameters.(*gosnmp.UsmSecurityParameters)
	if !ok {
		return d.fail(r, errors.New("no user-based security parameters"))
	}
	secret, privacy := localKeys(d.set.auth, d.set.priv, d.cfg.AuthPassword.Reveal(), d.cfg.PrivPassword.Reveal(), e.id)
	sp.AuthoritativeEngineID = e.id
	sp.AuthoritativeEngineBoots = e.boots
	sp.AuthoritativeEngineTime = e.time
	sp.SecretKey, sp.PrivacyKey = secret, privacy
	g.ContextEngineID = e.id
	d.engineID = e.id
	return nil
}

// discoverOnce sends the discovery request and reads its report, within
// the session's timeout and retries and ctx; exchange wakes the read when
// ctx ends.
func (d *Device) discoverOnce(ctx context.Context, g *gosnmp.GoSNMP) (engine, error) {
	var ids [8]byte
	if _, err := rand.Read(ids[:]); err != nil {
		return engine{}, err
	}
	msgID := binary.BigEndian.Uint32(ids[:4]) & 0x7fffffff
	pkt := &gosnmp.SnmpPacket{
		Version:            gosnmp.Version3,
		MsgFlags:           gosnmp.Reportable | gosnmp.NoAuthNoPriv,
		SecurityModel:      gosnmp.UserSecurityModel,
		SecurityParameters: &gosnmp.UsmSecurityParameters{},
		PDUType:            gosnmp.GetRequest,
		MsgID:              msgID,
		RequestID:          binary.BigEndian.Uint32(ids[4:]) & 0x7fffffff,
	}
	out, err := pkt.MarshalMsg()
	if err != nil {
		return engine{}, fmt.Errorf("marshal the discovery request: %w", err)
	}
	decoder := &gosnmp.GoSNMP{Version: gosnmp.Version3, SecurityModel: gosnmp.UserSecurityModel, MsgFlags: gosnmp.NoAuthNoPriv,
		SecurityParameters: &gosnmp.UsmSecurityParameters{UserName: "discovery"}}
	buf := make([]byte, 65536)
	var last error
	for try := 0; try <= g.Retries; try++ {
		if err := ctx.Err(); err != nil {
			return engine{}, err
		}
		dl := time.Now().Add(g.Timeout)
		if cd, ok := ctx.Deadline(); ok && cd.Before(dl) {
			dl = cd
		}
		if err := g.Conn.SetDeadline(dl); err != nil {
			return engine{}, err
		}
		if _, err := g.Conn.Write(out); err != nil {
			return engine{}, err
		}
		for reads := 0; reads < 64; reads++ {
			n, err := g.Conn.Read(buf)
			if err != nil {
				last = err
				break
			}
			p, err := decoder.SnmpDecodePacket(buf[:n])
			if err != nil || p.MsgID != msgID || p.PDUType != gosnmp.Report {
				continue // not the answer to this request
			}
			usp, ok := p.SecurityParameters.(*gosnmp.UsmSecurityParameters)
			if !ok || len(usp.AuthoritativeEngineID) < 5 || len(usp.AuthoritativeEngineID) > 32 {
				return engine{}, fmt.Errorf("%w: the discovery report has no valid engine ID", ErrMalformed)
			}
			return engine{id: usp.AuthoritativeEngineID, boots: usp.AuthoritativeEngineBoots, time: usp.AuthoritativeEngineTime}, nil
		}
		var ne net.Error
		if last != nil && !(errors.As(last, &ne) && ne.Timeout()) {
			return engine{}, last
		}
	}
	if last == nil {
		last = errors.New("no discovery report")
	}
	return engine{}, fmt.Errorf("%w: %w", gosnmp.ErrMaxRetriesExceeded, last)
}
