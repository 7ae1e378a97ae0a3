# lockstep — build, test and benchmark. `make help` lists the targets.
SHELL := /bin/bash
GO ?= go
BIN := bin/lockstep
PKGS := ./...
export GOFLAGS ?= -mod=mod

.PHONY: help build test fuzz bench bench-real bench-hit bench-storage stress demo generate clean deps testdata cleanup image shard-demo

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

deps: ## install the apt packages lockstep's tests and generators need (root)
	@bash .ci/deps.sh

build: ## build bin/lockstep
	$(GO) build -o $(BIN) ./cmd/lockstep

testdata: ## build the test programs in C, Go, Rust and Java
	@if [ -f testdata/progs/Makefile ]; then $(MAKE) -s -C testdata/progs all; fi
	@$(MAKE) -s -C testdata/demo all
	@$(MAKE) -s -C testdata/tsc all
	@$(MAKE) -s -C testdata/workload all
	@for m in testdata/bugs/*/Makefile; do [ -f "$$m" ] || continue; $(MAKE) -s -C "$$(dirname "$$m")" all || exit 1; done
	@for m in testdata/hostile/*/Makefile; do [ -f "$$m" ] || continue; $(MAKE) -s -C "$$(dirname "$$m")" all || exit 1; done

test: build testdata ## run every test, the privileged ones included when root
	$(GO) vet $(PKGS)
	$(GO) test -count=1 -timeout 40m $(PKGS)

# Counts, not durations, by default: with -fuzztime 15s Go's fuzzing
# coordinator can fail a target with a bare "context deadline exceeded"
# (no input written) when a worker is starved at the deadline, as on a
# loaded 2-CPU machine; a count has no deadline. About 15 s each here.
# A trace's seeds are large: minimizing a new input is bounded by a count
# too, or each would take a minute.
fuzz: ## fuzz the spec loader, its templates and the trace reader, FUZZTIME each (a count of inputs by default; CI runs it after test)
	$(GO) test ./spec -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(or $(FUZZTIME),40000x)
	$(GO) test ./spec -run '^$$' -fuzz '^FuzzTemplate$$' -fuzztime $(or $(FUZZTIME),200000x)
	$(GO) test ./report -run '^$$' -fuzz '^FuzzShow$$' -fuzztime $(or $(FUZZTIME),40000x) -fuzzminimizetime 200x

bench: build testdata ## run the benchmarks (figures as ratios to native)
	$(GO) test -count=1 -run '^$$' -bench . -benchtime 1x -timeout 30m $(PKGS)

bench-real: build testdata ## lockstep against native on etcd, Redis, ZooKeeper and the micro benchmarks (RUNS=2), into bench/results
	@bash scripts/bench-real.sh

bench-hit: build testdata ## hit ratio of every strategy on the bug suite (TRIALS=1000, QUICK=1 for 100)
	@bash scripts/bench-hit.sh

bench-storage: build testdata ## the storage bugs, their controls, and etcd/ZooKeeper/Redis under power cuts (TRIALS=1000, CONTROL_TRIALS=100)
	@bash scripts/bench-storage.sh

stress: build testdata ## the demo's schedules on an idle machine against --jobs 2 beside real-time busy loops (TRIALS=200, STRATEGY=pos); exits 1 on a difference
	@bash scripts/stress-determinism.sh $(or $(TRIALS),200)

image: build testdata ## the lockstep container image (IMAGE=localhost/lockstep:VERSION; BASE=an image, e.g. from scripts/debian-base.sh to build offline; chroot isolation: no OCI runtime or cgroups needed to build)
	$(or $(shell command -v buildah),podman) build --isolation chroot -f Containerfile $(if $(BASE),--build-arg BASE=$(BASE)) -t $(or $(IMAGE),localhost/lockstep:$(shell sed -n 's/^const Version = "\(.*\)"/\1/p' engine/trial.go)) .

shard-demo: build testdata ## a 1,000-trial campaign as 8 shards on a local Slurm array job (or processes: ENGINE=local), merged and compared with one process
	@bash scripts/shard-demo.sh

demo: deps build testdata ## find the bundled example's bug with POS, show it, replay it
	@bash scripts/demo.sh

generate: ## regenerate the eBPF objects with bpf2go (installs clang, llvm, libbpf-dev)
	@bash .ci/deps.sh bpf
	$(GO) generate ./bpf/...

cleanup: build ## remove what a killed lockstep run left behind
	./$(BIN) clean

clean: ## remove build outputs
	rm -rf bin
	@if [ -f testdata/progs/Makefile ]; then $(MAKE) -C testdata/progs clean; fi
