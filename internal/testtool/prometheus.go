package testtool

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Prometheus is a real Prometheus server on loopback, for the tests of
// what fencekit's programs export and of its alert rules.
type Prometheus struct {
	// URL is the base of its HTTP API: http://127.0.0.1:PORT.
	URL string
	// Logs holds what it printed.
	Logs *SyncBuffer
}

// StartPrometheus starts the Prometheus at bin (Require(t, "prometheus",
// "prometheus")) with the configuration config (prometheus.yml's YAML) on
// a loopback port, its data in a directory of t's, and stops it when t
// ends.
func StartPrometheus(t testing.TB, bin, config string) *Prometheus {
	t.Helper()
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testtool: %v", err)
	}
	addr := l.Addr().String()
	l.Close()
	file := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatalf("testtool: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config.file="+file, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr)
	p := &Prometheus{URL: "http://" + addr, Logs: &SyncBuffer{}}
	cmd.Stdout, cmd.Stderr = p.Logs, p.Logs
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("testtool: starting prometheus: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus said:\n%s", p.Logs)
		}
	})
	return p
}

// Get decodes the data of the API's answer at path (such as
// /api/v1/targets) into v; an error while the server starts, or when the
// answer is not a success.
func (p *Prometheus) Get(ctx context.Context, path string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var body struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
		Error  string          `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return err
	}
	if body.Status != "success" {
		return fmt.Errorf("prometheus %s: %s %s", path, body.Status, body.Error)
	}
	return json.Unmarshal(body.Data, v)
}
