# The two entry points (see README.md):
#   make run   — install dependencies, build (release), start hourglassd on 127.0.0.1:27017 with ./data
#   make test  — install dependencies, build with ASan+UBSan, run every test
#   make fuzz  — build the fuzz targets (wire, BSONColumn) and run each briefly (FUZZ_SECONDS, default 30)
JOBS ?= $(shell nproc)
RELEASE_DIR := build/release
ASAN_DIR := build/asan
FUZZ_DIR := build/fuzz
FUZZ_SECONDS ?= 30
# The fuzz build uses clang (and so libFuzzer) when it is installed, else the default compiler
# with the standalone driver (fuzz/standalone_main.cc).
FUZZ_COMPILER := $(if $(shell command -v clang++ 2>/dev/null),-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++)

.PHONY: run test deps release asan unit-test client-test release-client-test bench fuzz clean

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
test: release unit-test client-test release-client-test

bench: release
	bench/run.sh
	bench/ts_run.sh

# Builds the fuzz targets (ASan+UBSan) and runs each for FUZZ_SECONDS over its seed corpus in
# fuzz/corpus; new inputs libFuzzer finds are kept in build/fuzz/corpus.
fuzz: deps
	cmake -S . -B $(FUZZ_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHG_SANITIZE=ON \
	  -DHG_BUILD_TESTS=OFF -DHG_BUILD_FUZZ=ON $(FUZZ_COMPILER) >/dev/null
	ninja -C $(FUZZ_DIR) -j $(JOBS) op_msg_fuzz bson_column_fuzz
	mkdir -p $(FUZZ_DIR)/corpus/op_msg $(FUZZ_DIR)/corpus/bson_column
	$(FUZZ_DIR)/op_msg_fuzz -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
	  $(FUZZ_DIR)/corpus/op_msg fuzz/corpus/op_msg
	$(FUZZ_DIR)/bson_column_fuzz -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
	  $(FUZZ_DIR)/corpus/bson_column fuzz/corpus/bson_column

clean:
	rm -rf build
