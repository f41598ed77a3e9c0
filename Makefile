# metacel: `make help` lists the targets.
SHELL := /usr/bin/env bash
.DEFAULT_GOAL := help

GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# Tools and control-plane binaries are cached outside the repo, keyed by version.
CACHE    ?= $(or $(METACEL_CACHE),$(HOME)/.cache/metacel)
TOOLS    := $(CACHE)/tools
# A fuzz budget in executions, not seconds: Go 1.26's fuzz coordinator can fail a clean run with
# "context deadline exceeded" when a wall-clock -fuzztime ends mid-execution (golang/go#75804,
# fixed in Go 1.27). FUZZTIME=1m still works for a longer local run.
FUZZTIME ?= 20000x

HELM_VERSION          := v3.22.0
HELM                  := $(TOOLS)/helm-$(HELM_VERSION)/helm
GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT         := $(TOOLS)/golangci-lint-$(GOLANGCI_LINT_VERSION)/golangci-lint

.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: demo
demo: ## Start a local cluster with the five seed operators as policies and metacel running them (stays up)
	@hack/demo.sh up

.PHONY: demo-down
demo-down: ## Stop everything `make demo` started
	@hack/demo.sh down

.PHONY: build
build: ## Build bin/metacel
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o bin/metacel ./cmd/metacel

.PHONY: kubectl-metacel
kubectl-metacel: build ## Build bin/kubectl-metacel, the kubectl plugin (`kubectl metacel ...` with bin/ on the PATH), and bin/kubectl_complete-metacel, its shell completion
	cp bin/metacel bin/kubectl-metacel
	install -m 0755 deploy/krew/kubectl_complete-metacel bin/kubectl_complete-metacel

.PHONY: test
test: vet lint unit fuzz e2e ## Run every test: vet, lint, unit and golden, a short fuzz of the parsers, e2e on a local control plane

.PHONY: vet
vet: ## go vet every package, e2e tests included
	$(GO) vet -tags e2e ./...

.PHONY: unit
unit: $(HELM) ## Unit and golden tests, the coordination of replicas under the race detector too (no cluster; the e2e tests need the build tag e2e, and so does the bench, whose own tests need no cluster); the chart's tests render it with helm
	METACEL_HELM=$(HELM) $(GO) test -count=1 ./...
	$(GO) test -count=1 -race ./runtime/shard/... ./runtime/operator/...
	$(GO) test -count=1 -tags e2e ./test/bench/...
	cd test/monitoring && $(GO) test -count=1 ./...   # the dashboard's and alerts' PromQL, parsed by Prometheus' own parser (a module of its own: its dependencies stay out of metacel's)

.PHONY: e2e
e2e: $(HELM) ## End-to-end tests against a local control plane (built once into the cache: 15 min the first time)
	METACEL_HELM=$(HELM) $(GO) test -tags e2e -count=1 -timeout 30m ./test/e2e

$(HELM):
	GOBIN=$(dir $@) $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

.PHONY: control-plane
control-plane: ## Build (once) the control plane binaries and print their directory
	@hack/control-plane.sh bin-dir

.PHONY: fuzz
fuzz: ## Fuzz the policy loader, the template engine, the cache's JSON decoder, metadata scanner and watch-stream framer, and the JSON encoder, FUZZTIME each (default 20000x executions)
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) -timeout 10m ./runtime/policy
	$(GO) test -run '^$$' -fuzz '^FuzzTemplate$$' -fuzztime $(FUZZTIME) -timeout 10m ./runtime/expr
	$(GO) test -run '^$$' -fuzz '^FuzzUnmarshalObject$$' -fuzztime $(FUZZTIME) -timeout 10m ./runtime/compact
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeObject$$' -fuzztime $(FUZZTIME) -timeout 10m ./runtime/compact
	$(GO) test -run '^$$' -fuzz '^FuzzFramer$$' -fuzztime $(FUZZTIME) -timeout 10m ./runtime/compact
	$(GO) test -run '^$$' -fuzz '^FuzzMarshal$$' -fuzztime $(FUZZTIME) -timeout 10m ./runtime/jsonenc

