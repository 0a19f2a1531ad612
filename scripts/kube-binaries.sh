#!/usr/bin/env bash
# Builds the binaries that internal/kubetest runs (kube-apiserver,
# kube-controller-manager and kube-scheduler, etcd, kwok for simulated
# kubelets, and Cluster API's core manager with its CRDs and RBAC under
# capi/) and the kubectl that tests compare against, from the Go module
# proxy, into a cache directory keyed by the Kubernetes version, and prints
# that directory on stdout. A binary that is already there at the right
# version is not built again, so the script is cheap to run every time.
#
#   scripts/kube-binaries.sh [DIR]
#
# DIR defaults to $FENCEKIT_KUBE_ASSETS, then to
# ${XDG_CACHE_HOME:-$HOME/.cache}/fencekit/kube/v1.37.1. The versions are
# pinned by the modules under internal/kubetest/tools (the Kubernetes
# commands, all from k8s.io/kubernetes), internal/kubetest/tools/etcd,
# internal/kubetest/tools/kwok and internal/kubetest/tools/capi; change them
# there and here together.
#
# The four Kubernetes commands are built by one go build, so the packages
# they share are compiled once. kwok's and Cluster API's modules require
# the same versions of the libraries they share (the k8s.io libraries
# v0.36.3, grpc, x/net, ...: kwok's raised to Cluster API's), so the second
# build takes the first's packages from Go's build cache. Measured on 2
# cores on a new machine (2026-12-02): the four commands 1,278 s, etcd 52 s,
# kwok 152 s and Cluster API's core manager 237 s, 1,719 s in all, before
# the shared versions; kwok and the manager from an empty build cache took
# 246 and 266 s with their own versions, 219 and 120 s with the shared ones.
# With the binaries in place the script takes well under a second. Progress
# goes to stderr.
#
# Environment: KUBE_BINARIES_TIMEOUT bounds each build step (default 2400 s).
set -euo pipefail

KUBE_VERSION=v1.37.1
ETCD_VERSION=v3.7.3
KWOK_VERSION=v0.8.0
CAPI_VERSION=v1.14.2
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
have_controller_manager() { have kube-controller-manager "Kubernetes $KUBE_VERSION" --version; }
have_scheduler() { have kube-scheduler "Kubernetes $KUBE_VERSION" --version; }
have_kubectl() { have kubectl "Client Version: $KUBE_VERSION" version --client; }
have_etcd() { have etcd "etcd Version: ${ETCD_VERSION#v}" --version; }
# kwok prints "kwok version v0.8.0 go1.26.0 (linux/amd64)".
have_kwok() {
	local out
	[ -x "$dir/kwok" ] || return 1
	out=$(timeout 20 "$dir/kwok" --version 2>/dev/null) || return 1
	case "$out" in "kwok version $KWOK_VERSION "*) return 0 ;; esac
	return 1
}

# Cluster API's core manager has no --version: the build writes the
# version it built beside it.
have_capi() {
	[ -x "$dir/capi/manager" ] && [ -d "$dir/capi/crds" ] && [ -f "$dir/capi/rbac/role.yaml" ] &&
		[ "$(cat "$dir/capi/VERSION" 2>/dev/null)" = "$CAPI_VERSION" ]
}

# check lists in need_kube the Kubernetes commands missing or at another
# version, and sets need_etcd and need_kwok to 1 when those are.
check() {
	need_kube=() need_etcd=1 need_kwok=1 need_capi=1
	have_apiserver || need_kube+=(kube-apiserver)
	have_controller_manager || need_kube+=(kube-controller-manager)
	have_scheduler || need_kube+=(kube-scheduler)
	have_kubectl || need_kube+=(kubectl)
	have_etcd && need_etcd=0
	have_kwok && need_kwok=0
	have_capi && need_capi=0
	return 0
}

