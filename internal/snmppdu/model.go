package snmppdu

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fencekit/fencekit/fence"
)

// Column is a column of a PDU's outlet table: the OID of outlet n's cell is
// Prefix "." (n + Offset) Suffix. Offset turns the agents' 1-based outlet
// numbers into the device's indexes (the Eaton Managed ePDU counts from 0,
// the Eaton Switched ePDU's controls from 2); Suffix is ".0" where each
// outlet's cell is a scalar of its own.
type Column struct {
	Prefix string // numeric OID with a leading dot, such as ".1.3.6.1.4.1.318.1.1.12.3.5.1.1.4"
	Offset int    // added to the outlet's number to make its index
	Suffix string // "" or ".0"
}

// IsZero reports whether the column is unset (a model without it).
func (c Column) IsZero() bool { return c.Prefix == "" }

// OID returns the OID of outlet n's cell.
func (c Column) OID(n int) string {
	return c.Prefix + "." + strconv.Itoa(n+c.Offset) + c.Suffix
}

// Outlet returns the outlet number whose cell oid is, and whether oid is a
// cell of the column at all (a walk past the column's end is not). It is
// the inverse of OID, for outlets from 1 to MaxOutlet.
func (c Column) Outlet(oid string) (int, bool) {
	if !strings.HasPrefix(oid, ".") {
		oid = "." + oid
	}
	rest, ok := strings.CutPrefix(oid, c.Prefix+".")
	if !ok {
		return 0, false
	}
	rest, ok = strings.CutSuffix(rest, c.Suffix)
	if !ok || rest == "" || len(rest) > 10 {
		return 0, false
	}
	for _, r := range rest {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	if len(rest) > 1 && rest[0] == '0' {
		return 0, false // no leading zeros in an OID's sub-identifier
	}
	idx, err := strconv.Atoi(rest)
	if err != nil {
		return 0, false
	}
	n := idx - c.Offset
	if n < 1 || n > MaxOutlet {
		return 0, false
	}
	return n, true
}

// MaxOutlet is the highest outlet number this package accepts; PDUs have a
// few dozen outlets at most.
const MaxOutlet = 9999

// Model is what the driver knows of one family of PDUs: how to recognise it
// and where its outlets are. The tables are the ClusterLabs agents'
// (fence_apc_snmp, fence_eaton_snmp).
type Model struct {
	// ID names the model in the parameter pdu_model ("rpdu").
	ID string
	// Name is the model's name in messages ("APC rPDU").
	Name string
	// SysObjectIDs are the values of sysObjectID.0 that select the model.
	SysObjectIDs []string
	// Status is the column read for an outlet's state.
	Status Column
	// Control is the column written to switch an outlet; it may be Status.
	Control Column
	// Names is the column of outlet names, walked to find an outlet by its
	// name and for lists; zero for models without names.
	Names Column
	// On and Off are the values of Status for on and off. Any other value
	// is no state.
	On, Off int
	// Absent, when not nil, is a value of Status that means the outlet is
	// not there (the Eaton Switched ePDU reports 0 for missing outlets).
	Absent *int
	// TurnOn, TurnOff and Cycle are the values written to Control; Cycle
	// is 0 for models without a native cycle.
	TurnOn, TurnOff, Cycle int
}

// State maps a value of the Status column. A value outside the model's
// mapping is StateUnknown with an error wrapping fence.ErrBadState, or
// fence.ErrUnknownPlug for the model's Absent value; it is never taken for
// off.
func (m *Model) State(v int64) (fence.State, error) {
	switch {
	case v == int64(m.On):
		return fence.StateOn, nil
	case v == int64(m.Off):
		return fence.StateOff, nil
	case m.Absent != nil && v == int64(*m.Absent):
		return fence.StateUnknown, fmt.Errorf("%w: the %s reports value %d, which means no such outlet", fence.ErrUnknownPlug, m.Name, v)
	}
	return fence.StateUnknown, fmt.Errorf("%w: value %d is neither on (%d) nor off (%d) for the %s", fence.ErrBadState, v, m.On, m.Off, m.Name)
}

// value returns what to write to Control for state s.
func (m *Model) value(s fence.State) int {
	if s == fence.StateOn {
		return m.TurnOn
	}
	return m.TurnOff
}

func intp(v int) *int { return &v }

// Prefixes of the PDUs' MIBs.
const (
	apcRPDU        = ".1.3.6.1.4.1.318.1.1.12.3"    // PowerNet-MIB rPDUOutlet
	apcSPDUCtl     = ".1.3.6.1.4.1.318.1.1.4.4.2.1" // PowerNet-MIB sPDUOutletControlTable
	eatonManaged   = ".1.3.6.1.4.1.534.6.6.6.1.2.2.1"
	eatonSwitched  = ".1.3.6.1.4.1.20677.2.6"
	trippliteOld   = ".1.3.6.1.4.1.850.10.2.3.5.1"
	trippliteLX    = ".1.3.6.1.4.1.850.1.1.3.2.3.3.1.1"
	sysObjectIDOID = ".1.3.6.1.2.1.1.2.0"
)

// Model IDs, the values of the parameter pdu_model.
const (
	ModelAPCRPDU         = "rpdu"
	ModelAPCRPDU2        = "rpdu2"
	ModelAPCMasterSwitch = "masterswitch"
	ModelTripplite       = "tripplite"
	ModelTrippliteLX     = "tripplite-lx"
	ModelEatonManaged    = "managed"
	ModelEatonSwitched   = "switched"
)

// APCModels are the PDUs of fence_apc_snmp (and of its other name,
// fence_tripplite_snmp): its classes ApcRPDU, ApcMS6, ApcMS, TripplitePDU and
// TrippliteLXPDU. The agent also knows the MasterSwitch Plus (sysObjectID
// .1.3.6.1.4.1.318.1.3.4.4, outlets addressed as switch:outlet), which this
// package does not. Where the agent falls back to the MasterSwitch table
// for any sysObjectID it does not know, this package fails instead: a guess
// at the wrong table reads a missing outlet, which the agent takes for off.
// pdu_model=masterswitch asks for that table explicitly.
var APCModels = []Model{
	{
		ID: ModelAPCRPDU, Name: "APC rPDU", SysObjectIDs: []string{".1.3.6.1.4.1.318.1.3.4.5"},
		Status:  Column{Prefix: apcRPDU + ".5.1.1.4"},       // rPDUOutletStatusOutletState
		Control: Column{Prefix: apcRPDU + ".3.1.1.4"},       // rPDUOutletControlOutletCommand
		Names:   Column{Prefix: apcRPDU + ".5.1.1.2"},       // rPDUOutletStatusOutletName
		On:      1, Off: 2, TurnOn: 1, TurnOff: 2, Cycle: 3, // immediateOn, immediateOff, immediateReboot
	},
	{
		// The agent's ApcMS6, "Master Switch with firmware v6.x"
		// (PowerNet-MIB masterSwitchrPDU2): the state in the
		// MasterSwitch table, commands to the rPDU table.
		ID: ModelAPCRPDU2, Name: "APC rPDU2", SysObjectIDs: []string{".1.3.6.1.4.1.318.1.3.4.6"},
		Status:  Column{Prefix: apcSPDUCtl + ".3"},    // sPDUOutletCtl
		Control: Column{Prefix: apcRPDU + ".3.1.1.4"}, // rPDUOutletControlOutletCommand
		Names:   Column{Prefix: apcSPDUCtl + ".4"},    // sPDUOutletCtlName
		On:      1, Off: 2, TurnOn: 1, TurnOff: 2, Cycle: 3,
	},
	{
		// The agent's ApcMS, its fallback for any sysObjectID it does not
		// know; here only PowerNet-MIB's masterSwitchV1 and V2.
		ID: ModelAPCMasterSwitch, Name: "APC MasterSwitch", SysObjectIDs: []string{".1.3.6.1.4.1.318.1.3.4.1", ".1.3.6.1.4.1.318.1.3.4.2"},
		Status:  Column{Prefix: apcSPDUCtl + ".3"}, // sPDUOutletCtl: read the state, write the command
		Control: Column{Prefix: apcSPDUCtl + ".3"},
		Names:   Column{Prefix: apcSPDUCtl + ".4"},          // sPDUOutletCtlName
		On:      1, Off: 2, TurnOn: 1, TurnOff: 2, Cycle: 3, // outletOn, outletOff, outletReboot
	},
	{
		ID: ModelTripplite, Name: "Tripp Lite PDU", SysObjectIDs: []string{".1.3.6.1.4.1.850.1"},
		Status:  Column{Prefix: trippliteOld + ".2.1"},
		Control: Column{Prefix: trippliteOld + ".4.1"},
		Names:   Column{Prefix: trippliteOld + ".5.1"},
		On:      2, Off: 1, TurnOn: 2, TurnOff: 1,
	},
	{
		ID: ModelTrippliteLX, Name: "Tripp Lite LX PDU", SysObjectIDs: []string{".1.3.6.1.4.1.850.1.1.1"},
		Status:  Column{Prefix: trippliteLX + ".4.1"},
		Control: Column{Prefix: trippliteLX + ".6.1"},
		Names:   Column{Prefix: trippliteLX + ".2.1"},
		On:      2, Off: 1, TurnOn: 2, TurnOff: 1,
	},
}

// EatonModels are the PDUs of fence_eaton_snmp: its classes
// EatonManagedePDU and EatonSwitchedePDU. Neither has outlet names in the
// agent's tables: outlets go by number only.
var EatonModels = []Model{
	{
		// Outlets count from 0: outlet n is index n-1. One column holds the
		// state and takes the command.
		ID: ModelEatonManaged, Name: "Eaton Managed ePDU", SysObjectIDs: []string{".1.3.6.1.4.1.534.6.6.6"},
		Status:  Column{Prefix: eatonManaged + ".3", Offset: -1},
		Control: Column{Prefix: eatonManaged + ".3", Offset: -1},
		On:      1, Off: 0, TurnOn: 1, TurnOff: 0, Cycle: 2,
	},
	{
		// The sysObjectID is under .20677.1, the data under .20677.2.
		// Control 1 switches every outlet at once: outlet n's control is
		// n+1, as the agent sends it.
		ID: ModelEatonSwitched, Name: "Eaton Switched ePDU", SysObjectIDs: []string{".1.3.6.1.4.1.20677.1", ".1.3.6.1.4.1.20677.2"},
		Status:  Column{Prefix: eatonSwitched + ".3", Suffix: ".0"},
		Control: Column{Prefix: eatonSwitched + ".2", Offset: 1, Suffix: ".0"},
		On:      1, Off: 2, Absent: intp(0), TurnOn: 1, TurnOff: 2, Cycle: 3,
	},
}

// unsupported are PDUs the agents know and this package does not.
var unsupported = map[string]string{
	".1.3.6.1.4.1.318.1.3.4.4": "an APC MasterSwitch Plus (outlets addressed as switch:outlet)",
}

// Detect returns the model of models that sysObjectID selects.
func Detect(models []Model, sysObjectID string) (*Model, bool) {
	oid := normOID(sysObjectID)
	for i := range models {
		for _, s := range models[i].SysObjectIDs {
			if s == oid {
				return &models[i], true
			}
		}
	}
	return nil, false
}

// ByID returns the model of models named id (case-insensitive).
func ByID(models []Model, id string) (*Model, bool) {
	id = strings.ToLower(strings.TrimSpace(id))
	for i := range models {
		if models[i].ID == id {
			return &models[i], true
		}
	}
	return nil, false
}

// modelIDs lists the IDs of models, for messages.
func modelIDs(models []Model) string {
	ids := make([]string, len(models))
	for i := range models {
		ids[i] = models[i].ID
	}
	return strings.Join(ids, ", ")
}

// normOID writes an OID with a leading dot.
func normOID(s string) string {
	s = strings.TrimSpace(s)
	if s != "" && !strings.HasPrefix(s, ".") {
		s = "." + s
	}
	return s
}

// ParseOutlet reads a plug that names an outlet by number: decimal digits,
// 1 to MaxOutlet. ok is false for anything else (a name).
func ParseOutlet(plug string) (n int, ok bool) {
	p := strings.TrimSpace(plug)
	if p == "" || len(p) > 9 {
		return 0, false
	}
	for _, r := range p {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > MaxOutlet {
		return 0, false
	}
	return n, true
}

// isNumber reports whether plug is all digits, so that it can only mean an
// outlet number (as the agents take it), never a name.
func isNumber(plug string) bool {
	p := strings.TrimSpace(plug)
	if p == "" {
		return false
	}
	for _, r := range p {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
