package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"

	"github.com/fencekit/fencekit/fence/controller"
)

// /healthz fails only for a leader whose loop has not passed for three
// intervals (30 s at least); a replica waiting for the lease is alive.
// /readyz waits for the caches.
func TestProbes(t *testing.T) {
	p := &probes{ctl: &controller.Controller{}, interval: time.Second}
	code := func(h http.HandlerFunc) int {
		w := httptest.NewRecorder()
		h(w, httptest.NewRequest(http.MethodGet, "/", nil))
		return w.Code
	}
	assert.Equal(t, http.StatusOK, code(p.healthz), "not leading")
	assert.Equal(t, http.StatusServiceUnavailable, code(p.readyz), "not synced")
	p.synced.Store(true)
	assert.Equal(t, http.StatusOK, code(p.readyz))

	p.leading.Store(time.Now().UnixNano())
	assert.Equal(t, http.StatusOK, code(p.healthz), "just leading")
	p.leading.Store(time.Now().Add(-time.Minute).UnixNano())
	assert.Equal(t, http.StatusServiceUnavailable, code(p.healthz), "leading a minute without a pass")
}

// /debug/pprof/ is served beside /metrics only with --profiling, and
// without the command line (a flag could carry what a reader may not see).
func TestProfiling(t *testing.T) {
	for _, on := range []bool{false, true} {
		h := metricsHandler(prometheus.NewRegistry(), on)
		get := func(path string) int {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			return rec.Code
		}
		assert.Equal(t, http.StatusOK, get("/metrics"))
		want := http.StatusNotFound
		if on {
			want = http.StatusOK
		}
		assert.Equal(t, want, get("/debug/pprof/heap"), "profiling=%v", on)
		assert.NotEqual(t, http.StatusOK, get("/debug/pprof/cmdline"), "profiling=%v", on)
	}
}
