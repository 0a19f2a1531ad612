package snmppdu

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/gosnmp/gosnmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fencekit/fencekit/fence"
)

// The tables as the agents have them: fence_apc_snmp's and
// fence_eaton_snmp's OIDs for outlet 3, and their on and off values.
func TestModelTables(t *testing.T) {
	cases := []struct {
		models           []Model
		id               string
		sysOID           string
		status, control  string
		names            string
		on, off, tOn, tO int
	}{
		{APCModels, ModelAPCRPDU, ".1.3.6.1.4.1.318.1.3.4.5", ".1.3.6.1.4.1.318.1.1.12.3.5.1.1.4.3", ".1.3.6.1.4.1.318.1.1.12.3.3.1.1.4.3", ".1.3.6.1.4.1.318.1.1.12.3.5.1.1.2", 1, 2, 1, 2},
		{APCModels, ModelAPCRPDU2, ".1.3.6.1.4.1.318.1.3.4.6", ".1.3.6.1.4.1.318.1.1.4.4.2.1.3.3", ".1.3.6.1.4.1.318.1.1.12.3.3.1.1.4.3", ".1.3.6.1.4.1.318.1.1.4.4.2.1.4", 1, 2, 1, 2},
		{APCModels, ModelAPCMasterSwitch, ".1.3.6.1.4.1.318.1.3.4.2", ".1.3.6.1.4.1.318.1.1.4.4.2.1.3.3", ".1.3.6.1.4.1.318.1.1.4.4.2.1.3.3", ".1.3.6.1.4.1.318.1.1.4.4.2.1.4", 1, 2, 1, 2},
		{APCModels, ModelTripplite, ".1.3.6.1.4.1.850.1", ".1.3.6.1.4.1.850.10.2.3.5.1.2.1.3", ".1.3.6.1.4.1.850.10.2.3.5.1.4.1.3", ".1.3.6.1.4.1.850.10.2.3.5.1.5.1", 2, 1, 2, 1},
		{APCModels, ModelTrippliteLX, ".1.3.6.1.4.1.850.1.1.1", ".1.3.6.1.4.1.850.1.1.3.2.3.3.1.1.4.1.3", ".1.3.6.1.4.1.850.1.1.3.2.3.3.1.1.6.1.3", ".1.3.6.1.4.1.850.1.1.3.2.3.3.1.1.2.1", 2, 1, 2, 1},
		{EatonModels, ModelEatonManaged, ".1.3.6.1.4.1.534.6.6.6", ".1.3.6.1.4.1.534.6.6.6.1.2.2.1.3.2", ".1.3.6.1.4.1.534.6.6.6.1.2.2.1.3.2", "", 1, 0, 1, 0},
		{EatonModels, ModelEatonSwitched, "1.3.6.1.4.1.20677.1", ".1.3.6.1.4.1.20677.2.6.3.3.0", ".1.3.6.1.4.1.20677.2.6.2.4.0", "", 1, 2, 1, 2},
		{EatonModels, ModelEatonSwitched, ".1.3.6.1.4.1.20677.2", ".1.3.6.1.4.1.20677.2.6.3.3.0", ".1.3.6.1.4.1.20677.2.6.2.4.0", "", 1, 2, 1, 2},
	}
	for _, c := range cases {
		t.Run(c.id+c.sysOID, func(t *testing.T) {
			m, ok := Detect(c.models, c.sysOID)
			require.True(t, ok)
			assert.Equal(t, c.id, m.ID)
			byID, ok := ByID(c.models, strings.ToUpper(c.id))
			require.True(t, ok)
			assert.Same(t, m, byID)
			assert.Equal(t, c.status, m.Status.OID(3))
			assert.Equal(t, c.control, m.Control.OID(3))
			assert.Equal(t, c.names, m.Names.Prefix)
			assert.Equal(t, []int{c.on, c.off, c.tOn, c.tO}, []int{m.On, m.Off, m.value(fence.StateOn), m.value(fence.StateOff)})
			n, ok := m.Status.Outlet(c.status)
			assert.True(t, ok)
			assert.Equal(t, 3, n)
			n, ok = m.Control.Outlet(c.control)
			assert.True(t, ok)
			assert.Equal(t, 3, n)
		})
	}
	// The agents' fallbacks are not guesses here.
	for _, oid := range []string{".1.3.6.1.4.1.318.1.3.4.4", ".1.3.6.1.4.1.318.1.3.4.9", ".1.3.6.1.4.1.534.6.6.7", ""} {
		_, ok := Detect(APCModels, oid)
		assert.False(t, ok, oid)
		_, ok = Detect(EatonModels, oid)
		assert.False(t, ok, oid)
	}
}

