# The two entry points (see README.md):
#   make run   — install dependencies, build (release), start hourglassd on 127.0.0.1:27017 with ./data
#   make test  — install dependencies, build with ASan+UBSan, run every test
#   make fuzz  — build the fuzz targets and run each briefly (FUZZ_SECONDS, default 30); `make test`
#                runs each on 200,000 inputs from a fixed seed
JOBS ?= $(shell nproc)
RELEASE_DIR := build/release
ASAN_DIR := build/asan
FUZZ_SECONDS ?= 30
# How long each target runs: FUZZ_SECONDS for `make fuzz`; a fixed seed and number of inputs for
# `make test`, so that a run finds the same things on every machine.
FUZZ_LIMIT ?= -max_total_time=$(FUZZ_SECONDS)
FUZZ_TEST_LIMIT ?= -seed=1 -runs=200000
# The fuzz build uses the default compiler with the standalone driver (fuzz/standalone_main.cc),
# or with FUZZ_CLANG=1 clang and libFuzzer's coverage-guided search.
FUZZ_CLANG ?= 0
FUZZ_DIR := $(if $(filter 1,$(FUZZ_CLANG)),build/fuzz-clang,build/fuzz)
FUZZ_COMPILER := $(if $(filter 1,$(FUZZ_CLANG)),-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++)
# Each target is $(FUZZ_DIR)/<name>_fuzz, its seeds fuzz/corpus/<name>.
FUZZ_TARGETS := op_msg bson_column bson config query pipeline lineprotocol

.PHONY: run test deps release asan unit-test client-test release-client-test bench fuzz fuzz-test clean

deps:
	@scripts/install-deps.sh

release: deps
	cmake -S . -B $(RELEASE_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release -DHG_BUILD_TESTS=OFF \
	  -DHG_BUILD_BENCH=ON >/dev/null
	ninja -C $(RELEASE_DIR) -j $(JOBS) hourglassd wire_bench ts_bench tsbs_queries index_bench \
	  plan_bench

run: release
	mkdir -p data
	$(RELEASE_DIR)/hourglassd --port 27017 --bind_ip 127.0.0.1 --dbpath ./data

asan: deps
	cmake -S . -B $(ASAN_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DHG_SANITIZE=ON >/dev/null
	ninja -C $(ASAN_DIR) -j $(JOBS)

unit-test: asan
	cd $(ASAN_DIR) && ctest --output-on-failure -j $(JOBS)

client-test: asan
	HOURGLASSD=$(CURDIR)/$(ASAN_DIR)/hourglassd tests/run_client_tests.sh

# The release build is what users run: it links tcmalloc, which the sanitizer build cannot, so
# the suites of durability (kill -9), write-back and time-series collections, and serverStatus's
# allocator section, run against it too.
RELEASE_CLIENT_TESTS := tests/integration/test_durability.py \
  tests/integration/test_timeseries_write_back.py tests/integration/test_timeseries.py \
  tests/integration/test_handshake.py
release-client-test: release
	HOURGLASSD=$(CURDIR)/$(RELEASE_DIR)/hourglassd /usr/bin/python3 -m pytest -q \
	  $(RELEASE_CLIENT_TESTS)

# The release build is part of the tests: it is what `make run` and the benchmarks use, and the
# optimizer sees warnings the test build does not.
test: release unit-test client-test release-client-test fuzz-test

bench: release
	bench/run.sh
	bench/ts_run.sh

# Builds the fuzz targets (ASan+UBSan) and runs each for FUZZ_SECONDS over its seed corpus in
# fuzz/corpus; new inputs libFuzzer finds are kept in build/fuzz/corpus.
fuzz: deps
	cmake -S . -B $(FUZZ_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHG_SANITIZE=ON \
	  -DHG_BUILD_TESTS=OFF -DHG_BUILD_FUZZ=ON $(FUZZ_COMPILER) >/dev/null
	ninja -C $(FUZZ_DIR) -j $(JOBS) $(addsuffix _fuzz,$(FUZZ_TARGETS))
	for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_DIR)/corpus/$$t && \
	  $(FUZZ_DIR)/$${t}_fuzz $(FUZZ_LIMIT) -max_len=4096 \
	    $(FUZZ_DIR)/corpus/$$t fuzz/corpus/$$t || exit 1; \
	done

# The test suite's share of fuzzing: every target briefly, failing on any finding.
fuzz-test:
	$(MAKE) fuzz FUZZ_LIMIT="$(FUZZ_TEST_LIMIT)"

clean:
	rm -rf build
