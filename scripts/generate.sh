#!/usr/bin/env bash
# Generates the Kubernetes API's code and manifests from the Go types of
# api/v1alpha1 with controller-gen: the DeepCopy functions
# (api/v1alpha1/zz_generated.deepcopy.go) and the CustomResource
# definitions (config/crd, copied to deploy/crd, which kustomize reads).
#
#   scripts/generate.sh           write them
#   scripts/generate.sh --check   fail when the committed files differ from
#                                 what the types generate (make test runs it)
set -euo pipefail
cd "$(dirname "$0")/.."
CONTROLLER_GEN="${CONTROLLER_GEN:-go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0}"

check=false
[ "${1:-}" = "--check" ] && check=true

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mkdir -p "$out/crd" "$out/api"
cp -r api/v1alpha1 "$out/api/"
# The DeepCopy functions are written beside the types, the CRDs to $out/crd.
$CONTROLLER_GEN object:headerFile=scripts/boilerplate.go.txt paths=./api/... output:object:dir="$out/api/v1alpha1" 2>&1
$CONTROLLER_GEN crd paths=./api/... output:crd:dir="$out/crd" 2>&1

status=0
compare() { # generated, committed
	if ! cmp -s "$1" "$2"; then
		if $check; then
			echo "generate: $2 differs from what the types generate; run make generate" >&2
			diff -u "$2" "$1" | head -40 >&2 || true
			status=1
		else
			cp "$1" "$2"
			echo "generate: wrote $2"
		fi
	fi
}
compare "$out/api/v1alpha1/zz_generated.deepcopy.go" api/v1alpha1/zz_generated.deepcopy.go
for f in "$out"/crd/*.yaml; do
	compare "$f" "config/crd/$(basename "$f")"
	compare "$f" "deploy/crd/$(basename "$f")"
done
exit $status
