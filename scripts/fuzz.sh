#!/usr/bin/env bash
# Runs every fuzz target of the module for a few seconds each (FUZZTIME,
# default 3s), one target at a time, as `make test` does. A failure stops
# the run; go test writes the failing input under the package's
# testdata/fuzz, where the next plain `go test` replays it.
#
#   scripts/fuzz.sh [PACKAGE_PATTERN]
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-3s}
pattern=${1:-./...}
n=0
start=$(date +%s)
while IFS= read -r line; do
	file=${line%%:*}
	name=${line#*func }
	name=${name%%(*}
	pkg=./$(dirname "$file")
	go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg" >/tmp/fuzz.$$.log 2>&1 || {
		cat /tmp/fuzz.$$.log
		rm -f /tmp/fuzz.$$.log
		echo "fuzz: $pkg $name failed" >&2
		exit 1
	}
	n=$((n + 1))
done < <(git ls-files "${pattern%/...}" 2>/dev/null | grep '_test\.go$' | xargs grep -H '^func Fuzz[A-Za-z0-9_]*(f \*testing\.F)' | sort)
rm -f /tmp/fuzz.$$.log
echo "fuzz: $n targets, ${fuzztime} each, in $(($(date +%s) - start)) s"
