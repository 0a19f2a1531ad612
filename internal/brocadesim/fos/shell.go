package fos

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Exit statuses of a single command (ssh switch 'cmd').
const (
	exitOK       = 0
	exitError    = 1
	exitNotFound = 127
)

// maxLine bounds one input line.
const maxLine = 4096

// Main runs the shell for one SSH session: args[0] is the state
// directory. With SSH_ORIGINAL_COMMAND set (ssh switch 'cmd; cmd'), it
// runs those commands and returns the exit status of the last; otherwise it
// runs the interactive shell on stdin until exit, logout or end of input.
func Main(args []string, getenv func(string) string, stdin io.Reader, stdout io.Writer) int {
	return MainDone(args, getenv, stdin, stdout, nil)
}

// MainDone is Main with a channel that is closed when the session has
// ended (the client left), which the Hang and NoPrompt faults wait for. A
// single command's input is empty, so its end says nothing; with a nil
// done, those faults wait for the end of the input (interactive) or a
// minute.
func MainDone(args []string, getenv func(string) string, stdin io.Reader, stdout io.Writer, done <-chan struct{}) int {
	if len(args) < 1 || args[0] == "" {
		fmt.Fprintln(stdout, "usage: fosshell STATEDIR")
		return 2
	}
	user := getenv("USER")
	if user == "" {
		user = getenv("LOGNAME")
	}
	if user == "" {
		user = "admin"
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	s := &shell{dir: args[0], user: user, w: w, stdin: stdin, done: done}
	if orig := getenv("SSH_ORIGINAL_COMMAND"); strings.TrimSpace(orig) != "" {
		s.single = true
		code := exitOK
		parts := strings.Split(orig, ";")
		if len(parts) > 100 {
			parts = parts[:100]
		}
		for _, part := range parts {
			var more bool
			code, more = s.run(part)
			w.Flush()
			if !more {
				break
			}
		}
		return code
	}
	return s.interactive()
}

type shell struct {
	dir    string
	user   string
	w      *bufio.Writer
	stdin  io.Reader
	done   <-chan struct{}
	single bool // running SSH_ORIGINAL_COMMAND, not the interactive shell
	cfg    Config
}

// interactive is the shell with a prompt.
func (s *shell) interactive() int {
	cfg, err := ReadConfig(s.dir)
	if err != nil {
		fmt.Fprintf(s.w, "fosshell: %v\n", err)
		return 1
	}
	s.cfg = cfg
	if cfg.Banner != "" {
		for _, l := range strings.Split(strings.TrimRight(cfg.Banner, "\n"), "\n") {
			s.line(l)
		}
	}
	r := bufio.NewReaderSize(s.stdin, maxLine)
	for {
		s.prompt()
		if err := s.w.Flush(); err != nil {
			return 0
		}
		line, err := readLine(r)
		if err != nil {
			return 0
		}
		if s.cfg.Echo {
			s.w.WriteString(line + "\n")
		}
		if _, more := s.run(line); !more {
			s.w.Flush()
			return 0
		}
	}
}

// readLine reads one line of at most maxLine bytes, without its line end.
func readLine(r *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		c, err := r.ReadByte()
		if err != nil {
			if b.Len() > 0 {
				return b.String(), nil
			}
			return "", err
		}
		if c == '\n' {
			return strings.TrimRight(b.String(), "\r"), nil
		}
		if b.Len() < maxLine {
			b.WriteByte(c)
		}
	}
}

func (s *shell) prompt() {
	p := s.cfg.Name + ":FID128:" + s.user + "> "
	if s.cfg.OddWhitespace {
		s.w.WriteString("\r\n \t\r\n")
	}
	s.w.WriteString(p)
}

// line writes one line of output, with odd spacing when configured.
func (s *shell) line(l string) {
	if s.cfg.OddWhitespace {
		l = oddSpacing(l) + " \t "
		s.w.WriteString(l + "\r\r\n")
		return
	}
	s.w.WriteString(l + "\n")
}

// oddSpacing widens the runs of spaces of l and turns some into tabs.
func oddSpacing(l string) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(l); i++ {
		if l[i] == ' ' {
			if i > 0 && l[i-1] != ' ' {
				n++
				if n%2 == 0 {
					b.WriteString(" \t ")
				} else {
					b.WriteString("   ")
				}
			}
			b.WriteByte(' ')
			continue
		}
		b.WriteByte(l[i])
	}
	return b.String()
}

