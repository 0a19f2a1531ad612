#!/usr/bin/env bash
# Builds the kube-apiserver and etcd binaries that internal/kubetest runs, from
# the Go module proxy, into a cache directory keyed by the Kubernetes version,
# and prints that directory on stdout. A binary that is already there at the
# right version is not built again, so the script is cheap to run every time.
#
#   scripts/kube-binaries.sh [DIR]
#
# DIR defaults to $FENCEKIT_KUBE_ASSETS, then to
# ${XDG_CACHE_HOME:-$HOME/.cache}/fencekit/kube/v1.37.1. The versions are
# pinned by the modules under internal/kubetest/tools (API server) and
# internal/kubetest/tools/etcd (etcd); change them there and here together.
#
# Cost from cold (empty module and build caches, 2 cores): about 5 to 8
# minutes, 2.4 GB of memory and 3.6 GB of caches (2.9 GB Go build cache, 0.7 GB
# module cache); with a warm Go build cache, seconds; with the binaries in
# place, well under a second. Progress goes to stderr.
#
# Environment: KUBE_BINARIES_TIMEOUT bounds each build step (default 2400 s).
set -euo pipefail

KUBE_VERSION=v1.37.1
ETCD_VERSION=v3.7.3
STEP_TIMEOUT=${KUBE_BINARIES_TIMEOUT:-2400}

root=$(cd "$(dirname "$0")/.." && pwd)
tools="$root/internal/kubetest/tools"
dir=${1:-${FENCEKIT_KUBE_ASSETS:-${XDG_CACHE_HOME:-$HOME/.cache}/fencekit/kube/$KUBE_VERSION}}

log() { printf '%s kube-binaries: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

command -v go >/dev/null 2>&1 || die "go is not on PATH"
command -v timeout >/dev/null 2>&1 || die "timeout (coreutils) is not on PATH"

# have NAME WANT: the binary DIR/NAME exists and its --version output holds WANT.
have() {
	[ -x "$dir/$1" ] || return 1
	local out
	out=$(timeout 20 "$dir/$1" --version 2>/dev/null) || return 1
	case "$out" in *"$2"*) return 0 ;; *) return 1 ;; esac
}

need_apiserver=1
need_etcd=1
have kube-apiserver "Kubernetes $KUBE_VERSION" && need_apiserver=0
have etcd "etcd Version: ${ETCD_VERSION#v}" && need_etcd=0
if [ $need_apiserver -eq 0 ] && [ $need_etcd -eq 0 ]; then
	log "kube-apiserver $KUBE_VERSION and etcd $ETCD_VERSION already in $dir"
	printf '%s\n' "$dir"
	exit 0
fi

mkdir -p "$dir"
# One build at a time per directory; a second caller waits, then finds the
# binaries built.
if command -v flock >/dev/null 2>&1; then
	exec 9>"$dir/.lock"
	if ! flock -n 9; then
		log "another build is running in $dir; waiting for it"
		flock -w "$STEP_TIMEOUT" 9 || die "another build held $dir/.lock for ${STEP_TIMEOUT}s"
	fi
	have kube-apiserver "Kubernetes $KUBE_VERSION" && need_apiserver=0
	have etcd "etcd Version: ${ETCD_VERSION#v}" && need_etcd=0
fi

# Builds go to a temporary directory beside the cache and are renamed into
# place, so an interrupted build never leaves a half-written binary.
work=$(mktemp -d "$dir/.build.XXXXXX")
trap 'rm -rf "$work"' EXIT

export GOFLAGS="-mod=readonly -buildvcs=false" GOWORK=off CGO_ENABLED=0

# pinned MODDIR MODULE WANT: the module MODDIR requires MODULE at version WANT.
pinned() {
	local got
	got=$(cd "$1" && go list -m -f '{{.Version}}' "$2") || die "cannot read $2 from $1/go.mod"
	[ "$got" = "$3" ] || die "$1/go.mod pins $2 $got, this script expects $3"
}

if [ $need_apiserver -eq 1 ]; then
	pinned "$tools" k8s.io/kubernetes "$KUBE_VERSION"
	log "building kube-apiserver $KUBE_VERSION (5 to 8 minutes from a cold Go build cache, seconds from a warm one)"
	start=$(date +%s)
	(cd "$tools" && timeout "$STEP_TIMEOUT" go build -trimpath \
		-ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37" \
		-o "$work/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver) ||
		die "building kube-apiserver failed (exit $?)"
	mv -f "$work/kube-apiserver" "$dir/kube-apiserver"
	log "kube-apiserver built in $(($(date +%s) - start)) s"
fi

if [ $need_etcd -eq 1 ]; then
	pinned "$tools/etcd" go.etcd.io/etcd/server/v3 "$ETCD_VERSION"
	log "building etcd $ETCD_VERSION"
	start=$(date +%s)
	(cd "$tools/etcd" && timeout "$STEP_TIMEOUT" go build -trimpath -ldflags="-s -w" \
		-o "$work/etcd" go.etcd.io/etcd/server/v3) ||
		die "building etcd failed (exit $?)"
	mv -f "$work/etcd" "$dir/etcd"
	log "etcd built in $(($(date +%s) - start)) s"
fi

have kube-apiserver "Kubernetes $KUBE_VERSION" || die "$dir/kube-apiserver does not report $KUBE_VERSION"
have etcd "etcd Version: ${ETCD_VERSION#v}" || die "$dir/etcd does not report $ETCD_VERSION"
log "ready: $dir"
printf '%s\n' "$dir"
