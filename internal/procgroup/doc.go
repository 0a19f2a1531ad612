// Package procgroup runs child processes as process groups: a command
// whose cancellation kills the whole group it started (KillGroup), and, on
// Linux, children that the kernel kills when the thread that started them
// dies (StartAndWait with SysProcAttr), so that a crashed program leaves
// nothing behind.
package procgroup
