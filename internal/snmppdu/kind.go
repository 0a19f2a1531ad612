package snmppdu

import (
	"context"

	"github.com/fencekit/fencekit/fence"
)

// Kind is one PDU driver built on this package: its name (and URL scheme),
// the ClusterLabs agents it stands in for (the first names the options it
// ignores as that agent does), and the models it knows. The drivers
// (drivers/apc, drivers/eaton) are a Kind each and nothing more.
type Kind struct {
	Name        string
	Description string
	Agents      []string
	Models      []Model
}

// Driver returns the kind's fence.Driver, for fence.Register: the agents'
// SNMP parameters (Params), checked without I/O (Check) and opened as a
// Device.
func (k Kind) Driver() fence.Driver {
	return fence.Driver{
		Name:        k.Name,
		Description: k.Description,
		Agents:      k.Agents,
		Params:      Params(k.Models),
		Ignored:     Ignored(k.Agents[0]),
		Check:       fence.CheckParams(k.ConfigFromParams),
		Open: func(_ context.Context, oo fence.OpenOptions) (fence.Device, error) {
			c, err := k.ConfigFromParams(oo.Address, oo.Params)
			if err != nil {
				return nil, err
			}
			c.Logger = oo.Logger
			return k.New(c)
		},
	}
}

// ConfigFromParams reads a Config from a method's address and parameters
// (see ConfigFromParams).
func (k Kind) ConfigFromParams(a fence.Address, p fence.Params) (Config, error) {
	return ConfigFromParams(k.Name, k.Models, a, p)
}

// New returns a Device of this kind for the PDU c describes (see New).
func (k Kind) New(c Config) (*Device, error) { return New(k.Name, k.Models, c) }
