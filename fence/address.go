package fence

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode"
)

// Address is where a fence device listens, written as a URL whose scheme
// names the driver and, after a '+', the transport:
//
//	ipmi://10.0.0.5:623
//	redfish+https://bmc.example/redfish/v1/Systems/1
//	apc://pdu-a:161
//	eaton://pdu-b
//	brocade+ssh://fc-switch:22
//	fake://rack1
//
// ParseAddress is lenient in what it accepts (any case, surrounding space, a
// bare host or host:port with no scheme, IPv6 with or without brackets) and
// strict in what it refuses (credentials in the URL, bad ports, no host).
type Address struct {
	Driver    string     // the scheme's driver part, lower case ("redfish"); empty when no scheme was given
	Transport string     // the scheme's transport part, lower case ("https", "ssh"); often empty
	Host      string     // host name or IP, without brackets
	Port      int        // 0 when not given
	Path      string     // as given, such as "/redfish/v1/Systems/1"
	Query     url.Values // driver options in the query string, if any
}

// Scheme returns the URL scheme: Driver, plus "+Transport" when set.
func (a Address) Scheme() string {
	if a.Transport != "" {
		return a.Driver + "+" + a.Transport
	}
	return a.Driver
}

// HostPort returns host:port, with defaultPort when the address has none.
func (a Address) HostPort(defaultPort int) string {
	p := a.Port
	if p == 0 {
		p = defaultPort
	}
	return net.JoinHostPort(a.Host, strconv.Itoa(p))
}

// String returns the address as a URL. It parses back to an equal Address.
func (a Address) String() string {
	host := a.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if a.Port != 0 {
		host += ":" + strconv.Itoa(a.Port)
	}
	s := host + a.Path
	if len(a.Query) > 0 {
		s += "?" + a.Query.Encode()
	}
	if a.Driver != "" {
		s = a.Scheme() + "://" + s
	}
	return s
}

// Redacted returns the address as String does, but with the query's values
// left out (k=REDACTED): what logs and debug output print of an address,
// whose query may have been given a credential by mistake.
func (a Address) Redacted() string {
	r := a
	if len(a.Query) > 0 {
		r.Query = url.Values{}
		for k := range a.Query {
			r.Query.Set(k, RedactedText)
		}
	}
	return r.String()
}

// errAddress is wrapped by every ParseAddress error.
var errAddress = errors.New("bad address")

// ParseAddress parses a device address; see Address. An address with an
// '@' anywhere is refused whole, before it is split: it may hold
// credentials, and a password may hold any of the URL's delimiters. Errors
// never repeat the address or any part of one that holds an '@'.
func ParseAddress(s string) (Address, error) {
	var a Address
	s = strings.TrimSpace(s)
	if s == "" {
		return a, fmt.Errorf("%w: empty", errAddress)
	}
	if strings.Contains(s, "@") {
		// Refused before anything is split: a password may hold '/', '?',
		// '#' or ':', so the userinfo cannot be told from the host, port
		// or path, and no part of the address may be quoted in an error
		// or taken as the device's host.
		return Address{}, fmt.Errorf("%w: credentials in the address are not accepted ('@' found); give username and password as parameters", errAddress)
	}
	rest := s
	if i := strings.Index(s, "://"); i >= 0 {
		scheme := strings.ToLower(s[:i])
		rest = s[i+3:]
		if scheme == "" {
			return a, fmt.Errorf("%w: empty scheme", errAddress)
		}
		for _, r := range scheme {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.' || r == '_') {
				return a, fmt.Errorf("%w: scheme has the character %q", errAddress, r)
			}
		}
		a.Driver, a.Transport, _ = strings.Cut(scheme, "+")
		if a.Driver == "" || strings.Contains(a.Transport, "+") {
			return a, fmt.Errorf("%w: scheme %q is not driver or driver+transport", errAddress, scheme)
		}
	}
	// Split off the query, then the path.
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		q, err := url.ParseQuery(rest[i+1:])
		if err != nil {
			return a, fmt.Errorf("%w: query: %v", errAddress, err)
		}
		if len(q) > 0 {
			a.Query = q
		}
		rest = rest[:i]
	}
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest = rest[:i]
	}
	hostport := rest
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		hostport, a.Path = rest[:i], rest[i:]
	}
	blank := func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }
	if strings.IndexFunc(a.Path, blank) >= 0 || strings.IndexFunc(hostport, blank) >= 0 {
		return Address{}, fmt.Errorf("%w: contains white space or a control character", errAddress)
	}
	host, port, err := splitHostPort(hostport)
	if err != nil {
		return Address{}, err
	}
	if host == "" {
		return Address{}, fmt.Errorf("%w: no host", errAddress)
	}
	a.Host, a.Port = host, port
	return a, nil
}

