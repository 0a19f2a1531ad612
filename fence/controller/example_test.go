package controller_test

import (
	"context"
	"fmt"
	"time"

	"github.com/fencekit/fencekit/drivers/fake"
	"github.com/fencekit/fencekit/fence/config"
	"github.com/fencekit/fencekit/fence/controller"
)

// printEvents prints the events a Controller records.
type printEvents struct{}

func (printEvents) Event(node string, warning bool, reason, message string) {
	fmt.Printf("%s %s: %s\n", node, reason, message)
}

// A node stops answering; a minute later the controller isolates it at its
// FC switch port (a fake device here), which releases the pods that used
// its storage. When the node is ready again, recovery enables the port.
func Example() {
	ctx := context.Background()
	cfg, err := config.Parse([]config.ConfigMap{
		{Name: "fence-method-template-fc", Data: map[string]string{
			"template.properties": "name=fc\ndriver=fake\naddress=fake://example-fc\nstonith_status_sleep=0\n"}},
		{Name: "fence-method-fc-off-worker-2", Data: map[string]string{"method.properties": "template=fc\nplug=2\naction=off\n"}},
		{Name: "fence-method-fc-on-worker-2", Data: map[string]string{"method.properties": "template=fc\nplug=2\naction=on\n"}},
		{Name: "fence-config-worker-2", Data: map[string]string{
			"config.properties": "node_name=worker-2\nisolation=fc-off\nrecovery=fc-on\n"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fc := fake.NewNamed("example-fc", fake.Options{})
	defer fake.Forget("example-fc")

	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	h := &health{}
	h.set("worker-1", true, now.Add(-time.Hour))
	h.set("worker-2", false, now) // stops answering now
	c := &controller.Controller{
		Health: h, Store: controller.NewMemoryStore(), Config: controller.StaticConfig{C: cfg},
		Events: printEvents{}, Now: func() time.Time { return now },
		Options: controller.Options{UnhealthyAfter: time.Minute},
	}
	passAndWait := func() {
		if err := c.Pass(ctx); err != nil {
			fmt.Println(err)
		}
		c.Wait()
	}

	passAndWait() // not ready for less than a minute: nothing
	now = now.Add(time.Minute)
	passAndWait()
	fmt.Println("FC port 2:", fc.Truth("2"))

	h.set("worker-2", true, now)
	passAndWait()
	fmt.Println("FC port 2:", fc.Truth("2"))
	// Output:
	// worker-2 FenceIsolation: isolation: node not ready for the configured duration: fencing starts
	// worker-2 FenceRunning: isolation: running level 1: [fc-off]
	// worker-2 FenceIsolated: node isolated: every device of level 1 confirmed it
	// FC port 2: off
	// worker-2 FenceRecovery: recovery: node ready again after isolation
	// worker-2 FenceRunning: recovery: running level 1: [fc-on]
	// worker-2 FenceRecovered: node recovered (level 1)
	// FC port 2: on
}