// run runs one command line; it returns the exit status and whether the
// session goes on.
func (s *shell) run(line string) (int, bool) {
	cfg, err := ReadConfig(s.dir)
	if err != nil {
		s.line("fosshell: " + err.Error())
		return exitError, true
	}
	s.cfg = cfg
	words := strings.Fields(line)
	if len(words) == 0 {
		return exitOK, true
	}
	appendLine(s.dir, CommandsFile, s.user+"\t"+strings.Join(words, " "))
	cmd, args := strings.ToLower(words[0]), words[1:]
	switch cfg.Fault {
	case Drop:
		return exitOK, false
	case Hang:
		s.w.Flush()
		s.hang()
		return exitOK, false
	case NoPrompt:
		s.w.WriteString(noise)
		s.w.Flush()
		s.hang()
		return exitOK, false
	case Garbage:
		if cmd == "exit" || cmd == "logout" || cmd == "quit" {
			return exitOK, false
		}
		s.w.WriteString(noise)
		return exitOK, true
	}
	switch cmd {
	case "exit", "logout", "quit":
		return exitOK, false
	case "switchshow":
		return s.locked(func() int { return s.switchshow() }), true
	case "portshow":
		p, ok := s.portArg(cmd, args)
		if !ok {
			return exitError, true
		}
		return s.locked(func() int { return s.portshow(p) }), true
	case "portdisable", "portenable", "portcfgpersistentdisable", "portcfgpersistentenable":
		p, ok := s.portArg(cmd, args)
		if !ok {
			return exitError, true
		}
		if cfg.Fault == Refuse {
			s.line("RBAC permission denied.")
			return exitError, true
		}
		code := s.locked(func() int { return s.portCommand(cmd, p) })
		if code == exitOK && cfg.Fault == Chatty {
			s.line("please wait...")
			s.line("Committing configuration...done.")
		}
		return code, true
	case "version":
		s.line("Kernel:     2.6.34.6")
		s.line("Fabric OS:  v7.4.2 (emulated)")
		s.line("Made on:    Thu Jan 1 00:00:00 2026")
		s.line("Flash:      Thu Jan 1 00:00:00 2026")
		s.line("BootProm:   1.0.11")
		return exitOK, true
	case "help":
		s.line("switchshow portshow portdisable portenable portcfgpersistentdisable portcfgpersistentenable version exit")
		return exitOK, true
	}
	s.line("rbash: " + words[0] + ": command not found")
	return exitNotFound, true
}

// noise is what a switch in the Garbage or NoPrompt fault prints.
const noise = "\x1b[7m#@!\x1b[0m ~~~~ \xff\xfe 0x7f3a !!@@##\n" +
	"%%%% 01 02 03 ff fe -- Disabled ?? Online\n" +
	"   3   3   ::::   ????   Disabled (Persistent)\n" +
	"\x00\x07 ^^^ >> <<\n"

// hang waits until the session ends, or a minute has passed: for the
// interactive shell, the end of its input tells; for a single command,
// only done does.
func (s *shell) hang() {
	timer := time.NewTimer(time.Minute)
	defer timer.Stop()
	eof := make(chan struct{})
	if !s.single {
		go func() {
			io.Copy(io.Discard, s.stdin)
			close(eof)
		}()
	}
	select {
	case <-eof:
	case <-s.done:
	case <-timer.C:
	}
}

// locked runs f under the port lock, with the ports read into s.
func (s *shell) locked(f func() int) int {
	unlock, err := Lock(s.dir)
	if err != nil {
		s.line("Error: " + err.Error())
		return exitError
	}
	defer unlock()
	return f()
}

// portArg parses the port argument of cmd: N on a switch, slot/N on a
// director. It prints FOS's complaint and returns false when it is bad.
func (s *shell) portArg(cmd string, args []string) (int, bool) {
	if len(args) != 1 {
		s.line("Usage: " + cmd + " [slot/]port")
		return 0, false
	}
	a := args[0]
	bad := func() (int, bool) {
		s.line("Invalid port number " + a)
		return 0, false
	}
	var idx int
	if s.cfg.Director {
		slot, port, ok := strings.Cut(a, "/")
		if !ok {
			return bad()
		}
		sl, err1 := strconv.Atoi(slot)
		pn, err2 := strconv.Atoi(port)
		if err1 != nil || err2 != nil || sl < 1 || pn < 0 || pn >= PortsPerSlot {
			return bad()
		}
		idx = (sl-1)*PortsPerSlot + pn
	} else {
		n, err := strconv.Atoi(a)
		if err != nil || n < 0 || strings.HasPrefix(a, "+") {
			return bad()
		}
		idx = n
	}
	if idx >= s.cfg.Ports {
		return bad()
	}
	return idx, true
}

