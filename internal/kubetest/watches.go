package kubetest

import (
	"fmt"
	"net/http"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
)

// Watches counts the watches a client opened, by path: give a rest.Config
// to CountWatches and read Count after the client ran. Tests use it to
// check that a program watches each resource once.
type Watches struct {
	mu  sync.Mutex
	n   map[string]int
	log []string
}

// CountWatches has every client made from cfg counted by the Watches it
// returns.
func CountWatches(cfg *rest.Config) *Watches {
	w := &Watches{n: map[string]int{}}
	cfg.Wrap(transport.WrapperFunc(w.wrap))
	return w
}

func (w *Watches) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if req.URL.Query().Get("watch") == "true" {
			code := 0
			if resp != nil {
				code = resp.StatusCode
			}
			w.mu.Lock()
			if err == nil && code == http.StatusOK {
				// Only the watches the server answered: a 429 (a CRD's
				// watch cache not ready yet) is retried by the same
				// informer.
				w.n[req.URL.Path]++
			}
			w.log = append(w.log, fmt.Sprintf("%s?%s -> %d", req.URL.Path, req.URL.RawQuery, code))
			w.mu.Unlock()
		}
		return resp, err
	})
}

// Count returns how many watches of path (such as /api/v1/nodes) the
// server answered.
func (w *Watches) Count(path string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n[path]
}

// String lists every watch request and the server's status code, for a
// failure message.
func (w *Watches) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprint(w.log)
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
