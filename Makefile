# The two commands of the README. Each does its own set-up first (ci/setup.sh, idempotent).
SHELL := /bin/bash
PVBENCH := .venv/bin/pvbench
DEMO_PORT ?= 8765
RUN ?= demo-$(shell date -u +%Y%m%d-%H%M%S)

.PHONY: setup setup-demo setup-cluster test lint test-fast test-cluster demo demo-report serve bench render

## make setup: everything (what test, lint and the rest use); setup-demo: only what `make demo` uses
## (fio, .venv without extras, the report's npm packages); setup-cluster: the cluster tools (Go,
## MinIO, helm, kubeconform, the Argo engines, Hera). ci/setup.sh says what each part holds.
setup:
	@bash ci/setup.sh

setup-demo:
	@bash ci/setup.sh demo

setup-cluster:
	@bash ci/setup.sh cluster

## make test: the whole suite (real fio, real MinIO, Evidence builds, schema checks), then the
## real single-node Kubernetes stage (image, chart and every step pod on real PVCs). CI runs this.
## ci/test-stages.sh runs the two: the fast suite's `quiet` tests (fio's rates, wall times) first,
## then the Kubernetes stage in the background beside the rest of the fast suite.
test: lint
	@bash ci/test-stages.sh

## make lint: ruff, the formatter and linter (ruff.toml), in check mode; `.venv/bin/ruff format .`
## and `.venv/bin/ruff check --fix .` apply them.
lint: setup
	.venv/bin/ruff format --check .
	.venv/bin/ruff check .

## make test-fast: everything but the Kubernetes node (no root needed), on TEST_WORKERS pytest-xdist
## workers (0: in one process). --dist loadgroup keeps the tests of one built report site, or of one
## module-scoped fixture, on one worker (sdk/tests/conftest.py); the two report builds go first, one
## per worker. 2 workers on a 2-core machine: with 3, a rate-limited fio test missed its rate.
TEST_WORKERS ?= 2
## The report tests keep the site's compiled bundles here too, so that a fresh clone of the same
## pages (CI's) reuses them instead of compiling for ~2.5 min (sdk/tests/test_report.py; empty: off).
PVBENCH_TEST_BUNDLE_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/pvbench/report-bundles
export PVBENCH_TEST_BUNDLE_CACHE
## FAST_MARKS: which of them (ci/test-stages.sh runs the `quiet` ones, then the others).
FAST_MARKS ?= not cluster
test-fast: setup
	.venv/bin/pytest sdk/tests -q -rs --durations=15 -m "$(FAST_MARKS)" -n $(TEST_WORKERS) --dist loadgroup

## make test-cluster: bring the node up, run sdk/tests/test_cluster_*.py on it, tear it down.
## Needs root; exits non-zero with a message where the machine cannot host it
## (PVBENCH_SKIP_CLUSTER=1 skips it on purpose, and says so).
test-cluster: setup
	bash ci/cluster-stage.sh

## make demo: benchmark two local storage classes, aggregate, build and serve the report; it sets
## up only what it uses (setup-demo). One line per phase, with the time since `make demo` began;
## each command then says what it does (the cells, the tables written, the address served).
DEMO_T0 := $(shell date +%s)
demo_phase = @printf '\033[1m[demo %s, +%ss] %s\033[0m\n' "$$(date +%H:%M:%S)" "$$(( $$(date +%s) - $(DEMO_T0) ))" "$(1)"
demo:
	$(call demo_phase,1/5 install: only what the demo uses (ci/setup.sh demo))
	@bash ci/setup.sh demo
	$(call demo_phase,2/5 fio cells: examples/demo.yaml)
	$(PVBENCH) local run examples/demo.yaml --run $(RUN) --no-aggregate
	$(call demo_phase,3/5 aggregate: DuckDB over the campaign's results)
	$(PVBENCH) aggregate --store .demo/store --campaign demo --keep-flagged client_cpu  # as examples/demo.yaml says
	$(call demo_phase,4/5 report build: the Evidence site)
	$(MAKE) --no-print-directory demo-report
	$(call demo_phase,5/5 serve)
	$(PVBENCH) report serve .demo/site --port $(DEMO_PORT)

demo-report:
	$(PVBENCH) report build --data ".demo/store/analytics/campaign=demo/run=all" --out .demo/site

## make bench: pvbench's own overhead, measured side by side (not a test).
bench: setup
	.venv/bin/python -m pvbench_lab.bench_overhead

## make render: re-render templates/ from workflows/ (Hera).
render: setup
	$(PVBENCH) argo render