func (s *shell) portCommand(cmd string, p int) int {
	st, err := ReadPorts(s.dir, s.cfg.Ports)
	if err != nil {
		s.line("Error: " + err.Error())
		return exitError
	}
	pt := st[p]
	switch cmd {
	case "portdisable":
		pt.Disabled = true
	case "portenable":
		if pt.Persistent {
			// FOS refuses to enable a persistently disabled port this way.
			s.line("Port " + strconv.Itoa(p) + " is persistently disabled: use portcfgpersistentenable")
			return exitError
		}
		pt.Disabled = false
	case "portcfgpersistentdisable":
		pt.Disabled, pt.Persistent = true, true
	case "portcfgpersistentenable":
		pt.Disabled, pt.Persistent = false, false
	}
	st[p] = pt
	if err := WritePorts(s.dir, st); err != nil {
		s.line("Error: " + err.Error())
		return exitError
	}
	appendLine(s.dir, EventsFile, fmt.Sprintf("%s port %d %s by %s -> disabled=%v persistent=%v",
		time.Now().Format(time.RFC3339Nano), p, cmd, s.user, pt.Disabled, pt.Persistent))
	return exitOK
}

func (s *shell) switchshow() int {
	st, err := ReadPorts(s.dir, s.cfg.Ports)
	if err != nil {
		s.line("Error: " + err.Error())
		return exitError
	}
	for _, l := range []string{
		"switchName:     " + s.cfg.Name,
		"switchType:     109.1",
		"switchState:    Online",
		"switchMode:     Native",
		"switchRole:     Principal",
		"switchDomain:   1",
		"switchId:       fffc01",
		"switchWwn:      10:00:00:05:33:00:00:01",
		"zoning:         OFF",
		"switchBeacon:   OFF",
		"FC Router:      OFF",
		"Allow XISL Use: OFF",
		"LS Attributes:  [FID: 128, Base Switch: No, Default Switch: Yes, Address Mode 0]",
		"",
	} {
		s.line(l)
	}
	if s.cfg.Fault == Truncated {
		return exitOK
	}
	if s.cfg.Director {
		s.line("Index Slot Port Address Media Speed        State    Proto")
		s.line("==========================================================")
	} else {
		s.line("Index Port Address  Media Speed   State       Proto")
		s.line("==================================================")
	}
	for p := 0; p < s.cfg.Ports; p++ {
		if s.cfg.OddWhitespace && p%3 == 0 {
			s.line("")
		}
		pt := st[p]
		cols := fmt.Sprintf("%5d %4d", p, p)
		if s.cfg.Director {
			cols = fmt.Sprintf("%5d %4d %4d", p, p/PortsPerSlot+1, p%PortsPerSlot)
		}
		cols += fmt.Sprintf("   01%02x00   id    N16", p)
		switch {
		case s.cfg.Fault == ShortLines:
		case pt.Persistent:
			cols += "   No_Light    FC  Disabled (Persistent)"
		case pt.Disabled:
			cols += "   No_Light    FC  Disabled"
		default:
			cols += fmt.Sprintf("   Online      FC  F-Port  10:00:00:00:c9:00:00:%02x", p)
		}
		s.line(cols)
	}
	return exitOK
}

func (s *shell) portshow(p int) int {
	st, err := ReadPorts(s.dir, s.cfg.Ports)
	if err != nil {
		s.line("Error: " + err.Error())
		return exitError
	}
	pt := st[p]
	off := pt.Disabled || pt.Persistent
	flags := "0x24b03\tPRESENT ACTIVE F_PORT G_PORT U_PORT LOGICAL_ONLINE LOGIN NOELP LED ACCEPT FLOGI"
	reason := "None"
	state, phys, scn := "1\tOnline", "6\tIn_Sync", "32\tF_Port"
	if off {
		flags = "0x4001\tPRESENT U_PORT DISABLED LED"
		reason = "User disabled"
		if pt.Persistent {
			flags += " PERSISTENT_DISABLE"
			reason = "Persistently disabled"
		}
		state, phys, scn = "2\tOffline", "2\tNo_Light", "2\tOffline"
	}
	lines := []string{
		fmt.Sprintf("portIndex: %3d", p),
		fmt.Sprintf("portName: port%d", p),
		"portHealth: HEALTHY",
		"",
		"Authentication: None",
		"portDisableReason: " + reason,
		"portCFlags: 0x1",
		"portFlags: " + flags,
		"LocalSwcFlags: 0x0",
		"portType:  24.0",
		"portState: " + state,
		"Protocol: FC",
		"portPhys:  " + phys,
		"portScn:   " + scn,
		"port generation number:    148",
		"state transition count:    12",
		"",
		fmt.Sprintf("portId:    01%02x00", p),
		"portIfId:    4302000f",
		fmt.Sprintf("portWwn:   20:%02x:00:05:33:00:00:01", p),
		"portWwn of device(s) connected:",
	}
	if !off {
		lines = append(lines, fmt.Sprintf("\t10:00:00:00:c9:00:00:%02x", p))
	}
	lines = append(lines, "Distance:  normal", "portSpeed: N16Gbps")
	for _, l := range lines {
		s.line(l)
	}
	return exitOK
}
