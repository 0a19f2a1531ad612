// Package etcdv3 implements teardown.Etcd with the etcd v3 client
// (go.etcd.io/etcd/client/v3): it lists a cluster's members, removes one,
// and reads one member's health the way etcdctl endpoint health does.
//
// A Cluster talks to the cluster through one client over the endpoints it
// was given; MemberHealth dials the member itself (its client URLs) with
// the same TLS settings and credentials, so that the answer is that
// member's, not the cluster's through another member. Credentials are only
// handed to the client: they never appear in an error or a log record.
//
//	c, err := etcdv3.New([]string{"https://10.0.0.1:2379", "https://10.0.0.2:2379"}, etcdv3.Options{TLS: tlsConfig})
//	if err != nil { ... }
//	defer c.Close()
//	x := &teardown.Executor{Etcd: map[string]teardown.Etcd{"kubernetes": c}, ...}
//
// etcd checks a removal itself (its strict reconfiguration check, on by
// default): it refuses with "unhealthy cluster" while the member handling
// the request has not been connected to a quorum of peers for 5 seconds,
// for example right after a restart. The teardown's remove-etcd step
// retries until its timeout, so such a refusal only delays it.
//
// Tests run a real three-member cluster in-process
// (go.etcd.io/etcd/server/v3/embed) on loopback ports.
package etcdv3
