# tug's build, lint and test entry points. CI runs `make test` (.ci/run).
#
#   make build        bin/tug for this machine (static, CGO_ENABLED=0)
#   make build-arm64  bin/tug-arm64
#   make lint         gofmt, go vet (with and without the e2e tag)
#   make test-unit    unit tests with the race detector: no root, no tags
#   make test         everything CI runs: lint, test-unit, both builds, then the
#                     e2e suite (-tags e2e, as root) against the test environment
#                     of scripts/testenv.sh, which is brought down afterwards
#   make bench        benchmarks against the real containerd (test environment up):
#                     Go benchmarks incl. PLEG death detection and relist cost (-tags e2e),
#                     pod start-up vs ctr run (scripts/benchstart), tug at rest (scripts/benchidle)
#   make demo         run the example pods (scripts/demo.sh), make demo-stop
#   make testenv-up / testenv-down   start / stop the test environment by hand
#                     (then: eval "$$(scripts/testenv.sh env)"; go test -tags e2e ./...)

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build
.DELETE_ON_ERROR:

export PATH := $(PATH):/usr/local/go/bin
GO ?= go
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
TESTENV := scripts/testenv.sh
# e2e/ does not exist yet: list it only when it does.
E2E_PKGS := $(if $(wildcard e2e),./e2e/...) ./internal/...
E2E_TIMEOUT ?= 20m

.PHONY: build build-arm64 lint test-unit test e2e bench demo demo-stop testenv-up testenv-down clean

build:
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o bin/tug ./agent

build-arm64:
	GOARCH=arm64 CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o bin/tug-arm64 ./agent

lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt -l: not formatted:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags e2e ./...

test-unit:
	$(GO) test -race ./...

test: lint test-unit build build-arm64 e2e

# e2e: start the test environment, run the e2e suite with its env file and CI
# passed through, print the daemons' logs on failure, and always bring the
# environment down, keeping the suite's exit code. Packages run one at a time
# (-p 1): e2e's TestContainerdRestart kills and restarts the shared containerd.
e2e:
	@rc=0; \
	$(TESTENV) up || rc=$$?; \
	if [ $$rc -eq 0 ]; then \
		( eval "$$($(TESTENV) env)"; \
		  set -x; \
		  CI="$${CI:-}" $(GO) test -tags e2e -race -p 1 -count=1 -timeout $(E2E_TIMEOUT) $(E2E_PKGS) ) || rc=$$?; \
		if [ $$rc -ne 0 ]; then echo "e2e: FAILED (exit $$rc)"; $(TESTENV) logs || true; fi; \
	fi; \
	$(TESTENV) down || true; \
	exit $$rc

bench:
	@rc=0; \
	$(TESTENV) up || rc=$$?; \
	if [ $$rc -eq 0 ]; then \
		( eval "$$($(TESTENV) env)"; \
		  set -x; \
		  $(GO) test -tags e2e -p 1 -run='^$$' -bench=. -benchmem ./internal/... && \
		  $(GO) run ./scripts/benchstart && \
		  $(GO) run ./scripts/benchidle ) || rc=$$?; \
	fi; \
	$(TESTENV) down || true; \
	exit $$rc

demo:
	scripts/demo.sh

demo-stop:
	scripts/demo.sh stop

testenv-up:
	$(TESTENV) up

testenv-down:
	$(TESTENV) down

clean:
	rm -rf bin
