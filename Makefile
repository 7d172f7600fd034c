# The README's two commands are `make run` and `make test`.
GO ?= go
BUILD_DIR := _build
# An execution count, not a duration: Go 1.26's fuzz coordinator can fail a
# duration-bounded run with a bare "context deadline exceeded" when a worker
# is still mid-call at the deadline on a loaded machine (golang/go#75804,
# fixed in Go 1.27); a count has no deadline to race.
FUZZTIME ?= 2000x

.PHONY: test unit fuzz e2e latency vet run collector classify eval matrix content-eval dashboards

# test: everything CI runs (see .ci/run).
test: vet unit fuzz dashboards e2e

vet:
	$(GO) vet ./...

unit:
	$(GO) test -count=1 ./...

# A short run of each fuzz target; longer runs: make fuzz FUZZTIME=200000x
# (or a duration such as 5m, on a quiet machine)
fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzBuild$$' -fuzztime=$(FUZZTIME) ./trajectory
	$(GO) test -run='^$$' -fuzz='^FuzzBuildLogs$$' -fuzztime=$(FUZZTIME) ./trajectory
	$(GO) test -run='^$$' -fuzz='^FuzzKeyedRules$$' -fuzztime=$(FUZZTIME) ./trajectory
	$(GO) test -run='^$$' -fuzz='^FuzzTextRules$$' -fuzztime=$(FUZZTIME) ./classifier
	$(GO) test -run='^$$' -fuzz='^FuzzCanonicalArgs$$' -fuzztime=$(FUZZTIME) ./classifier
	$(GO) test -run='^$$' -fuzz='^FuzzParseAnswer$$' -fuzztime=$(FUZZTIME) ./classifier/llm
	$(GO) test -run='^$$' -fuzz='^FuzzRedactor$$' -fuzztime=$(FUZZTIME) ./recovery
	$(GO) test -run='^$$' -fuzz='^FuzzDecideInput$$' -fuzztime=$(FUZZTIME) ./recovery
	$(GO) test -run='^$$' -fuzz='^FuzzDecisionJSON$$' -fuzztime=$(FUZZTIME) ./recovery
	$(GO) test -run='^$$' -fuzz='^FuzzJSONString$$' -fuzztime=$(FUZZTIME) ./recovery
	$(GO) test -run='^$$' -fuzz='^FuzzRedactPrefilter$$' -fuzztime=$(FUZZTIME) ./recovery
	$(GO) test -run='^$$' -fuzz='^FuzzBatchSplits$$' -fuzztime=$(FUZZTIME) ./guard
	$(GO) test -run='^$$' -fuzz='^FuzzConsumeTraces$$' -fuzztime=$(FUZZTIME) ./processor/triageprocessor
	$(GO) test -run='^$$' -fuzz='^FuzzConsumeLogs$$' -fuzztime=$(FUZZTIME) ./processor/triageprocessor
	$(GO) test -run='^$$' -fuzz='^FuzzInFlightBatchSplits$$' -fuzztime=$(FUZZTIME) ./processor/triageprocessor
	$(GO) test -run='^$$' -fuzz='^FuzzAttrWriter$$' -fuzztime=$(FUZZTIME) ./processor/triageprocessor
	$(GO) test -run='^$$' -fuzz='^FuzzConsumeTraces$$' -fuzztime=$(FUZZTIME) ./connector/triageconnector

# The shared fixtures and corpora: the first shared/ holding DESIGN.md found
# in this folder or a parent (CI clones the repo beside a copy of shared/).
SHARED ?= $(shell d="$(CURDIR)"; while :; do \
	if [ -f "$$d/shared/DESIGN.md" ]; then echo "$$d/shared"; break; fi; \
	[ "$$d" = / ] && break; d=$$(dirname "$$d"); done)
FIXTURES = $(SHARED)/fixtures/frameworks

# classify: the CLI on every shipped capture, one JSON line per agent run
# (the few captures whose instrumentation exported no span are reported).
classify:
	@test -n "$(SHARED)" || { echo "shared/DESIGN.md not found in this folder or a parent" >&2; exit 1; }
	$(GO) run ./cmd/triage classify --skip-empty $$(find $(FIXTURES) -name '*.json' ! -name '*.logs.json' ! -name labels.json | sort)

