#!/usr/bin/env bash
# Runs the suite as `make test` does (the race detector, every package)
# through go test -json, prints what go test prints for each package, then
# each package's wall time, the twenty slowest tests and the number of
# tests run (internal/testtimes), and keeps the events in
# ${TEST_JSON:-$TMPDIR/fencekit-test.json} for a second look. Its exit status is the suite's.
#
#   scripts/test-times.sh [go test flags and packages]
#
# Without arguments: -race -count=1 -timeout 30m ./...
set -euo pipefail
cd "$(dirname "$0")/.."
out=${TEST_JSON:-${TMPDIR:-/tmp}/fencekit-test.json}
args=("$@")
if [ ${#args[@]} -eq 0 ]; then
	args=(-race -count=1 -timeout 30m ./...)
fi
go build -o /tmp/testtimes.$$ ./internal/testtimes
trap 'rm -f /tmp/testtimes.$$' EXIT
start=$(date +%s)
set +e
go test -json "${args[@]}" 2>&1 | tee "$out" | /tmp/testtimes.$$
st=("${PIPESTATUS[@]}")
status=${st[0]}
summary=${st[2]}
set -e
end=$(date +%s)
echo "wall time: $((end - start)) s (go test ${args[*]})"
if [ "$status" -ne 0 ] || [ "$summary" -ne 0 ]; then
	exit 1
fi
