package fencekube

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fencekit/fencekit/fence/controller"
	"github.com/fencekit/fencekit/fence/healthcheck"
)

// DeviceConditionType is the Node condition the device health checks keep:
// True while every fence method of the node answers, False (its message
// saying which does not, and why) otherwise. kubectl describe node shows
// it; kubectl get nodes -o custom-columns=NAME:.metadata.name,DEVICES:'.status.conditions[?(@.type=="FenceDevicesReady")].status'
// lists it.
const DeviceConditionType corev1.NodeConditionType = "FenceDevicesReady"

// The reasons of the condition and the events of the device checks.
const (
	ReasonDevicesAnswer   = "AllDevicesAnswer"        // every method answered its last check
	ReasonDeviceDown      = "FenceDeviceDown"         // a method did not answer
	ReasonDeviceWrongHost = "FenceDeviceWrongMachine" // a method's device is another machine's
	ReasonDeviceUp        = "FenceDeviceUp"           // event: a method answers again
)

// maxConditionMessage bounds the condition's message.
const maxConditionMessage = 1024

// RBAC: the device health checks' condition FenceDevicesReady on each
// Node (a strategic merge patch of its status, written when it changes).
// +kubebuilder:rbac:groups="",resources=nodes/status,verbs=patch

// DeviceConditions is a healthcheck.Reporter that keeps
// DeviceConditionType on each Node and records an event on the node when a
// method stops (or starts again) answering. The condition is written (a
// patch of the node's status) only when it changes: not at every check.
type DeviceConditions struct {
	// Client patches the Nodes' status.
	Client client.Client
	// Events records the events; nil records none.
	Events controller.Events
	// Current, when set, gives the node's condition as the cluster holds
	// it (Health.Condition, from its informer): a condition already there
	// is not written again after a restart.
	Current func(node string) (corev1.NodeCondition, bool)
	Logger  *slog.Logger

	mu      sync.Mutex
	results map[string]map[string]healthcheck.Result // node -> method -> last
	written map[string]corev1.NodeCondition          // node -> last written
}

// Checked records r (healthcheck.Reporter).
func (d *DeviceConditions) Checked(r healthcheck.Result, prev *healthcheck.Result) {
	d.mu.Lock()
	if d.results == nil {
		d.results, d.written = map[string]map[string]healthcheck.Result{}, map[string]corev1.NodeCondition{}
	}
	if d.results[r.Node] == nil {
		d.results[r.Node] = map[string]healthcheck.Result{}
	}
	d.results[r.Node][r.Method] = r
	cond := deviceCondition(d.results[r.Node])
	d.mu.Unlock()

	if d.Events != nil {
		switch {
		case !r.Up && (prev == nil || prev.Up || prev.WrongMachine != r.WrongMachine):
			reason := ReasonDeviceDown
			if r.WrongMachine {
				reason = ReasonDeviceWrongHost
			}
			d.Events.Event(r.Node, true, reason, fmt.Sprintf("fence method %s does not answer its health check: %s", r.Method, r.Reason))
		case r.Up && prev != nil && !prev.Up:
			d.Events.Event(r.Node, false, ReasonDeviceUp, fmt.Sprintf("fence method %s answers its health check again", r.Method))
		}
	}
	d.write(r.Node, cond)
}

// Forget drops a method no longer configured (healthcheck.Reporter); the
// node's condition is written again without it.
func (d *DeviceConditions) Forget(t healthcheck.Target) {
	d.mu.Lock()
	ms := d.results[t.Node]
	delete(ms, t.Method)
	if len(ms) == 0 {
		delete(d.results, t.Node)
		delete(d.written, t.Node)
		d.mu.Unlock()
		return // the condition stays as it was: nothing checks the node now
	}
	cond := deviceCondition(ms)
	d.mu.Unlock()
	d.write(t.Node, cond)
}

// deviceCondition sums up a node's results.
func deviceCondition(ms map[string]healthcheck.Result) corev1.NodeCondition {
	names := slices.Sorted(func(yield func(string) bool) {
		for m := range ms {
			if !yield(m) {
				return
			}
		}
	})
	var down, up []string
	reason := ReasonDevicesAnswer
	for _, m := range names {
		r := ms[m]
		if r.Up {
			up = append(up, m)
			continue
		}
		down = append(down, m+": "+r.Reason)
		if r.WrongMachine {
			reason = ReasonDeviceWrongHost
		} else if reason == ReasonDevicesAnswer {
			reason = ReasonDeviceDown
		}
	}
	c := corev1.NodeCondition{Type: DeviceConditionType, Status: corev1.ConditionTrue, Reason: reason}
	if len(down) > 0 {
		c.Status = corev1.ConditionFalse
		c.Message = "not answering: " + strings.Join(down, "; ")
		if len(up) > 0 {
			c.Message += "; answering: " + strings.Join(up, ", ")
		}
	} else {
		c.Message = "every fence method answers its health check: " + strings.Join(up, ", ")
	}
	if len(c.Message) > maxConditionMessage {
		c.Message = c.Message[:maxConditionMessage-3] + "..."
	}
	return c
}

// write patches the node's condition when it differs from what the node
// holds.
func (d *DeviceConditions) write(node string, c corev1.NodeCondition) {
	d.mu.Lock()
	last, ok := d.written[node]
	d.mu.Unlock()
	if !ok && d.Current != nil {
		last, ok = d.Current(node)
	}
	if ok && last.Status == c.Status && last.Reason == c.Reason && last.Message == c.Message {
		d.mu.Lock()
		if d.results[node] != nil {
			d.written[node] = last
		}
		d.mu.Unlock()
		return
	}
	now := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	c.LastHeartbeatTime = now
	c.LastTransitionTime = now
	if ok && last.Status == c.Status && !last.LastTransitionTime.IsZero() {
		c.LastTransitionTime = last.LastTransitionTime
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{c}}})
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
	if err := d.Client.Status().Patch(ctx, n, client.RawPatch(types.StrategicMergePatchType, patch)); err != nil {
		if apierrors.IsNotFound(err) {
			return // configured, but no such node (yet): nothing to write
		}
		if d.Logger != nil {
			d.Logger.Warn("writing the node's fence device condition failed; written at its next change or check", "node", node, "error", err.Error())
		}
		return
	}
	d.mu.Lock()
	if d.results[node] != nil {
		d.written[node] = c
	}
	d.mu.Unlock()
}

var _ healthcheck.Reporter = (*DeviceConditions)(nil)
