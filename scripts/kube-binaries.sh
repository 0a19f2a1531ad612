#!/usr/bin/env bash
# Builds the kube-apiserver and etcd binaries that internal/kubetest runs, and
# the kubectl that tests compare against, from the Go module proxy, into a
# cache directory keyed by the Kubernetes version, and prints that directory on
# stdout. A binary that is already there at the right version is not built
# again, so the script is cheap to run every time.
#
#   scripts/kube-binaries.sh [DIR]
#
# DIR defaults to $FENCEKIT_KUBE_ASSETS, then to
# ${XDG_CACHE_HOME:-$HOME/.cache}/fencekit/kube/v1.37.1. The versions are
# pinned by the modules under internal/kubetest/tools (API server and kubectl,
# both from k8s.io/kubernetes) and internal/kubetest/tools/etcd (etcd); change
# them there and here together.
#
# Cost from cold (empty module and build caches, 2 cores): about 5 to 8
# minutes, 2.4 GB of memory and 3.6 GB of caches (2.9 GB Go build cache, 0.7 GB
# module cache); with a warm Go build cache, seconds; with the binaries in
# place, well under a second. kubectl comes on top: built right after the API
# server (whose packages it mostly shares, so they are in the Go build cache),
# it takes 30 s more, 0.9 GB of memory, 0.2 GB more Go build cache and a 62 MB
# binary (measured on 2 cores); 3 s when its own packages are cached too.
# Progress goes to stderr.
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

# have NAME WANT ARGS...: the binary DIR/NAME exists and one line of what
# it prints when run with ARGS is exactly WANT.
have() {
	local name=$1 want=$2 out line
	shift 2
	[ -x "$dir/$name" ] || return 1
	out=$(timeout 20 "$dir/$name" "$@" 2>/dev/null) || return 1
	while IFS= read -r line; do
		[ "$line" = "$want" ] && return 0
	done <<<"$out"
	return 1
}

have_apiserver() { have kube-apiserver "Kubernetes $KUBE_VERSION" --version; }
have_etcd() { have etcd "etcd Version: ${ETCD_VERSION#v}" --version; }
have_kubectl() { have kubectl "Client Version: $KUBE_VERSION" version --client; }

# check sets need_X to 0 for each binary in place at the right version.
check() {
	need_apiserver=1 need_etcd=1 need_kubectl=1
	have_apiserver && need_apiserver=0
	have_etcd && need_etcd=0
	have_kubectl && need_kubectl=0
	return 0
}

check
if [ $need_apiserver -eq 0 ] && [ $need_etcd -eq 0 ] && [ $need_kubectl -eq 0 ]; then
	log "kube-apiserver and kubectl $KUBE_VERSION, etcd $ETCD_VERSION already in $dir"
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
	check
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

# kube NAME HINT: builds k8s.io/kubernetes/cmd/NAME into DIR/NAME, with the
# version stamped in as the Kubernetes release build does.
kube() {
	local start minor
	pinned "$tools" k8s.io/kubernetes "$KUBE_VERSION"
	minor=${KUBE_VERSION#v1.}
	minor=${minor%%.*}
	log "building $1 $KUBE_VERSION ($2)"
	start=$(date +%s)
	(cd "$tools" && timeout "$STEP_TIMEOUT" go build -trimpath \
		-ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" \
		-o "$work/$1" "k8s.io/kubernetes/cmd/$1") ||
		die "building $1 failed (exit $?)"
	mv -f "$work/$1" "$dir/$1"
	log "$1 built in $(($(date +%s) - start)) s"
}

if [ $need_apiserver -eq 1 ]; then
	kube kube-apiserver "5 to 8 minutes from a cold Go build cache, seconds from a warm one"
fi

if [ $need_kubectl -eq 1 ]; then
	kube kubectl "about 30 s once the API server's packages are in the Go build cache, seconds when its own are too"
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

have_apiserver || die "$dir/kube-apiserver does not report $KUBE_VERSION"
have_etcd || die "$dir/etcd does not report $ETCD_VERSION"
have_kubectl || die "$dir/kubectl does not report $KUBE_VERSION"
log "ready: $dir"
printf '%s\n' "$dir"
