package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fencekit/fencekit/fence/controller"
)

// probes answers /healthz and /readyz.
type probes struct {
	ctl      *controller.Controller
	interval time.Duration
	synced   atomic.Bool
	leading  atomic.Int64 // unix nanoseconds since this instance leads; 0 when it does not
}

// liveFor is how long the leader's loop may go without a pass before
// /healthz fails: three intervals, 30 s at least.
func (p *probes) liveFor() time.Duration { return max(3*p.interval, 30*time.Second) }

// healthz fails only for a leader whose loop stopped passing: a replica
// that waits for the lease is alive.
func (p *probes) healthz(w http.ResponseWriter, _ *http.Request) {
	since := p.leading.Load()
	if since != 0 {
		last := p.ctl.LastPass()
		if lead := time.Unix(0, since); last.Before(lead) {
			last = lead
		}
		if age := time.Since(last); age > p.liveFor() {
			http.Error(w, fmt.Sprintf("the controller's last pass was %v ago (more than %v)", age.Round(time.Second), p.liveFor()), http.StatusServiceUnavailable)
			return
		}
	}
	_, _ = w.Write([]byte("ok\n"))
}

// readyz succeeds once the caches have synced.
func (p *probes) readyz(w http.ResponseWriter, _ *http.Request) {
	if !p.synced.Load() {
		http.Error(w, "caches not synced yet", http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

// serve listens on addr and serves h until ctx ends; it returns the
// address it listens on, or nil when addr is empty.
func serve(ctx context.Context, addr, what string, h http.Handler, logger *slog.Logger, tlsConfig ...*tls.Config) (net.Addr, error) {
	if addr == "" {
		return nil, nil
	}
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if len(tlsConfig) > 0 && tlsConfig[0] != nil {
		l = tls.NewListener(l, tlsConfig[0])
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("http server stopped", "what", what, "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	logger.Info("serving", "what", what, "address", l.Addr().String())
	return l.Addr(), nil
}

// metricsHandler returns /metrics over reg, with the Go runtime's and the
// process's collectors added, and with profiling Go's profiles under
// /debug/pprof/.
func metricsHandler(reg *prometheus.Registry, profiling bool) http.Handler {
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	if profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// probeHandler returns /healthz and /readyz.
func probeHandler(p *probes) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", p.healthz)
	mux.HandleFunc("/readyz", p.readyz)
	return mux
}
