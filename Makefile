# silt — top-level entry points. `make test` and `make run` are the quick start.
#
#   make            optimised build of ./build/silt
#   make test       install missing Debian packages, build, run every test with a summary
#   make unit       build and run only the unit tests (the fast loop)
#   make asan       unit, broker and cluster tests under AddressSanitizer + UndefinedBehaviorSanitizer
#   make tsan       broker, unit and cluster tests under ThreadSanitizer (the three at once, each)
#   make fuzz       build the libFuzzer targets (clang) and run each for FUZZ_SECONDS (60)
#   make run        start a broker on 127.0.0.1:9092 over ./silt-data
#   make bench      run the benchmarks in bench/ (installs their peers first)
#   make fault      the fault suite's long cases (tests/fault/README.md), a minute each
#   make install    install the binary, man pages and completions under $(PREFIX)

BUILD      ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
FUZZ_BUILD ?= $(ASAN_BUILD)
FUZZ_SECONDS ?= 60
PREFIX     ?= /usr/local
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
# Tests run two per core: most of their time is spent waiting (brokers starting, elections,
# clients' timeouts): at one per core the suite kept a third of two cores busy.
TEST_JOBS  ?= $(shell echo $$(( 2 * $$(nproc 2>/dev/null || echo 2) )))
CMAKE_GEN  := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")

.PHONY: all deps build test unit asan tsan fuzz fuzz-build run bench bench-deps install clean \
	format completions fault

all: build

deps:
	@sh scripts/deps.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Release

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

unit: build
	$(BUILD)/tests/silt_unit_tests

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(TEST_JOBS)

# The sanitizer builds: Debug (assertions on), the library at -O1 so the tests run at a useful
# speed (the tests' own files at -O0, tests/CMakeLists.txt), line tables only (-g1: a report
# still names each frame's file and line). ASan + UBSan with clang, whose build of the same files
# took 0.6 of gcc's time, and which the fuzzers need anyway; TSan with gcc, whose runtime is a
# shared library (clang's static one defines operator new, which tests/protocol/wire_test.cc
# replaces to measure allocations) and builds as fast as clang's.
SAN_PKGS   := clang libclang-rt-14-dev
SAN_CMAKE  := $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g1 -O1"
ASAN_ENV   := ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# tests/tsan.supp lists the reports known to be benign, each with its reason.
TSAN_ENV   := TSAN_OPTIONS="suppressions=$(CURDIR)/tests/tsan.supp halt_on_error=1 second_deadlock_stack=1"

# The ASan build also holds the libFuzzer targets (make fuzz): one build under ASan for both.
ASAN_CMAKE := $(SAN_CMAKE) -DCMAKE_CXX_COMPILER=clang++ -DSILT_SANITIZE=address -DSILT_FUZZ=ON

asan:
	@SILT_EXTRA_PKGS="$(SAN_PKGS)" sh scripts/deps.sh
	cmake -S . -B $(ASAN_BUILD) $(ASAN_CMAKE)
	cmake --build $(ASAN_BUILD) -j $(JOBS) --target silt_unit_tests silt_broker_tests silt_cluster_tests
	$(ASAN_ENV) sh scripts/run_parallel.sh \
		"$(ASAN_BUILD)/tests/silt_unit_tests --no-version --duration=true" \
		"$(ASAN_BUILD)/tests/silt_broker_tests --no-version --duration=true" \
		"$(ASAN_BUILD)/tests/silt_cluster_tests --no-version --duration=true"

tsan: deps
	cmake -S . -B $(TSAN_BUILD) $(SAN_CMAKE) -DSILT_SANITIZE=thread
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target silt_broker_tests silt_unit_tests silt_cluster_tests
	$(TSAN_ENV) sh scripts/run_parallel.sh "$(TSAN_BUILD)/tests/silt_broker_tests --no-version" \
		"$(TSAN_BUILD)/tests/silt_unit_tests --no-version" \
		"$(TSAN_BUILD)/tests/silt_cluster_tests --no-version"

# libFuzzer needs clang and its runtime; scripts/deps.sh installs them when missing.
fuzz-build:
	@SILT_EXTRA_PKGS="$(SAN_PKGS)" sh scripts/deps.sh
	cmake -S . -B $(FUZZ_BUILD) $(ASAN_CMAKE) >/dev/null
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target silt_fuzzers

fuzz:
	bash scripts/fuzz.sh -s $(FUZZ_SECONDS)

run: build
	sh scripts/run.sh $(BUILD)/silt

# The benchmarks' peers and tools; librdkafka-dev builds bench/latency_bench and
# bench/consume_bench (librdkafka clients). None of these is needed by `make test`.
bench-deps: deps
	@SILT_EXTRA_PKGS="hyperfine redis-server redis-tools fio time lz4 zstd librdkafka-dev" sh scripts/deps.sh

# Configured again after bench-deps so that CMake finds librdkafka if it was just installed.
bench: bench-deps build
	cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(BUILD) -j $(JOBS)
	sh bench/run.sh $(BUILD)

# The fault suite's long cases: three nodes behind the fault proxy, a minute of load per case
# (the short forms run in `make test`).
fault: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target silt silt_fault_proxy
	sh scripts/fault.sh $(BUILD)

completions: build
	sh scripts/gen-completions.sh $(BUILD)/silt

install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man5
	install -m 755 $(BUILD)/silt $(DESTDIR)$(PREFIX)/bin/silt
	install -m 644 man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 man/*.5 $(DESTDIR)$(PREFIX)/share/man/man5/
	install -d $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	install -m 644 completions/silt.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/silt

format:
	clang-format -i $$(git ls-files '*.cc' '*.h')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD)
