# The README's two commands: `make run` and `make test`. Both install what is
# missing (apt-get), configure and build first.
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)
PYTHON     ?= /usr/bin/python3
CMAKE_FLAGS ?=

.PHONY: all deps deps-test deps-bench build build-tests build-asan run test check-newcomer check-layers test-c test-asan test-python \
	test-python-asan test-pip bench clean fuzz

all: build

deps:
	@scripts/install-deps.sh build

deps-test:
	@scripts/install-deps.sh test

deps-bench:
	@scripts/install-deps.sh bench

RUN_CONFIG  = -G Ninja -DCMAKE_BUILD_TYPE=Release -DLUMEN_WERROR=ON -DPython3_EXECUTABLE=$(PYTHON)
ASAN_CONFIG = -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLUMEN_WERROR=ON -DLUMEN_SANITIZE=ON \
	      -DLUMEN_CUDA=OFF -DPython3_EXECUTABLE=$(PYTHON)

# `make run`'s build needs only the build packages (no cmocka: it then has no C tests).
$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) $(RUN_CONFIG) $(CMAKE_FLAGS)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# The test builds require their test packages: configured again each time (cheap), so that a
# build folder `make run` configured without cmocka gets its C tests.
build-tests: deps-test
	cmake -S . -B $(BUILD) $(RUN_CONFIG) -DLUMEN_REQUIRE_TESTS=ON $(CMAKE_FLAGS) > /dev/null
	cmake --build $(BUILD) -j $(JOBS)

build-asan: deps-test
	cmake -S . -B $(ASAN_BUILD) $(ASAN_CONFIG) -DLUMEN_REQUIRE_TESTS=ON $(CMAKE_FLAGS) > /dev/null
	cmake --build $(ASAN_BUILD) -j $(JOBS)

# Main job: blur and filter a generated scene, print device/method/timings, write results.
run: build
	@scripts/demo.sh $(BUILD)/lumen

test: deps-test build-tests build-asan
	$(MAKE) --no-print-directory check-layers test-c test-asan test-python test-python-asan test-pip

# `make run` works with only the build packages: run in build-newcomer with the test-only
# packages hidden from its configure step (scripts/check-newcomer.sh; CI runs it).
check-newcomer:
	scripts/check-newcomer.sh

# No #include or call crosses the layers the wrong way (docs/architecture.md, "Layers"); the
# calls are read from the library's objects.
check-layers: build
	$(PYTHON) scripts/check-layers.py --objects $(BUILD)/CMakeFiles/lumen_objects.dir/src

test-c:
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# ASan + UBSan build of the same suite; OpenMP's runtime keeps thread pools alive, not a leak.
test-asan:
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS)

# The CLI tests and the Python package's tests (the package as built in $(BUILD)/python).
test-python:
	LUMEN_DEVICE=cpu LUMEN_BIN=$(abspath $(BUILD))/lumen PYTHONPATH=$(abspath $(BUILD))/python \
	  $(PYTHON) -m pytest -q tests/python

# The package's tests on the ASan+UBSan build. The interpreter is not instrumented, so the
# runtimes are preloaded and Python's allocator bypassed; leaks are left to the RSS tests,
# which cannot run here (ASan's quarantine holds freed memory).
test-python-asan:
	LUMEN_DEVICE=cpu ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  PYTHONMALLOC=malloc LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libubsan.so)" \
	  PYTHONPATH=$(abspath $(ASAN_BUILD))/python $(PYTHON) -m pytest -q -p no:cacheprovider \
	  --capture=sys -k "not rss" tests/python/test_py_*.py tests/python/test_phos_compat.py \
	  tests/python/test_film.py tests/python/test_compat_phos_effects.py tests/python/test_resize.py \
	  tests/python/test_halo.py

# The README's install line works: pip builds through CMake (reusing $(BUILD)) into a folder.
test-pip:
	rm -rf $(BUILD)/pip-target
	LUMEN_CMAKE_BUILD_DIR=$(abspath $(BUILD)) $(PYTHON) -m pip install -q --no-build-isolation \
	  --no-deps --no-index --target $(BUILD)/pip-target ./python
	cd /tmp && PYTHONPATH=$(abspath $(BUILD))/pip-target $(PYTHON) -c \
	  "import lumen, numpy as np, pathlib; from lumen.compat import phos; \
	   r = lumen.gaussian_blur(np.ones((8, 8), np.float32), 1.0); assert abs(r - 1).max() < 1e-6; \
	   import lumen.dask, lumen.bench_dask; \
	   st = pathlib.Path(lumen.__file__).parent / 'studio' / 'static'; \
	   assert all((st / f).is_file() for f in ('index.html', 'studio.css', 'studio.js')), st; \
	   print('pip-installed lumen', lumen.__version__, 'from', lumen.__file__)"

# The in-process benches, then lumen against its peers with each case's floor (issue 17), and the
# chart of that run: docs/bench-<machine>.png and .svg (BENCH_MACHINE names the machine, else
# the CPU's name and cores; bench/charts.py). The chart is drawn even when the bench exits non-zero
# (a target missed, a peer missing): the run's JSON is still whole; make then fails with its status.
BENCH_MACHINE ?=
bench: deps-bench build
	$(BUILD)/lumen bench
	$(BUILD)/lumen bench conv
	rm -f $(BUILD)/bench.json; status=0; PYTHONPATH=$(abspath $(BUILD))/python $(PYTHON) -m lumen.bench --json-out $(BUILD)/bench.json \
	  || status=$$?; \
	$(PYTHON) bench/charts.py $(BUILD)/bench.json --out docs $(if $(BENCH_MACHINE),--machine $(BENCH_MACHINE)) \
	  && exit $$status

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)

# libFuzzer harnesses (tests/fuzz, docs/fuzzing.md): every decoder and the ops' parameters under
# ASan+UBSan, FUZZ_SECONDS each, one at a time; fails on any crash (inputs kept in
# $(FUZZ_BUILD)/artifacts). A clang build of its own: configured once, built each time.
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
fuzz:
	@scripts/install-deps.sh fuzz
	@[ -f $(FUZZ_BUILD)/build.ninja ] || cmake -S . -B $(FUZZ_BUILD) -G Ninja \
	  -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLUMEN_FUZZ=ON -DLUMEN_TESTS=OFF \
	  -DLUMEN_PYTHON=OFF -DLUMEN_INSTALL=OFF -DLUMEN_CUDA=OFF $(CMAKE_FLAGS)
	cmake --build $(FUZZ_BUILD) -j $(JOBS)
	tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)
