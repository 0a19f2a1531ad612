package nodeagent

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// What the agents and a controller counting on their word
// (kube/agentfence) share through the API server, in the agents'
// namespace:
//
//   - each agent's Lease, LeasePrefix+NODE, labelled LeaseLabel=LeaseLabelValue,
//     whose AgentAnnotation is its Published self, and whose
//     ReportsAnnotation holds its Reports on the fence requests it has
//     seen;
//   - the ConfigMap RequestsConfigMap, written by the controller only: one
//     key per node being fenced, whose value begins with the request's
//     identity (RequestID); what follows it is the controller's.
const (
	LeasePrefix       = "fencekit-agent-"
	LeaseLabel        = "app.kubernetes.io/name"
	LeaseLabelValue   = "fencekit-agent"
	AddressAnnotation = "fencekit.io/heartbeat-address"
	AgentAnnotation   = "fencekit.io/agent"
	ReportsAnnotation = "fencekit.io/reports"
	RequestsConfigMap = "fencekit-agent-requests"
)

// The states an agent publishes.
const (
	// StateRunning: the agent guards the node with its watchdog.
	StateRunning = "running"
	// StateStopped: the agent stopped cleanly and disarmed the watchdog:
	// nothing guards the node, and no controller may count it off on the
	// agents' word.
	StateStopped = "stopped"
)

// Published is what an agent says of itself in its Lease: what a
// controller needs to know how long, at most, the node runs on once cut
// off. An agent runs with exactly what its Lease says while the Lease is
// unchanged: it counts its quorum among Peers only once a renewal that
// lists them succeeded, and a restarted agent runs with the smaller of its
// own timings and those it published before (kept on the node).
type Published struct {
	// Boot is the node's boot (the kernel's boot_id): the Node object's
	// status.nodeInfo.bootID once the kubelet has reported it.
	Boot string `json:"boot"`
	// Incarnation names this run of the agent: what it reports on a
	// request is counted from the first report of this run the
	// controller saw.
	Incarnation string `json:"incarnation"`
	State       string `json:"state"`
	// SelfFenceTimeout, WatchdogTimeout and Interval, in seconds: the
	// node fences itself once it has not reached the API server or its
	// quorum for SelfFenceTimeout (counted from the start of its last
	// look that did; a look that returns more than two Intervals after it
	// began counts for nothing), and its watchdog resets it within
	// WatchdogTimeout of its last kick.
	SelfFenceTimeout float64 `json:"selfFenceTimeout"`
	WatchdogTimeout  float64 `json:"watchdogTimeout"`
	Interval         float64 `json:"interval"`
	// Peers are the agents the node counts its quorum among: it has one
	// when more than half of them and itself are reached.
	Peers []string `json:"peers"`
}

// Timings returns the published timings as durations.
func (p *Published) Timings() (selfFence, watchdog, interval time.Duration) {
	d := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	return d(p.SelfFenceTimeout), d(p.WatchdogTimeout), d(p.Interval)
}

// maxTiming bounds each published timing, in seconds (a day): a duration
// far beyond it would not convert to a time.Duration.
const maxTiming = 86400

// ParsePublished reads an agent Lease's AgentAnnotation.
func ParsePublished(s string) (*Published, error) {
	if s == "" {
		return nil, fmt.Errorf("no %s annotation: the agent does not say what it runs with", AgentAnnotation)
	}
	var p Published
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		return nil, fmt.Errorf("%s: %w", AgentAnnotation, err)
	}
	switch {
	case p.Boot == "" || p.Incarnation == "":
		return nil, fmt.Errorf("%s: no boot or incarnation", AgentAnnotation)
	case !(p.SelfFenceTimeout > 0 && p.SelfFenceTimeout <= maxTiming && p.WatchdogTimeout > 0 && p.WatchdogTimeout <= maxTiming &&
		p.Interval > 0 && p.Interval*3 <= p.WatchdogTimeout):
		return nil, fmt.Errorf("%s: timings out of range (self-fence %gs, watchdog %gs, interval %gs)", AgentAnnotation, p.SelfFenceTimeout, p.WatchdogTimeout, p.Interval)
	case slices.Contains(p.Peers, ""):
		return nil, fmt.Errorf("%s: an empty peer name", AgentAnnotation)
	case len(slices.Compact(slices.Sorted(slices.Values(p.Peers)))) != len(p.Peers):
		return nil, fmt.Errorf("%s: a peer named twice", AgentAnnotation)
	}
	return &p, nil
}

// RequestID is the identity of a request, from its value in
// RequestsConfigMap.
func RequestID(value string) string {
	id, _, _ := strings.Cut(value, " ")
	return id
}

// Report is what an agent says, in its Lease, of another node for which a
// fence request stands.
type Report struct {
	// Request is the request's identity.
	Request string `json:"request"`
	// SeenFor is how long since this agent first saw the request, in
	// seconds, when it wrote the report.
	SeenFor float64 `json:"seenFor"`
	// UnheardFor is how long since this agent last received the node's
	// heartbeat (with its proof), or since this agent started when it
	// never did, in seconds, at the same moment.
	UnheardFor float64 `json:"unheardFor"`
}

// ParseReports reads an agent Lease's ReportsAnnotation: node -> report.
func ParseReports(s string) (map[string]Report, error) {
	out := map[string]Report{}
	if s == "" {
		return out, nil
	}
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, fmt.Errorf("%s: %w", ReportsAnnotation, err)
	}
	for node, r := range out {
		// Durations a time.Duration holds (a billion seconds, some 30
		// years), not negative.
		if !(r.SeenFor >= 0 && r.SeenFor <= 1e9 && r.UnheardFor >= 0 && r.UnheardFor <= 1e9) {
			return nil, fmt.Errorf("%s: node %s: durations out of range", ReportsAnnotation, node)
		}
	}
	return out, nil
}

// QuorumLost is how many of n peers must not acknowledge a node's
// heartbeats for it to have no quorum (Check.Quorate): more than half of
// the n+1 agents are then out of its reach.
func QuorumLost(n int) int { return n/2 + 1 }

// QuorateAmong reports whether a node that reached the peers in reached
// has its quorum among peers.
func QuorateAmong(reached map[string]bool, peers []string) bool {
	r := 0
	for _, p := range peers {
		if reached[p] {
			r++
		}
	}
	return Check{Reached: r, Peers: len(peers)}.Quorate()
}