check
if [ ${#need_kube[@]} -eq 0 ] && [ $need_etcd -eq 0 ] && [ $need_kwok -eq 0 ] && [ $need_capi -eq 0 ]; then
	log "Kubernetes $KUBE_VERSION, etcd $ETCD_VERSION, kwok $KWOK_VERSION and Cluster API $CAPI_VERSION already in $dir"
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

# The Kubernetes commands are built by one go build, so the packages they
# share (most of them) are compiled once, with the version stamped in as the
# Kubernetes release build does.
if [ ${#need_kube[@]} -gt 0 ]; then
	pinned "$tools" k8s.io/kubernetes "$KUBE_VERSION"
	minor=${KUBE_VERSION#v1.}
	minor=${minor%%.*}
	pkgs=()
	for c in "${need_kube[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
	log "building ${need_kube[*]} $KUBE_VERSION in one go build (about 10 minutes from a cold Go build cache on 2 cores, seconds from a warm one)"
	start=$(date +%s)
	(cd "$tools" && timeout "$STEP_TIMEOUT" go build -trimpath \
		-ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" \
		-o "$work/" "${pkgs[@]}") ||
		die "building ${need_kube[*]} failed (exit $?)"
	for c in "${need_kube[@]}"; do mv -f "$work/$c" "$dir/$c"; done
	log "${need_kube[*]} built in $(($(date +%s) - start)) s"
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

# kwok requires the k8s.io libraries at another minor version, so it builds
# in its own module and shares nothing with the build above.
if [ $need_kwok -eq 1 ]; then
	pinned "$tools/kwok" sigs.k8s.io/kwok "$KWOK_VERSION"
	log "building kwok $KWOK_VERSION (about 5 minutes cold)"
	start=$(date +%s)
	(cd "$tools/kwok" && timeout "$STEP_TIMEOUT" go build -trimpath \
		-ldflags="-s -w" \
		-o "$work/kwok" sigs.k8s.io/kwok/cmd/kwok) ||
		die "building kwok failed (exit $?)"
	mv -f "$work/kwok" "$dir/kwok"
	log "kwok built in $(($(date +%s) - start)) s"
fi

# Cluster API's core manager, with the CRDs and the manager's RBAC of the
# same release (from the module's source), for the MachineHealthCheck
# tests. Its own module: it requires the k8s.io libraries at v0.36.
if [ $need_capi -eq 1 ]; then
	pinned "$tools/capi" sigs.k8s.io/cluster-api "$CAPI_VERSION"
	log "building Cluster API's core manager $CAPI_VERSION (about 2 minutes with kwok's packages cached)"
	start=$(date +%s)
	mkdir -p "$work/capi/crds" "$work/capi/rbac"
	(cd "$tools/capi" && timeout "$STEP_TIMEOUT" go build -trimpath \
		-ldflags="-s -w -X sigs.k8s.io/cluster-api/version.gitVersion=$CAPI_VERSION" \
		-o "$work/capi/manager" sigs.k8s.io/cluster-api/core) ||
		die "building Cluster API's core manager failed (exit $?)"
	src=$(cd "$tools/capi" && go list -m -f '{{.Dir}}' sigs.k8s.io/cluster-api) ||
		die "cannot find the source of sigs.k8s.io/cluster-api $CAPI_VERSION"
	cp "$src"/core/config/crd/bases/*.yaml "$work/capi/crds/"
	cp "$src"/core/config/rbac/role.yaml "$src"/core/config/rbac/aggregated_role.yaml "$work/capi/rbac/"
	chmod -R u+w "$work/capi"
	printf '%s\n' "$CAPI_VERSION" >"$work/capi/VERSION"
	rm -rf "$dir/capi"
	mv "$work/capi" "$dir/capi"
	log "Cluster API's core manager built in $(($(date +%s) - start)) s"
fi

have_apiserver || die "$dir/kube-apiserver does not report $KUBE_VERSION"
have_etcd || die "$dir/etcd does not report $ETCD_VERSION"
have_controller_manager || die "$dir/kube-controller-manager does not report $KUBE_VERSION"
have_scheduler || die "$dir/kube-scheduler does not report $KUBE_VERSION"
have_kubectl || die "$dir/kubectl does not report $KUBE_VERSION"
have_kwok || die "$dir/kwok does not report $KWOK_VERSION"
have_capi || die "$dir/capi is not Cluster API $CAPI_VERSION"
log "ready: $dir"
printf '%s\n' "$dir"