func TestModelState(t *testing.T) {
	eatonSw, _ := ByID(EatonModels, ModelEatonSwitched)
	for v, want := range map[int64]fence.State{1: fence.StateOn, 2: fence.StateOff} {
		st, err := eatonSw.State(v)
		require.NoError(t, err)
		assert.Equal(t, want, st)
	}
	for _, v := range []int64{3, -1, 1 << 40} {
		st, err := eatonSw.State(v)
		assert.Equal(t, fence.StateUnknown, st)
		assert.ErrorIs(t, err, fence.ErrBadState)
		assert.Contains(t, err.Error(), "value "+strconv.FormatInt(v, 10)+" is neither on (1) nor off (2)")
	}
	st, err := eatonSw.State(0)
	assert.Equal(t, fence.StateUnknown, st)
	assert.ErrorIs(t, err, fence.ErrUnknownPlug, "the Switched ePDU's 0 is a missing outlet")

	managed, _ := ByID(EatonModels, ModelEatonManaged)
	st, err = managed.State(0)
	require.NoError(t, err)
	assert.Equal(t, fence.StateOff, st, "the Managed ePDU's 0 is off")
	_, err = managed.State(2)
	assert.ErrorIs(t, err, fence.ErrBadState, "2 is cycling, no state")
}

func TestColumnOutlet(t *testing.T) {
	c := Column{Prefix: ".1.3.6.1.4.1.20677.2.6.2", Offset: 1, Suffix: ".0"}
	for _, bad := range []string{
		".1.3.6.1.4.1.20677.2.6.2.1.0",  // the global control: outlet 0
		".1.3.6.1.4.1.20677.2.6.2.4",    // no suffix
		".1.3.6.1.4.1.20677.2.6.2.04.0", // a leading zero
		".1.3.6.1.4.1.20677.2.6.2.4.0.0",
		".1.3.6.1.4.1.20677.2.6.3.4.0",
		".1.3.6.1.4.1.20677.2.6.2..0",
		".1.3.6.1.4.1.20677.2.6.2.-4.0",
		".1.3.6.1.4.1.20677.2.6.24.0",
		".1.3.6.1.4.1.20677.2.6.2.99999999999.0",
	} {
		_, ok := c.Outlet(bad)
		assert.False(t, ok, bad)
	}
	n, ok := c.Outlet("1.3.6.1.4.1.20677.2.6.2.5.0")
	assert.True(t, ok)
	assert.Equal(t, 4, n)

	for in, want := range map[string]int{"1": 1, " 12 ": 12, "007": 7, "9999": 9999} {
		n, ok := ParseOutlet(in)
		assert.True(t, ok, in)
		assert.Equal(t, want, n, in)
	}
	for _, in := range []string{"", "0", "10000", "-1", "+1", "1a", "node1", "1:2", "999999999999"} {
		_, ok := ParseOutlet(in)
		assert.False(t, ok, in)
	}
}

func TestCmpOID(t *testing.T) {
	assert.Equal(t, -1, cmpOID(".1.3.6.1.9", ".1.3.6.1.10"))
	assert.Equal(t, 1, cmpOID(".1.3.6.1.10", ".1.3.6.1.9"))
	assert.Equal(t, -1, cmpOID(".1.3.6", ".1.3.6.1"))
	assert.Equal(t, 0, cmpOID("1.3.6.1", ".1.3.6.1"))
}

