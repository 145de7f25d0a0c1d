# The two entry points (see README.md):
#   make run   — install dependencies, build (release), start hourglassd on 127.0.0.1:27017 with ./data
#   make test  — install dependencies, build with ASan+UBSan, run every test
JOBS ?= $(shell nproc)
RELEASE_DIR := build/release
ASAN_DIR := build/asan

.PHONY: run test deps release asan unit-test client-test clean

deps:
	@scripts/install-deps.sh

release: deps
	cmake -S . -B $(RELEASE_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release -DHG_BUILD_TESTS=OFF >/dev/null
	ninja -C $(RELEASE_DIR) -j $(JOBS) hourglassd

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

test: unit-test client-test

clean:
	rm -rf build
