# The two commands of the README. Each does its own set-up first (ci/setup.sh, idempotent).
SHELL := /bin/bash
PVBENCH := .venv/bin/pvbench
DEMO_PORT ?= 8765
RUN ?= demo-$(shell date -u +%Y%m%d-%H%M%S)

.PHONY: setup test demo demo-report serve bench render

setup:
	@bash ci/setup.sh

## make test: the whole suite (real fio, real MinIO, Evidence build, schema checks). CI runs this.
test: setup
	.venv/bin/pytest sdk/tests -q -rs --durations=15

## make demo: benchmark two local storage classes, aggregate, build and serve the report.
demo: setup
	$(PVBENCH) local run examples/demo.yaml --run $(RUN)
	$(MAKE) --no-print-directory demo-report
	@echo "Report: http://127.0.0.1:$(DEMO_PORT)/  (Ctrl-C to stop)"
	$(PVBENCH) report serve .demo/site --port $(DEMO_PORT)

demo-report:
	$(PVBENCH) report build --data ".demo/store/analytics/campaign=demo/run=all" --out .demo/site

## make bench: pvbench's own overhead, measured side by side (not a test).
bench: setup
	.venv/bin/python ci/bench_overhead.py

## make render: re-render templates/ from workflows/ (Hera).
render: setup
	$(PVBENCH) argo render
