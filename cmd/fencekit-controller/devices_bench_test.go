package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fencekit/fencekit/kube/fencekube"
)

// BenchmarkDeviceChecks5000 runs the controller (built and started as its
// own process) against a real control plane of 5,000 kwok nodes, each
// with a fence method on an in-process fake PDU outlet (fake://, in the
// controller's memory: a status read costs no network), with the device
// health checks every minute (ten times the default rate), and reports
// over the first round (until every node's condition FenceDevicesReady is
// written, once each: first-round-s) and a steady minute after it
// (nothing to write):
//
//   - checks/s: device checks (one status read each), from the program's
//     fencekit_device_check_duration_seconds_count;
//   - req/s: the controller's requests to the API server (audit log),
//     watches included;
//   - cpu-ms/s, and rss-MiB at the end.
//
// It takes about 8 minutes.
func BenchmarkDeviceChecks5000(b *testing.B) {
	const nodes = 5000
	b.ReportAllocs()
	dir := b.TempDir()
	ctx := b.Context()
	c, auditLog := auditedControlPlane(b, dir)
	c.InstallCRD(b, crdPath)
	ns := c.Namespace(b)
	admin := c.Client()

	// The kwok nodes, Ready, and their fence configuration: one method
	// each, an outlet of one of two fake PDUs of 2,500 outlets.
	createConfigMap(b, admin, ns, "fence-method-template-pdu", "template.properties",
		"name=pdu\ndriver=fake\nplugs=4096\nstonith_status_sleep=0\naction=off\n")
	start := time.Now()
	names := make([]string, nodes)
	for i := range names {
		names[i] = fmt.Sprintf("node-%05d", i)
	}
	must(b, c.AddNodes(ctx, "bulk", nil, names...))
	waitAllReady(b, admin, nodes, 10*time.Minute)
	parallel(b, nodes, 32, func(i int) error {
		name := names[i]
		pdu := fmt.Sprintf("bench-pdu-%d", i%2)
		for _, cm := range []*corev1.ConfigMap{
			{ObjectMeta: metav1.ObjectMeta{Name: "fence-method-pdu-" + name}, Data: map[string]string{"method.properties": fmt.Sprintf("template=pdu\naddress=fake://%s\nplug=%d\n", pdu, i/2+1)}},
			{ObjectMeta: metav1.ObjectMeta{Name: "fence-config-" + name}, Data: map[string]string{"config.properties": "node_name=" + name + "\npower_management=pdu\n"}},
		} {
			if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		return nil
	})
	b.Logf("%d nodes and their fence configuration written in %v", nodes, time.Since(start).Round(time.Second))

	bin := filepath.Join(dir, "fencekit-controller")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	must(b, c.WriteKubeconfigAs(kubeconfig, benchUser))
	metricsAddr := freeAddr(b)
	ctl := startController(b, bin, dir, "--kubeconfig="+kubeconfig, "--namespace="+ns, "--identity=bench",
		"--leader-elect=true", "--log-level=info", "--metrics-bind-address="+metricsAddr, "--metrics-secure=false",
		"--device-check-interval=1m", "--device-check-rate=200", "--device-check-concurrency=16", "--force-detach-on-timeout=disabled")
	// The checks begin once it leads and its caches are synced.
	deadline := time.Now().Add(3 * time.Minute)
	for checks(b, metricsAddr) < 0 {
		if time.Now().After(deadline) {
			b.Fatal("the controller serves no device checks after 3 minutes")
		}
		time.Sleep(200 * time.Millisecond)
	}

	b.ResetTimer()
	type window struct {
		checks   float64
		req      int
		cpu      time.Duration
		from, to time.Time
	}
	measure := func() window {
		w := window{from: time.Now()}
		c0, cpu0 := checks(b, metricsAddr), procCPU(b, ctl.Process.Pid)
		time.Sleep(time.Minute)
		w.to = time.Now()
		w.checks, w.cpu = checks(b, metricsAddr)-c0, procCPU(b, ctl.Process.Pid)-cpu0
		w.req, _, _ = auditCount(b, auditLog, w.from, w.to)
		return w
	}
	// The first round: until every node carries its condition (each one
	// written once).
	first := window{from: time.Now()}
	c0, cpu0 := checks(b, metricsAddr), procCPU(b, ctl.Process.Pid)
	for conditionsTrue(b, admin) < nodes {
		if time.Since(first.from) > 10*time.Minute {
			b.Fatalf("%d of %d nodes have FenceDevicesReady True after 10 minutes", conditionsTrue(b, admin), nodes)
		}
		time.Sleep(2 * time.Second)
	}
	first.to = time.Now()
	first.checks, first.cpu = checks(b, metricsAddr)-c0, procCPU(b, ctl.Process.Pid)-cpu0
	first.req, _, _ = auditCount(b, auditLog, first.from, first.to)
	steady := measure()
	b.StopTimer()
	rss := procRSS(b, ctl.Process.Pid)
	_, _, byKind := auditCount(b, auditLog, steady.from, steady.to)
	b.Logf("steady minute: %v requests by kind", byKind)

	up := conditionsTrue(b, admin)
	if up != nodes {
		b.Fatalf("%d of %d nodes have FenceDevicesReady True", up, nodes)
	}
	secs, firstSecs := time.Minute.Seconds(), first.to.Sub(first.from).Seconds()
	b.ReportMetric(firstSecs, "first-round-s")
	b.ReportMetric(first.checks/firstSecs, "first-checks/s")
	b.ReportMetric(float64(first.req)/firstSecs, "first-req/s")
	b.ReportMetric(float64(first.cpu.Milliseconds())/firstSecs, "first-cpu-ms/s")
	b.ReportMetric(steady.checks/secs, "checks/s")
	b.ReportMetric(float64(steady.req)/secs, "steady-req/s")
	b.ReportMetric(float64(steady.cpu.Milliseconds())/secs, "steady-cpu-ms/s")
	b.ReportMetric(float64(rss)/(1<<20), "rss-MiB")
}

// parallel runs f(0..n-1) on workers goroutines and fails b on the first
// error.
func parallel(b *testing.B, n, workers int, f func(i int) error) {
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
}

// checks reads fencekit_device_check_duration_seconds_count (every driver)
// from the program's /metrics; -1 when it is not served yet.
func checks(b *testing.B, addr string) float64 {
	ctx, cancel := context.WithTimeout(b.Context(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	total, found := 0.0, false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "fencekit_device_check_duration_seconds_count"); ok {
			f := strings.Fields(rest)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err == nil {
				total, found = total+v, true
			}
		}
	}
	if !found {
		return -1
	}
	return total
}

// conditionsTrue counts the nodes whose FenceDevicesReady is True.
func conditionsTrue(b *testing.B, c kubernetes.Interface) int {
	l, err := c.CoreV1().Nodes().List(b.Context(), metav1.ListOptions{})
	must(b, err)
	n := 0
	for i := range l.Items {
		for _, cond := range l.Items[i].Status.Conditions {
			if cond.Type == fencekube.DeviceConditionType && cond.Status == corev1.ConditionTrue {
				n++
			}
		}
	}
	return n
}

// freeAddr returns a loopback address with a port free now.
func freeAddr(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(b, err)
	defer l.Close()
	return l.Addr().String()
}
