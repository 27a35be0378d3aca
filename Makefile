# The two commands of the README's quick start, and a few more for developers.
#   make demo   installs what is missing, builds, runs the bundled default scenario
#   make test   the same set-up, then the whole test suite through ctest
#   make test-asan  the whole suite built with AddressSanitizer + UBSan (build-asan/)
#   make setup-web  the plotting libraries --html reports embed (npm; a note, not a failure, offline)
#   make fuzz   the libFuzzer targets (clang) run FUZZ_SECONDS each on fuzz/corpus (build-fuzz/,
#               every library instrumented: for long runs)
#   make fuzz-smoke  the same targets as `make test-asan` built them, run FUZZ_SECONDS each (CI)
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all setup setup-web configure build demo test test-asan fuzz fuzz-smoke bench format clean

all: build

setup:
	@bash scripts/setup.sh

# Vega, Vega-Lite and vega-embed from npm into third_party/npm (git-ignored), for --html.
setup-web:
	@bash scripts/setup-web.sh

$(BUILD)/CMakeCache.txt: | setup
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

configure: $(BUILD)/CMakeCache.txt

build: setup configure
	cmake --build $(BUILD) -j $(JOBS)

demo: build setup-web
	bash scripts/demo.sh $(BUILD)/trainsim

test: build setup-web
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Sanitizers: every test, and the trainsim binary the CLI tests run, built with ASan and UBSan;
# any report fails the test (UBSan does not recover). Built with clang (installed for `make fuzz`
# anyway): it compiles this code about twice as fast as g++ under the sanitizers (cli/api.cc:
# 12 s against 23 s of CPU, measured 2026-12-01), and the Release build already covers g++.
# Line tables only (-gline-tables-only): sanitizer stack traces keep file:line, the build skips
# full debug info. No CUDA: the NCCL runner is not built here; no Python module (an ASan
# extension cannot load into a plain python3); the headless-browser test of the --html pages
# (label "browser") runs in `make test` only. The libFuzzer targets are built here too, with only
# the input-facing code instrumented for coverage (fuzz/CMakeLists.txt, TRAINSIM_FUZZ_SCOPE), so
# `make fuzz-smoke` runs them without a third build.
SAN_FLAGS = -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" \
  -DTRAINSIM_SANITIZE=address,undefined -DTRAINSIM_WITH_CUDA=OFF -DTRAINSIM_BUILD_BENCH=OFF
ASAN_BUILD ?= build-asan
test-asan: setup
	CC=clang CXX=clang++ cmake -S . -B $(ASAN_BUILD) $(SAN_FLAGS) \
	  -DCMAKE_CXX_FLAGS=-fno-sanitize-recover=all -DTRAINSIM_FUZZ=ON -DTRAINSIM_FUZZ_SCOPE=inputs \
	  $(CMAKE_FLAGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j $(JOBS) -LE browser

# Fuzzing: clang's libFuzzer on the scenario loader (text, JSON), durations and --set.
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS = fuzz_scenario_text fuzz_scenario_json fuzz_duration fuzz_set fuzz_simulate \
  fuzz_calibration fuzz_failure_model
fuzz: setup
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) $(SAN_FLAGS) -DTRAINSIM_FUZZ=ON \
	  -DTRAINSIM_BUILD_TESTS=OFF $(CMAKE_FLAGS)
	cmake --build $(FUZZ_BUILD) --target $(FUZZ_TARGETS) -j $(JOBS)
	bash fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# The targets from the sanitizer build (`make test-asan` first): a short run of each in CI.
fuzz-smoke:
	test -f $(ASAN_BUILD)/CMakeCache.txt || $(MAKE) test-asan
	cmake --build $(ASAN_BUILD) --target $(FUZZ_TARGETS) -j $(JOBS)
	bash fuzz/run.sh $(ASAN_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

bench: build
	bash scripts/bench.sh $(BUILD)

format:
	git ls-files '*.cc' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD)
