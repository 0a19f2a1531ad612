package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/fencekit/fencekit/fence"
)

const vendorURL = "https://github.com/fencekit/fencekit"

// help prints the options, as the agents' --help does: the common ones,
// then the chosen driver's (or every driver's, when none is chosen).
func (c *cli) help(tab *table, d *fence.Driver) {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage:\n\t%s [options]\n\t%s < parameters (key=value lines on standard input)\n", c.prog, c.prog)
	drivers := c.reg.Drivers()
	if d != nil {
		fmt.Fprintf(&b, "Driver:\n\t%s\n", driverLine(d))
		drivers = []*fence.Driver{d}
	} else {
		b.WriteString("Drivers (--driver):\n")
		for _, x := range drivers {
			fmt.Fprintf(&b, "\t%s\n", driverLine(x))
		}
	}
	b.WriteString("Options:\n")
	for _, o := range tab.opts {
		if o.Driver == "" {
			helpLine(&b, o)
		}
	}
	for _, x := range drivers {
		first := true
		for _, o := range tab.opts {
			if !declares(x, o.Key) {
				continue
			}
			if first {
				fmt.Fprintf(&b, "Options of driver %s:\n", x.Name)
				first = false
			}
			helpLine(&b, o)
		}
	}
	io.WriteString(c.stdout, b.String())
}

func driverLine(d *fence.Driver) string {
	s := d.Name
	if len(d.Agents) > 0 {
		s += " (" + strings.Join(d.Agents, ", ") + ")"
	}
	if d.Description != "" {
		s += ": " + d.Description
	}
	return s
}

// declares reports whether driver d declares parameter key itself.
func declares(d *fence.Driver, key string) bool {
	for _, s := range d.Params {
		if fence.CanonicalKey(s.Name) == key {
			return true
		}
	}
	return false
}

func helpLine(b *strings.Builder, o *option) {
	desc := o.Desc
	if len(o.Aliases) > 0 {
		var al []string
		for _, a := range o.longNames()[1:] {
			al = append(al, "--"+a)
		}
		desc += " (also " + strings.Join(al, ", ") + ")"
	}
	if o.Default != "" && o.Key != "action" {
		desc += " (default: " + o.Default + ")"
	}
	fmt.Fprintf(b, "   %-30s %s\n", o.getopt(), desc)
}

// metadata prints the agents' resource-agent XML (fencing.py metadata()):
// every option, with the agents' old names as deprecated entries. Secrets
// are not marked private="1": pcs refuses the attribute in an agent's
// metadata, as the ClusterLabs agents never write it (Pacemaker keeps
// password-like parameters out of its logs by their names).
func (c *cli) metadata(tab *table, d *fence.Driver) {
	var b strings.Builder
	short := "Fence agent for fencekit drivers"
	long := "fencekit fence agent: the ClusterLabs agents' command line over the fencekit drivers (" + driverNames(c.reg) + ")."
	if d != nil {
		short = d.Description
		if short == "" {
			short = "fencekit driver " + d.Name
		}
		long = "fencekit driver " + d.Name
		if len(d.Agents) > 0 {
			long += ", standing in for " + strings.Join(d.Agents, ", ")
		}
		long += ". " + d.Description
	}
	b.WriteString("<?xml version=\"1.0\" ?>\n")
	fmt.Fprintf(&b, "<resource-agent name=\"%s\" shortdesc=\"%s\" >\n", xmlEsc(c.prog), xmlEsc(short))
	fmt.Fprintf(&b, "<longdesc>%s</longdesc>\n", xmlEsc(long))
	fmt.Fprintf(&b, "<vendor-url>%s</vendor-url>\n", vendorURL)
	b.WriteString("<parameters>\n")
	for _, o := range tab.opts {
		if d == nil {
			// Without a driver (fence_fencekit): every driver's options,
			// none required but the action (what one driver needs, another
			// does not), and no default that only some driver has.
			c := *o
			c.Required = o.Key == "action"
			if o.Driver != "" || o.Varies {
				c.Default = ""
			}
			o = &c
		}
		if o.Key == "action" && d != nil && d.DefaultAction != fence.ActionNone {
			// The driver's default action (brocade's off), as the agent's
			// metadata says it.
			c := *o
			c.Default = d.DefaultAction.String()
			o = &c
		}
		obsoletes := ""
		if len(o.Aliases) > 0 {
			obsoletes = o.Aliases[0]
		}
		param(&b, o, o.Key, obsoletes, false)
		for _, a := range o.Aliases {
			param(&b, o, a, "", true)
		}
	}
	b.WriteString("</parameters>\n<actions>\n")
	acts := actions
	if prof, ok := c.profile(d); ok {
		acts = prof.actions
	}
	for _, a := range acts {
		if a == "on" {
			b.WriteString("\t<action name=\"on\" automatic=\"0\"/>\n")
			continue
		}
		fmt.Fprintf(&b, "\t<action name=\"%s\" />\n", a)
	}
	b.WriteString("</actions>\n</resource-agent>\n")
	io.WriteString(c.stdout, b.String())
}

func param(b *strings.Builder, o *option, name, obsoletes string, deprecated bool) {
	req := "0"
	if o.Required {
		req = "1"
	}
	fmt.Fprintf(b, "\t<parameter name=\"%s\" unique=\"0\" required=\"%s\"", xmlEsc(name), req)
	if deprecated {
		b.WriteString(" deprecated=\"1\"")
	} else if obsoletes != "" {
		fmt.Fprintf(b, " obsoletes=\"%s\"", xmlEsc(obsoletes))
	}
	b.WriteString(">\n")
	fmt.Fprintf(b, "\t\t<getopt mixed=\"%s\" />\n", xmlEsc(o.getopt()))
	def := ""
	if o.Default != "" {
		def = "default=\"" + xmlEsc(o.Default) + "\" "
	}
	switch {
	case len(o.Choices) > 0:
		fmt.Fprintf(b, "\t\t<content type=\"select\" %s >\n", def)
		for _, ch := range o.Choices {
			fmt.Fprintf(b, "\t\t\t<option value=\"%s\" />\n", xmlEsc(ch))
		}
		b.WriteString("\t\t</content>\n")
	case o.Flag:
		fmt.Fprintf(b, "\t\t<content type=\"boolean\" %s />\n", def)
	default:
		fmt.Fprintf(b, "\t\t<content type=\"%s\" %s />\n", xmlEsc(o.Type), def)
	}
	fmt.Fprintf(b, "\t\t<shortdesc lang=\"en\">%s</shortdesc>\n", xmlEsc(o.Desc))
	b.WriteString("\t</parameter>\n")
}

func driverNames(reg *fence.Registry) string {
	var n []string
	for _, d := range reg.Drivers() {
		n = append(n, d.Name)
	}
	return strings.Join(n, ", ")
}

var xmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")

func xmlEsc(s string) string { return xmlEscaper.Replace(s) }
