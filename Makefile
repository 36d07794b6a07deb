# The README's two commands: `make run` and `make test`. Both install what is
# missing (apt-get), configure and build first.
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)
PYTHON     ?= /usr/bin/python3
CMAKE_FLAGS ?=

.PHONY: all deps deps-test build build-asan run test test-c test-asan test-python bench clean

all: build

deps:
	@scripts/install-deps.sh build

deps-test:
	@scripts/install-deps.sh test

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DLUMEN_WERROR=ON $(CMAKE_FLAGS)

$(ASAN_BUILD)/build.ninja:
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLUMEN_WERROR=ON -DLUMEN_SANITIZE=ON $(CMAKE_FLAGS)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

build-asan: deps-test $(ASAN_BUILD)/build.ninja
	cmake --build $(ASAN_BUILD) -j $(JOBS)

# Main job: blur and filter a generated scene, print device/method/timings, write results.
run: build
	@scripts/demo.sh $(BUILD)/lumen

test: deps-test build build-asan
	$(MAKE) --no-print-directory test-c test-asan test-python

test-c:
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# ASan + UBSan build of the same suite; OpenMP's runtime keeps thread pools alive, not a leak.
test-asan:
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS)

test-python:
	LUMEN_BIN=$(abspath $(BUILD))/lumen $(PYTHON) -m pytest -q tests/python

bench: build
	$(BUILD)/lumen bench
	LUMEN_BIN=$(abspath $(BUILD))/lumen $(PYTHON) bench/compare.py

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