func splitHostPort(hp string) (string, int, error) {
	if strings.HasPrefix(hp, "[") {
		end := strings.IndexByte(hp, ']')
		if end < 0 {
			return "", 0, fmt.Errorf("%w: missing ']'", errAddress)
		}
		host, after := hp[1:end], hp[end+1:]
		if strings.ContainsAny(host, "[]") {
			return "", 0, fmt.Errorf("%w: bad brackets", errAddress)
		}
		if after == "" {
			return host, 0, nil
		}
		if after[0] != ':' {
			return "", 0, fmt.Errorf("%w: junk after ']'", errAddress)
		}
		p, err := parsePort(after[1:])
		return host, p, err
	}
	if strings.ContainsAny(hp, "[]") {
		return "", 0, fmt.Errorf("%w: bad brackets", errAddress)
	}
	switch strings.Count(hp, ":") {
	case 0:
		return hp, 0, nil
	case 1:
		host, ps, _ := strings.Cut(hp, ":")
		p, err := parsePort(ps)
		return host, p, err
	}
	// Several colons and no brackets: a bare IPv6 address, no port.
	if net.ParseIP(hp) == nil {
		return "", 0, fmt.Errorf("%w: host with several ':' is not an IPv6 address; put IPv6 in brackets to add a port", errAddress)
	}
	return hp, 0, nil
}

func parsePort(s string) (int, error) {
	if s == "" {
		return 0, nil // "host:" is taken as no port
	}
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 || p > 65535 || s[0] == '+' || s[0] == '-' {
		return 0, fmt.Errorf("%w: port %q is not a number from 1 to 65535", errAddress, s)
	}
	return p, nil
}

// CheckHost checks that h names a host: an IP address (IPv6 with or without
// brackets), or a DNS name of labels of letters, digits, '-' and '_' (1 to
// 63 characters, not beginning or ending with '-'; at most 253 in all, an
// optional final dot). Something that looks like an IPv4 address and is not
// one (10.0.0.300) is refused rather than looked up as a name.
func CheckHost(h string) error {
	if h == "" {
		return fmt.Errorf("%w: no host", errAddress)
	}
	if _, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")); err == nil {
		return nil
	}
	name := strings.TrimSuffix(h, ".")
	if len(name) == 0 || len(name) > 253 {
		return fmt.Errorf("%w: host name of %d characters (1 to 253)", errAddress, len(name))
	}
	digits := true
	for _, label := range strings.Split(name, ".") {
		if len(label) == 0 || len(label) > 63 {
			return fmt.Errorf("%w: host name with a label of %d characters (1 to 63)", errAddress, len(label))
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("%w: host name with a label that begins or ends with '-'", errAddress)
		}
		for _, r := range label {
			switch {
			case r >= '0' && r <= '9':
			case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '-', r == '_':
				digits = false
			default:
				return fmt.Errorf("%w: host name with the character %q", errAddress, r)
			}
		}
	}
	if digits {
		return fmt.Errorf("%w: %q is neither an IP address nor a host name", errAddress, h)
	}
	return nil
}
