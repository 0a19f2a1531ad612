# The one test command: installs what the integration tests need, then vets,
# checks formatting and runs every test with the race detector (a package may
# take 30 minutes: cmd/fencekit-controller waits out the controller manager's
# 6-minute force detach in TestControlPlaneForceDetach), printing each
# package's wall time, the twenty slowest tests and the number of tests run
# (scripts/test-times.sh), then the fuzz targets.
#
# TESTP packages run at once (go test -p; go's default is the number of
# cores): most packages spend their time waiting on a peer (a fence agent's
# power wait, a node's lease running out), so on 2 cores 4 at a time keeps
# the cores busy (docs/testing.md has the figures). The test binaries are
# linked without DWARF (-ldflags=-w): a fifth less linking, the same stack
# traces and race reports.
GO ?= go
TESTP ?= 4

.PHONY: test deps vet fmt-check generate generate-check unit bench quickstart fuzz

test: deps vet fmt-check generate-check
	./scripts/test-times.sh -race -count=1 -timeout 30m -p $(TESTP) -ldflags=-w ./...
	./scripts/fuzz.sh

# Every fuzz target for a few seconds (FUZZTIME=3s each), as many at once as
# there are cores; part of test.
fuzz:
	./scripts/fuzz.sh

# kube-apiserver and etcd for internal/kubetest, built once per version from
# the Go module proxy (about 5 minutes cold, a fraction of a second cached).
export FENCEKIT_KUBE_ASSETS ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/fencekit/kube/v1.37.1

deps:
	./scripts/install-test-deps.sh
	./scripts/kube-binaries.sh >/dev/null

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "not gofmt-formatted:"; echo "$$out"; exit 1; fi

# The API's DeepCopy functions and CRDs from the Go types of api/v1alpha1,
# and deploy/rbac.yaml's roles from the +kubebuilder:rbac markers of kube/...
# (controller-gen v0.23.0, through the Go module proxy).
generate:
	./scripts/generate.sh

# Fails when the committed DeepCopy functions, CRDs or roles are not what
# the types and markers generate; part of test.
generate-check:
	./scripts/generate.sh --check

# Tests without the race detector and without installing anything.
unit:
	$(GO) test -count=1 ./...

# Benchmarks, as recorded in BENCHMARKS.md (benchstat: go install golang.org/x/perf/cmd/benchstat@latest).
bench: deps
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./fence/ | tee bench-fence.txt
	$(GO) test -run '^$$' -bench 'CLI|RunInProcess' -benchmem -benchtime 20x -count 6 ./cmd/fencectl/ | tee bench-cli.txt
	$(GO) test -run '^$$' -bench . -benchmem -count 6 -benchtime 20x ./drivers/ipmi/ | tee bench-ipmi.txt
	$(GO) test -run '^$$' -bench . -benchmem -count 6 -benchtime 10x ./drivers/redfish/ | tee bench-redfish.txt
	$(GO) test -run '^$$' -bench . -benchmem -count 6 -benchtime 10x ./drivers/apc/ ./drivers/eaton/ | tee bench-pdu.txt
	$(GO) test -run '^$$' -bench . -benchmem -count 6 -benchtime 10x ./drivers/brocade/ | tee bench-brocade.txt
	$(GO) test -run '^$$' -bench . -benchmem -count 6 -benchtime 20x ./drivers/agent/ | tee bench-agent.txt
	$(GO) test -run '^$$' -bench PoisonPill -benchmem -count 6 -benchtime 2x ./drivers/sbd/ | tee bench-sbd.txt
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./reboot/ | tee bench-reboot.txt
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./fence/controller/ | tee bench-controller.txt
	$(GO) test -run '^$$' -bench NotReadyToPodsReleased -benchmem -count 6 ./kube/fencekube/ | tee bench-fencekube.txt
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./policy/ | tee bench-policy.txt
	$(GO) test -run '^$$' -bench Detect -benchmem -count 6 ./fence/kdump/ | tee bench-kdump.txt
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./fencegroup/ | tee bench-fencegroup.txt
	$(GO) test -run '^$$' -bench Drain -benchmem -count 6 ./kube/teardownkube/ | tee bench-drain.txt
	$(GO) test -run '^$$' -bench PacemakerReboot -benchmem -benchtime 5x -count 3 ./cmd/fencectl/ | tee bench-pcmk.txt
	$(GO) test -run '^$$' -bench ControlPlaneScale -benchmem -benchtime 1x -count 1 -timeout 60m ./cmd/fencekit-controller/ | tee bench-scale.txt
	-benchstat bench-fence.txt
	-benchstat -col /tool bench-cli.txt
	-benchstat -col /tool bench-ipmi.txt
	-benchstat -col /tool bench-redfish.txt
	-benchstat -col /tool bench-pdu.txt
	-benchstat -col /tool bench-brocade.txt
	-benchstat -col /tool bench-agent.txt
	-benchstat -col /tool bench-sbd.txt
	-benchstat bench-reboot.txt
	-benchstat bench-controller.txt
	-benchstat bench-fencekube.txt
	-benchstat bench-policy.txt
	-benchstat -col /tool bench-kdump.txt
	-benchstat bench-fencegroup.txt
	-benchstat -col /tool bench-drain.txt
	-benchstat -col /tool bench-pcmk.txt
	-benchstat bench-scale.txt

quickstart:
	$(GO) run ./examples/quickstart
