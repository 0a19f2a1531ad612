//go:build !linux

package kubetest

import (
	"context"
	"errors"
	"io"
	"net"
)

func runShim() {}

// startInNetns needs Linux's network namespaces.
func startInNetns(name, path, logPath, dir string, in []string, out map[string]string, args ...string) (*process, []io.Closer, error) {
	return nil, nil, errors.New("kubetest: network namespaces need Linux")
}

func unixDialer(sock string) func(ctx context.Context, _, _ string) (net.Conn, error) {
	return func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}
}
