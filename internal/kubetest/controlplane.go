package kubetest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	_ "embed" // the kwok stages
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KwokVersion is the kwok release the harness runs as simulated kubelets;
// scripts/kube-binaries.sh and internal/kubetest/tools/kwok pin the same.
const KwokVersion = "v0.8.0"

// KwokGroupAnnotation is the node annotation whose value names the kwok
// process that plays the node's kubelet (its group, see
// [ControlPlane.AddNodes]).
const KwokGroupAnnotation = "kwok.x-k8s.io/node"

//go:embed kwok/stages.yaml
var kwokStages []byte

// ControlPlaneOptions configures [StartControlPlane]. The zero value is
// ready to use.
type ControlPlaneOptions struct {
	// Options configures the API server and etcd.
	Options
	// NodeMonitorGracePeriod is how long the node lifecycle controller
	// waits for a node's heartbeat before it marks the node Ready=Unknown.
	// Zero means 10 s (a real cluster's default is 50 s).
	NodeMonitorGracePeriod time.Duration
	// NodeLease is the length of the node leases kwok renews (it renews at
	// a quarter of it). Zero means 8 s, which keeps a node Ready with a
	// 10 s grace period.
	NodeLease time.Duration
	// KwokParallelism is how many leases and stages each kwok process
	// works on at once. Zero means 16; raise it for thousands of nodes.
	KwokParallelism int
	// ExtraControllerManagerArgs are appended to the controller manager's
	// command line.
	ExtraControllerManagerArgs []string
}

// ControlPlane is a cluster with the whole control plane: etcd,
// kube-apiserver, kube-controller-manager (every controller, among them
// the node lifecycle, taint eviction, pod garbage collection and
// StatefulSet controllers) and kube-scheduler, with nodes played by kwok,
// all on 127.0.0.1. Its methods are safe for concurrent use.
type ControlPlane struct {
	*Cluster

	opts       ControlPlaneOptions
	kwokBin    string
	kubeconfig string
	stages     string
	cm, sched  *process

	mu     sync.Mutex
	groups map[string]*kwokGroup
}

// kwokGroup is one kwok process and the nodes it plays.
type kwokGroup struct {
	nodes []string
	proc  *process // nil while stopped
}

// findControlPlaneAssets returns the paths of the controller manager, the
// scheduler and kwok in dir, or an error wrapping ErrNoAssets.
func findControlPlaneAssets(dir string) (cm, sched, kwok string, err error) {
	paths := []string{filepath.Join(dir, "kube-controller-manager"), filepath.Join(dir, "kube-scheduler"), filepath.Join(dir, "kwok")}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return "", "", "", fmt.Errorf("%w: no executable %s", ErrNoAssets, p)
		}
	}
	return paths[0], paths[1], paths[2], nil
}

// StartControlPlane starts a private control plane for t and stops it when
// t ends. Missing binaries skip the test (fail it with CI=true).
func StartControlPlane(t testing.TB, o ControlPlaneOptions) *ControlPlane {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp, err := NewControlPlane(ctx, o)
	if err != nil {
		failStart(t, err)
	}
	t.Logf("kubetest: control plane at %s ready in %v", cp.Host(), cp.StartupTime().Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range []*process{cp.apiserver, cp.cm, cp.sched} {
				if p != nil {
					t.Logf("kubetest: last lines of the %s log:\n%s", p.name, p.logTail(15))
				}
			}
		}
		if err := cp.Stop(); err != nil {
			t.Errorf("kubetest: %v", err)
		}
	})
	return cp
}

