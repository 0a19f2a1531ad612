package snmpsim

import (
	"strconv"
)

// Model is a PDU model the simulator emulates.
type Model int

// The models, with the sysObjectID each reports and the objects it serves
// (the OIDs of the ClusterLabs agents fence_apc_snmp and fence_eaton_snmp).
const (
	// APC is an APC Switched Rack PDU (PowerNet-MIB rPDUOutlet tables),
	// sysObjectID .1.3.6.1.4.1.318.1.3.4.5: state .318.1.1.12.3.5.1.1.4.N
	// (1 on, 2 off, read-only), command .318.1.1.12.3.3.1.1.4.N (1 on, 2
	// off, 3 reboot; 4, 5 and 6, the delayed variants, act at once), names
	// .318.1.1.12.3.5.1.1.2.N and .318.1.1.12.3.3.1.1.2.N.
	APC Model = iota + 1
	// APCMasterSwitch is an older APC MasterSwitch (PowerNet-MIB
	// sPDUOutletControlTable), sysObjectID .1.3.6.1.4.1.318.1.3.4.2
	// (masterSwitchV2): state and command .318.1.1.4.4.2.1.3.N (1 on, 2 off;
	// writes 1 on, 2 off, 3 reboot), names .318.1.1.4.4.2.1.4.N.
	APCMasterSwitch
	// APCRPDU2 is an APC rPDU2 as fence_apc_snmp drives it (its class
	// ApcMS6), sysObjectID .1.3.6.1.4.1.318.1.3.4.6: the MasterSwitch table
	// and the rPDU command column, both writable.
	APCRPDU2
	// EatonManaged is an Eaton Managed ePDU, sysObjectID
	// .1.3.6.1.4.1.534.6.6.6: index .534.6.6.6.1.2.2.1.1.I = I and state and
	// command .534.6.6.6.1.2.2.1.3.I (0 off, 1 on; writes 0, 1, 2 cycle),
	// where outlet N is index I = N-1.
	EatonManaged
	// EatonSwitched is an Eaton Switched ePDU (Pulizzi), sysObjectID
	// .1.3.6.1.4.1.20677.1: state .20677.2.6.3.N.0 (1 on, 2 off), command
	// .20677.2.6.2.K.0 (1 on, 2 off, 3 cycle) where K = 1 switches every
	// outlet and K = N+1 outlet N.
	EatonSwitched
	// Tripplite is a Tripp Lite PDU, sysObjectID .1.3.6.1.4.1.850.1: state
	// .850.10.2.3.5.1.2.1.N (2 on, 1 off), command .850.10.2.3.5.1.4.1.N,
	// names .850.10.2.3.5.1.5.1.N.
	Tripplite
	// TrippliteLX is a Tripp Lite PDU with a WEBCARDLX, sysObjectID
	// .1.3.6.1.4.1.850.1.1.1: state .850.1.1.3.2.3.3.1.1.4.1.N (2 on, 1
	// off), command .850.1.1.3.2.3.3.1.1.6.1.N, names
	// .850.1.1.3.2.3.3.1.1.2.1.N.
	TrippliteLX
)

// String returns the model's name, as the handler's command line has it.
func (m Model) String() string {
	if s, ok := specs[m]; ok {
		return s.name
	}
	return "model(" + strconv.Itoa(int(m)) + ")"
}

// SysObjectID returns the sysObjectID the model reports.
func (m Model) SysObjectID() string { return specs[m].sysOID }

// HasNames reports whether the model serves outlet names.
func (m Model) HasNames() bool { return specs[m].names }

func modelByName(s string) (Model, bool) {
	for m, sp := range specs {
		if sp.name == s {
			return m, true
		}
	}
	return 0, false
}

// object is one object the handler serves.
type object struct {
	oid []int
	typ string // "integer" or "string"
	val string
}

// spec describes a model to the handler.
type spec struct {
	name    string
	sysOID  string
	subtree string // the pass_persist registration
	names   bool
	// objects lists the model's objects for the state st.
	objects func(st *state, n int) []object
	// write applies a SET of v to oid, and returns "" or a pass_persist
	// error keyword.
	write func(st *state, n int, oid []int, v int) string
}

var (
	apcBase     = []int{1, 3, 6, 1, 4, 1, 318, 1, 1, 12, 3}
	apcMSBase   = []int{1, 3, 6, 1, 4, 1, 318, 1, 1, 4, 4, 2, 1}
	eatonMBase  = []int{1, 3, 6, 1, 4, 1, 534, 6, 6, 6, 1, 2, 2, 1}
	eatonSBase  = []int{1, 3, 6, 1, 4, 1, 20677, 2, 6}
	trippBase   = []int{1, 3, 6, 1, 4, 1, 850, 10, 2, 3, 5, 1}
	trippLXBase = []int{1, 3, 6, 1, 4, 1, 850, 1, 1, 3, 2, 3, 3, 1, 1}
)

