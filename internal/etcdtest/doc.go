// Package etcdtest runs a real etcd cluster in-process for tests: members
// of go.etcd.io/etcd/server/v3/embed on free loopback ports, each with its
// own data directory, tuned for speed (10 ms ticks, 100 ms elections, no
// fsync) and silent (no logs).
//
//	c := etcdtest.StartCluster(t, 3)           // etcd-1, etcd-2, etcd-3; closed when t ends
//	cli, err := etcdv3.New(c.Endpoints(), etcdv3.Options{})
//	...
//	c.Members[1].Stop()                        // a crash
//	err = c.Members[1].Restart()               // back, from its data directory
//
// StartNamed names the members, for example after the nodes they run on;
// Start starts a cluster outside a test (the caller closes it).
//
// # Members
//
// Stop ends a member at once, as a crash or a power off would: a graceful
// stop first hands the leadership over and waits seconds for peers that
// may be stopping too. Restart starts it again from its data directory
// with the same name and URLs, and returns without waiting for it to
// serve (WaitReady does). A member removed from its cluster stops its own
// server soon after; WaitStopped waits for that.
//
// Free ports are found by listening on port 0 and closing the listener,
// so another process may take one before the member binds it: a start that
// fails with "address already in use" is tried again, three times at most,
// with new ports.
package etcdtest
