# The two entry points (see README.md):
#   make run   — install dependencies, build (release), start hourglassd on 127.0.0.1:27017 with ./data
#   make test  — install dependencies, build with ASan+UBSan, run every test
JOBS ?= $(shell nproc)
RELEASE_DIR := build/release
ASAN_DIR := build/asan

.PHONY: run test deps release asan unit-test client-test bench clean

deps:
	@scripts/install-deps.sh

release: deps
	cmake -S . -B $(RELEASE_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release -DHG_BUILD_TESTS=OFF \
	  -DHG_BUILD_BENCH=ON >/dev/null
	ninja -C $(RELEASE_DIR) -j $(JOBS) hourglassd wire_bench ts_bench tsbs_queries index_bench

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

# The release build is part of the tests: it is what `make run` and the benchmarks use, and the
# optimizer sees warnings the test build does not.
test: release unit-test client-test

bench: release
	bench/run.sh
	bench/ts_run.sh

clean:
	rm -rf build