func oidOf(base []int, tail ...int) []int {
	return append(append(make([]int, 0, len(base)+len(tail)), base...), tail...)
}

func integer(oid []int, v int) object { return object{oid: oid, typ: "integer", val: strconv.Itoa(v)} }

func str(oid []int, s string) object { return object{oid: oid, typ: "string", val: s} }

// hasPrefix reports whether oid starts with p.
func hasPrefix(oid, p []int) bool {
	if len(oid) < len(p) {
		return false
	}
	for i := range p {
		if oid[i] != p[i] {
			return false
		}
	}
	return true
}

// outletAt returns the sub-identifier of oid at position pos, less offset,
// as an outlet number from 1 to n.
func outletAt(oid []int, pos, offset, n int) (int, bool) {
	if pos >= len(oid) {
		return 0, false
	}
	o := oid[pos] - offset
	return o, o >= 1 && o <= n
}

// inColumn returns the outlet whose instance of column col oid is: oid is
// col and one more number, the outlet's index plus offset.
func inColumn(oid, col []int, offset, n int) (int, bool) {
	if !hasPrefix(oid, col) || len(oid) != len(col)+1 {
		return 0, false
	}
	return outletAt(oid, len(col), offset, n)
}

// rPDUControlRow is outlet i's row of an APC rPDU's rPDUOutletControlTable
// (index, name, command: 1 on, 2 off).
func rPDUControlRow(st *state, i int) []object {
	return []object{
		integer(oidOf(apcBase, 3, 1, 1, 1, i), i),
		str(oidOf(apcBase, 3, 1, 1, 2, i), st.name(i)),
		integer(oidOf(apcBase, 3, 1, 1, 4, i), st.value(i, 1, 2)),
	}
}

// rPDUStatusRow is outlet i's row of an APC rPDU's rPDUOutletStatusTable
// (index, name, state as reported).
func rPDUStatusRow(st *state, i int) []object {
	return []object{
		integer(oidOf(apcBase, 5, 1, 1, 1, i), i),
		str(oidOf(apcBase, 5, 1, 1, 2, i), st.name(i)),
		integer(oidOf(apcBase, 5, 1, 1, 4, i), st.reported(i, 1, 2)),
	}
}

// masterSwitchRow is outlet i's row of an APC MasterSwitch's
// sPDUOutletControlTable (index, state as reported, name).
func masterSwitchRow(st *state, i int) []object {
	return []object{
		integer(oidOf(apcMSBase, 1, i), i),
		integer(oidOf(apcMSBase, 3, i), st.reported(i, 1, 2)),
		str(oidOf(apcMSBase, 4, i), st.name(i)),
	}
}

// perOutlet returns the objects of outlets 1 to n, as of says.
func perOutlet(n int, of func(i int) []object) []object {
	var o []object
	for i := 1; i <= n; i++ {
		o = append(o, of(i)...)
	}
	return o
}

// onOff applies an on/off/cycle command: on and off are the values that
// switch the outlet; cycle (0 for none) switches it off and on again.
func onOff(st *state, outlet, v, on, off, cycle int, why string) string {
	switch {
	case v == on:
		st.switchTo(outlet, true, why)
	case v == off:
		st.switchTo(outlet, false, why)
	case cycle != 0 && v == cycle:
		st.switchTo(outlet, false, why+" (cycle)")
		st.switchTo(outlet, true, why+" (cycle)")
	default:
		return "wrong-value"
	}
	return ""
}