// FuzzColumnOutlet: a column maps an OID of a device's reply to an outlet
// only when the OID is exactly that outlet's cell.
func FuzzColumnOutlet(f *testing.F) {
	for _, s := range []string{".1.3.6.1.4.1.20677.2.6.2.5.0", ".1.3.6.1.4.1.534.6.6.6.1.2.2.1.3.0", "1.3.6.1.4.1.318.1.1.12.3.5.1.1.4.8", ".", "", ".1.3.6.1.4.1.20677.2.6.2.0.0"} {
		f.Add(s)
	}
	cols := []Column{}
	for _, ms := range [][]Model{APCModels, EatonModels} {
		for _, m := range ms {
			cols = append(cols, m.Status, m.Control)
			if !m.Names.IsZero() {
				cols = append(cols, m.Names)
			}
		}
	}
	f.Fuzz(func(t *testing.T, oid string) {
		for _, c := range cols {
			n, ok := c.Outlet(oid)
			if !ok {
				continue
			}
			if n < 1 || n > MaxOutlet {
				t.Fatalf("%q: outlet %d out of range", oid, n)
			}
			if got := c.OID(n); got != normOID(oid) {
				t.Fatalf("%q: outlet %d, whose cell is %q", oid, n, got)
			}
		}
	})
}

// FuzzValue: any variable a device may answer for an outlet's state maps
// to on or off only when it is an integer of the model's on or off values;
// anything else is an error, never a state.
func FuzzValue(f *testing.F) {
	f.Add(uint8(gosnmp.Integer), int64(1), []byte(nil))
	f.Add(uint8(gosnmp.Integer), int64(2), []byte(nil))
	f.Add(uint8(gosnmp.Integer), int64(0), []byte(nil))
	f.Add(uint8(gosnmp.OctetString), int64(0), []byte("1"))
	f.Add(uint8(gosnmp.NoSuchInstance), int64(0), []byte(nil))
	f.Add(uint8(gosnmp.Gauge32), int64(1), []byte(nil))
	f.Fuzz(func(t *testing.T, typ uint8, v int64, b []byte) {
		pdu := gosnmp.SnmpPDU{Name: ".1.3.6.1.4.1.318.1.1.12.3.5.1.1.4.1", Type: gosnmp.Asn1BER(typ)}
		switch gosnmp.Asn1BER(typ) {
		case gosnmp.OctetString, gosnmp.ObjectIdentifier:
			pdu.Value = b
		case gosnmp.Gauge32, gosnmp.Counter32, gosnmp.TimeTicks, gosnmp.Uinteger32:
			pdu.Value = uint32(v)
		default:
			pdu.Value = int(v)
		}
		d := &Device{driver: "fuzz", addr: "127.0.0.1:161"}
		for _, ms := range [][]Model{APCModels, EatonModels} {
			for i := range ms {
				m := &ms[i]
				st, err := d.state(request{op: "GET"}, m, pdu)
				x, ierr := intValue(pdu)
				want := fence.StateUnknown
				if ierr == nil && x == int64(m.On) {
					want = fence.StateOn
				} else if ierr == nil && x == int64(m.Off) {
					want = fence.StateOff
				}
				if st != want {
					t.Fatalf("%s: %v %v: state %v, want %v (err %v)", m.ID, pdu.Type, pdu.Value, st, want, err)
				}
				if (err == nil) != want.Known() {
					t.Fatalf("%s: %v %v: state %v with error %v", m.ID, pdu.Type, pdu.Value, st, err)
				}
				if err != nil && !errors.Is(err, fence.ErrBadState) && !errors.Is(err, fence.ErrUnknownPlug) && !errors.Is(err, ErrMalformed) {
					t.Fatalf("%s: unclassified error %v", m.ID, err)
				}
			}
		}
	})
}
