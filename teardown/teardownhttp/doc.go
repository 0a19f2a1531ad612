// Package teardownhttp serves a teardown over HTTP with the endpoints,
// bodies, status codes and reasons of Airship's node teardown design
// (Promenade's decommission API), over a teardown.Executor, and is the
// client a deployment tool calls it with.
//
// The design's sequence of calls for a redeploy is: POST
// /nodes/{node_id}/decommission with the design reference (drain, clear
// labels, remove etcd, wait for etcd, shut the kubelet down), then the
// provisioner's destroy (here POST /nodes/{node_id}/destroy: wipe, a power
// off a device confirms, release), then POST
// /nodes/{node_id}/remove-from-cluster. Each step has its own endpoint too,
// and GET /etcd-cluster-health-statuses?design_ref=... reports every etcd
// member's health. POST /nodes/{node_id}/redeploy runs the whole plan in
// one call, with teardown.ParseRequest's parameters.
//
// Every request is authenticated first (HandlerOptions.Auth: bearer tokens
// or HMAC-signed requests, see package apiauth); serve it over TLS. A
// refused request gets 401 and nothing is done. Two requests for the same
// node never run at once: the second gets 409 Conflict. Bad input gets 400
// naming the parameter as the endpoint spells it ("timeout",
// "grace-period", "design_ref", "href"), MissingDesignRef when the design
// reference is missing, and nothing is done.
package teardownhttp