var specs = map[Model]spec{
	APC: {
		name: "apc", sysOID: ".1.3.6.1.4.1.318.1.3.4.5", subtree: ".1.3.6.1.4.1.318.1.1.12.3", names: true,
		objects: func(st *state, n int) []object {
			return perOutlet(n, func(i int) []object {
				return append(rPDUControlRow(st, i), rPDUStatusRow(st, i)...)
			})
		},
		write: func(st *state, n int, oid []int, v int) string {
			outlet, ok := inColumn(oid, oidOf(apcBase, 3, 1, 1, 4), 0, n)
			if !ok {
				return "not-writable"
			}
			switch v {
			case 4:
				v = 1
			case 5:
				v = 2
			case 6:
				v = 3
			}
			return onOff(st, outlet, v, 1, 2, 3, "rPDUOutletControlOutletCommand "+strconv.Itoa(v))
		},
	},
	APCMasterSwitch: {
		name: "apc-masterswitch", sysOID: ".1.3.6.1.4.1.318.1.3.4.2", subtree: ".1.3.6.1.4.1.318.1.1.4.4.2.1", names: true,
		objects: func(st *state, n int) []object {
			return perOutlet(n, func(i int) []object {
				return masterSwitchRow(st, i)
			})
		},
		write: func(st *state, n int, oid []int, v int) string {
			outlet, ok := inColumn(oid, oidOf(apcMSBase, 3), 0, n)
			if !ok {
				return "not-writable"
			}
			return onOff(st, outlet, v, 1, 2, 3, "sPDUOutletCtl "+strconv.Itoa(v))
		},
	},
	APCRPDU2: {
		name: "apc-rpdu2", sysOID: ".1.3.6.1.4.1.318.1.3.4.6", subtree: ".1.3.6.1.4.1.318.1.1", names: true,
		objects: func(st *state, n int) []object {
			return perOutlet(n, func(i int) []object {
				return append(masterSwitchRow(st, i), rPDUControlRow(st, i)...)
			})
		},
		write: func(st *state, n int, oid []int, v int) string {
			for _, col := range [][]int{oidOf(apcBase, 3, 1, 1, 4), oidOf(apcMSBase, 3)} {
				if outlet, ok := inColumn(oid, col, 0, n); ok {
					return onOff(st, outlet, v, 1, 2, 3, "command "+strconv.Itoa(v))
				}
			}
			return "not-writable"
		},
	},
	EatonManaged: {
		name: "eaton-managed", sysOID: ".1.3.6.1.4.1.534.6.6.6", subtree: ".1.3.6.1.4.1.534.6.6.6.1.2.2.1",
		objects: func(st *state, n int) []object {
			var o []object
			for i := 0; i < n; i++ {
				o = append(o,
					integer(oidOf(eatonMBase, 1, i), i),
					integer(oidOf(eatonMBase, 3, i), st.reported(i+1, 1, 0)),
				)
			}
			return o
		},
		write: func(st *state, n int, oid []int, v int) string {
			outlet, ok := inColumn(oid, oidOf(eatonMBase, 3), -1, n)
			if !ok {
				return "not-writable"
			}
			return onOff(st, outlet, v, 1, 0, 2, "outletControl "+strconv.Itoa(v))
		},
	},
	EatonSwitched: {
		name: "eaton-switched", sysOID: ".1.3.6.1.4.1.20677.1", subtree: ".1.3.6.1.4.1.20677.2.6",
		objects: func(st *state, n int) []object {
			var o []object
			for k := 1; k <= n+1; k++ {
				v := 1
				if k > 1 {
					v = st.value(k-1, 1, 2)
				}
				o = append(o, integer(oidOf(eatonSBase, 2, k, 0), v))
			}
			for i := 1; i <= n; i++ {
				o = append(o, integer(oidOf(eatonSBase, 3, i, 0), st.reported(i, 1, 2)))
			}
			return o
		},
		write: func(st *state, n int, oid []int, v int) string {
			col := oidOf(eatonSBase, 2)
			if !hasPrefix(oid, col) || len(oid) != len(col)+2 || oid[len(oid)-1] != 0 {
				return "not-writable"
			}
			k := oid[len(col)]
			if k < 1 || k > n+1 {
				return "not-writable"
			}
			if v < 1 || v > 3 {
				return "wrong-value"
			}
			if k == 1 {
				for i := 1; i <= n; i++ {
					onOff(st, i, v, 1, 2, 3, "global control "+strconv.Itoa(v))
				}
				return ""
			}
			return onOff(st, k-1, v, 1, 2, 3, "control "+strconv.Itoa(k)+" "+strconv.Itoa(v))
		},
	},
	Tripplite: {
		name: "tripplite", sysOID: ".1.3.6.1.4.1.850.1", subtree: ".1.3.6.1.4.1.850.10.2.3.5.1", names: true,
		objects: func(st *state, n int) []object {
			return perOutlet(n, func(i int) []object {
				return []object{
					integer(oidOf(trippBase, 2, 1, i), st.reported(i, 2, 1)),
					integer(oidOf(trippBase, 4, 1, i), st.value(i, 2, 1)),
					str(oidOf(trippBase, 5, 1, i), st.name(i)),
				}
			})
		},
		write: func(st *state, n int, oid []int, v int) string {
			outlet, ok := inColumn(oid, oidOf(trippBase, 4, 1), 0, n)
			if !ok {
				return "not-writable"
			}
			return onOff(st, outlet, v, 2, 1, 0, "command "+strconv.Itoa(v))
		},
	},
	TrippliteLX: {
		name: "tripplite-lx", sysOID: ".1.3.6.1.4.1.850.1.1.1", subtree: ".1.3.6.1.4.1.850.1.1.3.2.3.3.1.1", names: true,
		objects: func(st *state, n int) []object {
			return perOutlet(n, func(i int) []object {
				return []object{
					str(oidOf(trippLXBase, 2, 1, i), st.name(i)),
					integer(oidOf(trippLXBase, 4, 1, i), st.reported(i, 2, 1)),
					integer(oidOf(trippLXBase, 6, 1, i), st.value(i, 2, 1)),
				}
			})
		},
		write: func(st *state, n int, oid []int, v int) string {
			outlet, ok := inColumn(oid, oidOf(trippLXBase, 6, 1), 0, n)
			if !ok {
				return "not-writable"
			}
			return onOff(st, outlet, v, 2, 1, 0, "command "+strconv.Itoa(v))
		},
	},
}