.PHONY: manifests
manifests: build ## Regenerate deploy/ from policies/: the policies' ServiceAccounts and RBAC (metacel rbac) and the policy ConfigMaps
	bin/metacel rbac policies/ > deploy/rbac/policies.yaml
	cp policies/*.yaml deploy/policies/
	cp deploy/rbac/policies.yaml deploy/helm/metacel/files/policy-rbac.yaml
	cp policies/*.yaml deploy/helm/metacel/files/policies/

.PHONY: golden
golden: ## Regenerate the golden files (`metacel render`, the policy JSON Schema, client-go's built-in schema) after an intended change
	METACEL_UPDATE_GOLDEN=1 $(GO) test -count=1 ./cmd/metacel ./runtime/policy ./runtime/builtinschema

.PHONY: bench
bench: ## Benchmarks: render per parent (ns/op, allocs/op)
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./runtime/render

# The side-by-side benchmark: BENCH_PARENTS MyApps, BENCH_RUNS repetitions (medians), the
# configurations of BENCH_CONFIGS; docs/benchmarks.md has the command for 10,000 x 3.
# Sharded replicas (metacel --shards=auto as 1 and as 3 processes, on an API server with
# ShardedListAndWatch=true): make bench-e2e BENCH_CONFIGS=sharded BENCH_PARENTS=10000
# (other counts: BENCH_FLAGS=-replicas=1,2,4). BENCH_CONFIGS=json: the hand-written controller's
# Pods as JSON (as metacel's) instead of protobuf; BENCH_CONFIGS=conditions: the hand-written
# controller's status also carries observedGeneration and the Synced and Ready conditions (as
# metacel's contract does); BENCH_CONFIGS=writecost: the control plane's
# CPU per write of each kind. The runs of both controllers end with a policy change that both
# make (every Pod replaced); BENCH_CONFIGS=nodes runs on a control plane that also runs
# kube-scheduler and a kwok node, so that Pods are bound and Running and deleted gracefully.
# BENCH_CONFIGS=frameworks: metacel at its defaults beside the seed operators as users write them,
# each on its own fresh API server: MyApp and Memcached with controller-runtime (test/bench/frameworks,
# its own Go module), MyApp as a Kopf-style Python loop on Debian's python3-kubernetes
# (test/bench/kopf; the bench installs the package with apt-get when it is missing).
BENCH_PARENTS ?= 1000
BENCH_RUNS    ?= 1
BENCH_CONFIGS ?= equal,unthrottled,defaults,nodes
BENCH_FLAGS   ?=

.PHONY: bench-e2e
bench-e2e: ## metacel vs a hand-written client-go controller (or the frameworks' operators), each on a fresh API server: one table (bin/bench-e2e.md)
	$(GO) run -tags e2e ./test/bench -parents $(BENCH_PARENTS) -runs $(BENCH_RUNS) -configs $(BENCH_CONFIGS) $(BENCH_FLAGS)

.PHONY: bench-ready
bench-ready: ## In-process: 1,000 MyApps until all are Ready (Pods Running on kwok nodes)
	$(GO) test -tags e2e -count=1 -run '^$$' -bench ThousandMyApps -benchtime 1x -timeout 30m ./test/e2e

.PHONY: house-facts
house-facts: ## The production code's shape, read-only: packages, import and file arrows, the largest struct, the walk of one sync (hack/housefacts; HOUSE_FLAGS=-json)
	$(GO) run ./hack/housefacts $(HOUSE_FLAGS)

.PHONY: lint
lint: $(GOLANGCI_LINT) ## golangci-lint (pinned, installed into the tools cache)
	$(GOLANGCI_LINT) run ./...

$(GOLANGCI_LINT):
	GOBIN=$(dir $@) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

.PHONY: clean
clean: ## Remove build output
	rm -rf bin
