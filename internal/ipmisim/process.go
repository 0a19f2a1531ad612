package ipmisim

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/command/chassis"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/testbin"
)

// goIPMIServerPkg is the reference BMC program: go-ipmi's
// cmd/goipmi-server bound to 127.0.0.1 (the upstream program listens on
// every interface).
const goIPMIServerPkg = "github.com/fencekit/fencekit/internal/ipmisim/goipmiserver"

// BuildGoIPMIServer builds go-ipmi's reference BMC program into a
// temporary directory of t (or takes it prebuilt, see internal/testbin)
// and returns the binary's path. The program is
// go-ipmi's cmd/goipmi-server (same packages, same in-memory hardware,
// configured by GOIPMI_SERVER_PORT, GOIPMI_SERVER_USER and
// GOIPMI_SERVER_PASS) except that it listens on 127.0.0.1 only.
func BuildGoIPMIServer(t testing.TB) string {
	t.Helper()
	bin, err := testbin.Build(goIPMIServerPkg, t.TempDir())
	if err != nil {
		t.Fatalf("ipmisim: %v", err)
	}
	return bin
}

// Proc is a BMC program running as a process of its own on Host:Port.
type Proc struct {
	Port           int
	User, Password string

	cmd    *exec.Cmd
	exited chan struct{}
	once   sync.Once
}

// StartGoIPMIServer starts the reference BMC program bin (built by
// BuildGoIPMIServer) on a free UDP port of 127.0.0.1 with user DefaultUser
// and password DefaultPassword, waits until it answers (at most 10 s), and
// stops it when t ends. The program's chassis starts powered off.
func StartGoIPMIServer(t testing.TB, bin string) *Proc {
	t.Helper()
	var errs []string
	for try := 0; try < simPortTries; try++ {
		p, err := startProc(t, bin)
		if err == nil {
			t.Cleanup(p.Stop)
			return p
		}
		errs = append(errs, err.Error())
	}
	t.Fatalf("ipmisim: the reference BMC program did not start: %s", strings.Join(errs, "; "))
	return nil
}

func startProc(t testing.TB, bin string) (*Proc, error) {
	port, err := freeUDPPort()
	if err != nil {
		return nil, err
	}
	p := &Proc{Port: port, User: DefaultUser, Password: DefaultPassword, exited: make(chan struct{})}
	log, err := os.Create(filepath.Join(t.TempDir(), "goipmi-server.log"))
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command(bin)
	p.cmd.Env = append(os.Environ(),
		fmt.Sprintf("GOIPMI_SERVER_PORT=%d", port),
		"GOIPMI_SERVER_USER="+p.User,
		"GOIPMI_SERVER_PASS="+p.Password,
	)
	p.cmd.Stdout, p.cmd.Stderr = log, log
	if !udpPortFree(port) {
		log.Close()
		return nil, fmt.Errorf("port %d/udp was taken before the start", port)
	}
	if err := p.cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	go func() {
		p.cmd.Wait()
		log.Close()
		close(p.exited)
	}()
	if err := waitAnswer(Host, port, p.User, p.Password, 0x0001, p.exited, simStartTimeout); err != nil {
		p.Stop()
		out, _ := os.ReadFile(log.Name())
		return nil, fmt.Errorf("port %d: %v (log: %s)", port, err, strings.TrimSpace(string(out)))
	}
	return p, nil
}

// Addr returns the program's address as host:port.
func (p *Proc) Addr() string { return fmt.Sprintf("%s:%d", Host, p.Port) }

// Truth reads the chassis power state over IPMI (the process's memory is
// out of reach): a session of its own, Get Chassis Status, close.
func (p *Proc) Truth() (fence.State, error) {
	var st fence.State
	err := p.session(func(ctx context.Context, c *client.Client) error {
		r, err := c.GetChassisStatus(ctx)
		if err != nil {
			return err
		}
		st = fence.StateOff
		if r.PowerIsOn {
			st = fence.StateOn
		}
		return nil
	})
	return st, err
}

// SetTruth powers the chassis up or down over IPMI, in a session of its own.
func (p *Proc) SetTruth(s fence.State) error {
	ctl := chassis.ChassisControlPowerDown
	if s == fence.StateOn {
		ctl = chassis.ChassisControlPowerUp
	}
	return p.session(func(ctx context.Context, c *client.Client) error {
		_, err := c.ChassisControl(ctx, ctl)
		return err
	})
}

func (p *Proc) session(f func(context.Context, *client.Client) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := client.NewClient(Host, p.Port, p.User, p.Password)
	if err != nil {
		return err
	}
	c.WithCipherSuiteID(types.CipherSuiteID3).WithTimeout(time.Second).WithRetry(1)
	if err := c.Connect(ctx); err != nil {
		closeQuietly(c)
		return err
	}
	defer closeQuietly(c)
	return f(ctx, c)
}

// Stop stops the program: SIGTERM, then SIGKILL after 3 s. It is safe to
// call more than once; StartGoIPMIServer calls it when the test ends.
func (p *Proc) Stop() {
	p.once.Do(func() {
		if p.cmd == nil || p.cmd.Process == nil {
			return
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(simStopTimeout):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
}