# eval: score the classifier on the shipped captures and corpora (README, Evaluation).
eval:
	@test -n "$(SHARED)" || { echo "shared/DESIGN.md not found in this folder or a parent" >&2; exit 1; }
	$(GO) run ./cmd/triage eval --labels $(FIXTURES)/labels.json $(addprefix --corpus ,$(sort $(wildcard $(SHARED)/corpora/*.json)))

# matrix: regenerate the README's support matrix (stack × scenario → what
# triage answers, versions, what each stack's instrumentation cannot show)
# from the captures with `triage eval --matrix`, between its markers. eval
# exits 1 when some capture is not answered as labelled: the matrix shows
# which, so that is not an error here.
matrix:
	@test -n "$(SHARED)" || { echo "shared/DESIGN.md not found in this folder or a parent" >&2; exit 1; }
	@mkdir -p $(BUILD_DIR)
	$(GO) build -o $(BUILD_DIR)/triage ./cmd/triage
	cd $(SHARED)/.. && $(CURDIR)/$(BUILD_DIR)/triage eval --labels shared/fixtures/frameworks/labels.json --matrix --harness shared/harness > $(CURDIR)/$(BUILD_DIR)/matrix.md; test $$? -le 1
	$(call readme_block,matrix,$(BUILD_DIR)/matrix.md)

# content-eval: regenerate the README's side-by-side scores of the captures
# with content on (shared), each instrumentation's default content setting
# and content capture off (testdata/, harness/README.md), of toolsets b and c
# (other tool domains, content on) and of the two stacks the shared set lacks
# (toolsets a and c), between its markers.
CONTENT_SETS = testdata/frameworks-content-default/labels.json testdata/frameworks-content-off/labels.json testdata/frameworks-toolset-b/labels.json testdata/frameworks-toolset-c/labels.json testdata/frameworks-newstacks-a/labels.json testdata/frameworks-newstacks-c/labels.json
content-eval:
	@test -n "$(SHARED)" || { echo "shared/DESIGN.md not found in this folder or a parent" >&2; exit 1; }
	@mkdir -p $(BUILD_DIR)
	$(GO) build -o $(BUILD_DIR)/triage ./cmd/triage
	$(BUILD_DIR)/triage eval --by-framework --labels $(FIXTURES)/labels.json $(addprefix --labels ,$(CONTENT_SETS)) > $(BUILD_DIR)/content-eval.txt; test $$? -le 1
	{ echo "Output of \`make content-eval\` at commit \`$$(git rev-parse --short HEAD)\`:"; echo; echo '```'; \
		sed -n '/^== by framework/,/^$$/p' $(BUILD_DIR)/content-eval.txt | sed '$$d'; echo '```'; } > $(BUILD_DIR)/content-eval.md
	$(call readme_block,content-eval,$(BUILD_DIR)/content-eval.md)

# readme_block NAME FILE: README.md with the text between <!-- NAME:begin -->
# and <!-- NAME:end --> replaced by FILE.
readme_block = awk -v f=$(2) 'BEGIN { while ((getline l < f) > 0) m = m l "\n" } \
		/<!-- $(1):begin -->/ { print; printf "%s", m; skip = 1; next } /<!-- $(1):end -->/ { skip = 0 } !skip' README.md > $(BUILD_DIR)/README.md && \
	mv $(BUILD_DIR)/README.md README.md

# dashboards: the dashboard JSON's generator (its own module, so the Grafana
# SDK stays out of the library's go.mod) vetted and tested (the checked-in
# JSON is what it generates), the Prometheus config and alert rules checked
# and the rules unit-tested with promtool (the dashboard's queries run
# against a real Prometheus in e2e, e2e/dashboard_test.go).
dashboards:
	cd dashboards/grafana/gen && $(GO) vet ./... && $(GO) test -count=1 ./...
	promtool check config dashboards/prometheus/prometheus.yml
	promtool check rules dashboards/prometheus/alerts.yaml
	promtool test rules dashboards/prometheus/alerts_test.yaml

# ---- the collector (ocb) ----
# ocb is run from the module proxy at the pinned release; no other download.
OCB := go.opentelemetry.io/collector/cmd/builder@v0.161.0
COLLECTOR := $(BUILD_DIR)/collector/triage-otelcol
# The collector compiles this module's non-test Go sources (through the
# replace ocb writes), so any of them changing makes it stale.
COLLECTOR_SRC := $(shell find . -name '*.go' -not -name '*_test.go' \
	-not -path './_build/*' -not -path './bench/*' -not -path './dashboards/*' -not -path './e2e/*' -not -path './examples/*' -not -path './tools/*')

# collector: build _build/collector/triage-otelcol from builder-config.yaml
# (skipped when it is newer than its inputs).
collector: $(COLLECTOR)

$(COLLECTOR): builder-config.yaml go.mod go.sum $(COLLECTOR_SRC)
	@mkdir -p $(BUILD_DIR)
	@if [ -f $@ ]; then echo "make: sources changed since the last build; rebuilding $@ with ocb (incremental, usually under a minute)"; \
	else echo "make: building $@ with ocb — the first build fetches the collector modules from the Go module proxy and compiles them: several minutes, with long silent stretches"; fi
	$(GO) run $(OCB) --config builder-config.yaml
	@touch $@
	@echo "make: $@ is built"

# run: build the collector and start it on config.example.yaml (Ctrl-C stops it).
run: collector
	@echo "make: starting the collector on config.example.yaml: OTLP in on localhost:4317 (gRPC) and localhost:4318 (HTTP), decisions to http://localhost:9000/decisions (triage sink), metrics on localhost:8889; Ctrl-C stops it"
	./$(COLLECTOR) --config config.example.yaml

# End-to-end tests against a collector built by ocb (see e2e/).
e2e: collector
	$(GO) test -tags e2e -count=1 -timeout 30m -v ./e2e/...

# latency: measures on the ocb-built collector the time from the request
# that trips a guard (or holds a run's root) to the decision's webhook POST
# (BENCHMARKS.md). A measurement, not part of make test.
# LATENCY_QUEUE=file: the webhook exporter's queue on file_storage.
LATENCY_SAMPLES ?= 300
LATENCY_QUEUE ?= memory
latency: collector
	TRIAGE_LATENCY_SAMPLES=$(LATENCY_SAMPLES) TRIAGE_LATENCY_QUEUE=$(LATENCY_QUEUE) \
		$(GO) test -tags e2e -count=1 -timeout 30m -v -run '^TestMeasureDecisionLatency$$' ./e2e/
