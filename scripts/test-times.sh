#!/usr/bin/env bash
# Runs the suite as `make test` does (the race detector, every package)
# through go test -json, prints what go test prints for each package, then
# each package's wall time and CPU time (its test binary's and that of the
# peers it started, measured by running each binary under
# "testtimes exec"), the twenty slowest tests and the number of tests run
# (internal/testtimes), and keeps the events in
# ${TEST_JSON:-$TMPDIR/fencekit-test.json} for a second look, and how busy
# the machine's cores were meanwhile (from /proc/stat: the share of the
# cores' time not idle, which says whether running more at once could
# help). Its exit status is the suite's.
#
# The programs that tests run as processes (fencectl, the node agent,
# kubectl-fence, the BMC and switch simulators) are built first, in one
# go build, into a directory the tests find in FENCEKIT_TEST_BIN
# (internal/testbin): linked once, not once per test binary.
#
#   scripts/test-times.sh [go test flags and packages]
#
# Without arguments: -race -count=1 -timeout 30m ./...
set -euo pipefail
cd "$(dirname "$0")/.."
out=${TEST_JSON:-${TMPDIR:-/tmp}/fencekit-test.json}
args=("$@")
if [ ${#args[@]} -eq 0 ]; then
	args=(-race -count=1 -timeout 30m -p 4 -ldflags=-w ./...)
fi
go build -o /tmp/testtimes.$$ ./internal/testtimes
# busy prints the cores' busy and total jiffies so far (all CPUs).
busy() { [ -r /proc/stat ] && awk '/^cpu /{t=0; for(i=2;i<=NF;i++) t+=$i; print t-$5-$6, t}' /proc/stat || echo "0 0"; }
read -r busy0 total0 < <(busy)
start=$(date +%s)
cpulog=$(mktemp)
bindir=$(mktemp -d)
trap 'rm -rf /tmp/testtimes.$$ "$cpulog" "$bindir"' EXIT
go build -ldflags=-w -o "$bindir/" ./cmd/fencectl ./cmd/fencekit-agent ./cmd/kubectl-fence ./internal/ipmisim/goipmiserver
CGO_ENABLED=0 go build -ldflags=-w -o "$bindir/" ./internal/brocadesim/fosshell
export FENCEKIT_TEST_BIN=$bindir
set +e
go test -json -exec "/tmp/testtimes.$$ exec $cpulog" "${args[@]}" 2>&1 | tee "$out" | /tmp/testtimes.$$ -cpu "$cpulog"
st=("${PIPESTATUS[@]}")
status=${st[0]}
summary=${st[2]}
set -e
end=$(date +%s)
read -r busy1 total1 < <(busy)
echo "wall time: $((end - start)) s (go test ${args[*]})"
if [ "$total1" -gt "$total0" ]; then
	echo "cores busy: $(((busy1 - busy0) * 100 / (total1 - total0))) % of $(nproc) cores' time"
fi
if [ "$status" -ne 0 ] || [ "$summary" -ne 0 ]; then
	exit 1
fi