// NewControlPlane starts etcd, the API server (with service accounts and
// the Node and RBAC authorizers, which the controller manager needs), the
// controller manager and the scheduler, and returns once the controller
// manager has created the default service account. It starts no node: see
// [ControlPlane.AddNodes]. The caller must call [ControlPlane.Stop].
func NewControlPlane(ctx context.Context, o ControlPlaneOptions) (_ *ControlPlane, err error) {
	dir := o.AssetsDir
	if dir == "" {
		dir = AssetsDir()
	}
	cmBin, schedBin, kwokBin, err := findControlPlaneAssets(dir)
	if err != nil {
		return nil, err
	}
	if o.NodeMonitorGracePeriod <= 0 {
		o.NodeMonitorGracePeriod = 10 * time.Second
	}
	if o.NodeLease <= 0 {
		o.NodeLease = 8 * time.Second
	}
	if o.KwokParallelism <= 0 {
		o.KwokParallelism = 16
	}
	begin := time.Now()
	co := o.Options
	co.controlPlane = true
	c, err := StartCluster(ctx, co)
	if err != nil {
		return nil, err
	}
	cp := &ControlPlane{Cluster: c, opts: o, kwokBin: kwokBin, groups: map[string]*kwokGroup{}}
	defer func() {
		if err != nil {
			_ = cp.Stop()
		}
	}()
	if err := cp.writeFiles(); err != nil {
		return nil, err
	}
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	auth := []string{"--kubeconfig=" + cp.kubeconfig, "--authentication-kubeconfig=" + cp.kubeconfig,
		"--authorization-kubeconfig=" + cp.kubeconfig, "--bind-address=127.0.0.1"}
	cmArgs := append(slices.Clone(auth),
		"--secure-port="+strconv.Itoa(ports[0]),
		"--cert-dir="+filepath.Join(c.dir, "cm-certs"),
		"--controllers=*",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file="+filepath.Join(c.dir, "sa.key"),
		"--root-ca-file="+filepath.Join(c.dir, "ca.crt"),
		"--leader-elect=false",
		"--node-monitor-period=1s",
		"--node-monitor-grace-period="+o.NodeMonitorGracePeriod.String(),
		"--kube-api-qps=200", "--kube-api-burst=400",
		"--profiling=false",
	)
	cmArgs = append(cmArgs, o.ExtraControllerManagerArgs...)
	if cp.cm, err = startProcess("kube-controller-manager", cmBin, filepath.Join(c.dir, "kube-controller-manager.log"), cmArgs...); err != nil {
		return nil, err
	}
	schedArgs := append(slices.Clone(auth),
		"--secure-port="+strconv.Itoa(ports[1]),
		"--cert-dir="+filepath.Join(c.dir, "scheduler-certs"),
		"--leader-elect=false",
		"--profiling=false",
	)
	if cp.sched, err = startProcess("kube-scheduler", schedBin, filepath.Join(c.dir, "kube-scheduler.log"), schedArgs...); err != nil {
		return nil, err
	}

	ctx, cancel := context.WithTimeout(ctx, o.readyTimeout())
	defer cancel()
	// The components serve /healthz to anyone on their self-signed
	// certificates; only the connection's encryption matters here.
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}}} //nolint:gosec // loopback health probe of a test's own child
	defer insecure.CloseIdleConnections()
	if err := waitHealthy(ctx, cp.cm, insecure, "https://127.0.0.1:"+strconv.Itoa(ports[0])+"/healthz", ""); err != nil {
		return nil, err
	}
	if err := waitHealthy(ctx, cp.sched, insecure, "https://127.0.0.1:"+strconv.Itoa(ports[1])+"/healthz", ""); err != nil {
		return nil, err
	}
	// The service-account controllers run once the default account of the
	// default namespace exists: the controller manager is at work.
	for {
		_, err := c.Client().CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			break
		}
		if cp.cm.exited() {
			return nil, cp.cm.exitError()
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("kubetest: the controller manager made no default service account (%v); last lines of %s:\n%s",
				ctx.Err(), cp.cm.logPath, cp.cm.logTail(30))
		case <-time.After(pollInterval):
		}
	}
	c.ready = time.Since(begin)
	return cp, nil
}

// readyTimeout is ReadyTimeout or its default.
func (o Options) readyTimeout() time.Duration {
	if o.ReadyTimeout <= 0 {
		return 60 * time.Second
	}
	return o.ReadyTimeout
}

// writeFiles writes the components' kubeconfig (the admin token), the CA
// alone (the controller manager publishes it to every namespace and
// refuses a bundle whose first certificate is not a CA) and kwok's
// configuration.
func (cp *ControlPlane) writeFiles() error {
	var ca []byte
	for rest := cp.config.CAData; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if cert, err := x509.ParseCertificate(b.Bytes); err == nil && cert.IsCA {
			ca = pem.EncodeToMemory(b)
			break
		}
	}
	if ca == nil {
		return errors.New("kubetest: the API server's certificate file holds no CA certificate")
	}
	if err := os.WriteFile(filepath.Join(cp.dir, "ca.crt"), ca, 0o600); err != nil {
		return fmt.Errorf("kubetest: %w", err)
	}
	cp.kubeconfig = filepath.Join(cp.dir, "kubeconfig")
	if err := cp.WriteKubeconfig(cp.kubeconfig); err != nil {
		return err
	}
	par := strconv.Itoa(cp.opts.KwokParallelism)
	conf := "apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokConfiguration\noptions:\n" +
		"  nodeLeaseParallelism: " + par + "\n  nodePlayStageParallelism: " + par + "\n  podPlayStageParallelism: " + par + "\n---\n"
	cp.stages = filepath.Join(cp.dir, "kwok.yaml")
	if err := os.WriteFile(cp.stages, append([]byte(conf), kwokStages...), 0o600); err != nil {
		return fmt.Errorf("kubetest: %w", err)
	}
	return nil
}

// Kubeconfig returns the path of a kubeconfig file for the cluster's admin,
// as the components use.
func (cp *ControlPlane) Kubeconfig() string { return cp.kubeconfig }

