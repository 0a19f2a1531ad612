# The one test command: installs what the integration tests need, then vets,
# checks formatting and runs every test with the race detector.
GO ?= go

.PHONY: test deps vet fmt-check unit bench quickstart

test: deps vet fmt-check
	$(GO) test -race -count=1 ./...

deps:
	./scripts/install-test-deps.sh

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "not gofmt-formatted:"; echo "$$out"; exit 1; fi

# Tests without the race detector and without installing anything.
unit:
	$(GO) test -count=1 ./...

# Benchmarks, as recorded in BENCHMARKS.md.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./fence/ ./examples/fencectl/

quickstart:
	$(GO) run ./examples/quickstart