// AddNodes creates the named nodes, labelled with labels, and starts one
// kwok process that plays their kubelets under the name group: it makes
// them Ready, renews their leases and runs the pods bound to them.
// [ControlPlane.StopNodes] kills that process, so that the group's nodes
// stop at once, as a rack that loses power does; a group of one node is one
// machine. A group name is used once.
func (cp *ControlPlane) AddNodes(ctx context.Context, group string, labels map[string]string, names ...string) error {
	if group == "" || strings.ContainsAny(group, ",=") {
		return fmt.Errorf("kubetest: kwok group %q: want a name without ',' or '='", group)
	}
	cp.mu.Lock()
	if _, ok := cp.groups[group]; ok {
		cp.mu.Unlock()
		return fmt.Errorf("kubetest: kwok group %q exists", group)
	}
	g := &kwokGroup{nodes: slices.Clone(names)}
	cp.groups[group] = g
	cp.mu.Unlock()
	for _, name := range names {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{corev1.LabelHostname: name, "type": "kwok"},
			Annotations: map[string]string{KwokGroupAnnotation: group},
		}}
		for k, v := range labels {
			n.Labels[k] = v
		}
		if _, err := cp.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("kubetest: creating node %s: %w", name, err)
		}
	}
	return cp.StartNodes(group)
}

// StopNodes kills (SIGKILL) the kwok process of group: its nodes' leases
// and pods are left as a dead machine leaves them, and the node lifecycle
// controller marks them Ready=Unknown after its grace period.
func (cp *ControlPlane) StopNodes(group string) error {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	g, ok := cp.groups[group]
	if !ok {
		return fmt.Errorf("kubetest: no kwok group %q", group)
	}
	if g.proc == nil {
		return nil
	}
	err := g.proc.stop(0)
	g.proc = nil
	return err
}

// PauseNodes stops the kwok process of group (SIGSTOP) for d, then lets
// it go on (SIGCONT): kubelets that stall (a long pause), their leases not
// renewed meanwhile, then renewed again as if nothing happened. It returns
// once they go on again.
func (cp *ControlPlane) PauseNodes(group string, d time.Duration) error {
	cp.mu.Lock()
	g, ok := cp.groups[group]
	var p *process
	if ok {
		p = g.proc
	}
	cp.mu.Unlock()
	if !ok {
		return fmt.Errorf("kubetest: no kwok group %q", group)
	}
	if p == nil {
		return fmt.Errorf("kubetest: kwok group %q is stopped", group)
	}
	if err := pauseGroup(p.cmd, true); err != nil {
		return err
	}
	time.Sleep(d)
	return pauseGroup(p.cmd, false)
}

// StartNodes starts the kwok process of group again: its nodes renew their
// leases and turn Ready, as machines that were powered on again do.
func (cp *ControlPlane) StartNodes(group string) error {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	g, ok := cp.groups[group]
	if !ok {
		return fmt.Errorf("kubetest: no kwok group %q", group)
	}
	if g.proc != nil {
		return nil
	}
	p, err := startProcess("kwok "+group, cp.kwokBin, filepath.Join(cp.dir, "kwok-"+group+".log"),
		"--config="+cp.stages,
		"--kubeconfig="+cp.kubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+KwokGroupAnnotation+"="+group,
		"--node-lease-duration-seconds="+strconv.Itoa(int(cp.opts.NodeLease.Seconds())),
		"--cidr=10.244.0.1/16",
		"--node-ip=127.0.0.1",
	)
	if err != nil {
		return err
	}
	g.proc = p
	return nil
}

// KwokLog returns the end of group's kwok log, for a failing test.
func (cp *ControlPlane) KwokLog(group string, lines int) string {
	return tailOf(filepath.Join(cp.dir, "kwok-"+group+".log"), lines)
}

// ControllerManagerLog returns the end of the controller manager's log.
func (cp *ControlPlane) ControllerManagerLog(lines int) string { return cp.cm.logTail(lines) }

// tailOf returns the last lines of the file at path.
func tailOf(path string, lines int) string {
	p := &process{logPath: path}
	return p.logTail(lines)
}

// Stop stops every kwok process, the scheduler, the controller manager,
// then the API server and etcd, and removes the cluster's directory.
// Calling it again returns the first result.
func (cp *ControlPlane) Stop() error {
	var errs []error
	cp.mu.Lock()
	for _, g := range cp.groups {
		if g.proc != nil {
			errs = append(errs, g.proc.stop(0))
			g.proc = nil
		}
	}
	cp.mu.Unlock()
	for _, p := range []*process{cp.sched, cp.cm} {
		if p != nil {
			errs = append(errs, p.stop(2*time.Second))
		}
	}
	errs = append(errs, cp.Cluster.Stop())
	return errors.Join(errs...)
}
