# Quick start:
#   make demo    install what the build needs (scripts/install-deps.sh build),
#                build, record the demo program with `ringtrace record`, print
#                `ringtrace stat` and the head of `ringtrace report`; as root,
#                record it again with the kernel's scheduling events (record
#                -k) and print `ringtrace sched` (scripts/demo.sh)
#   make check   every test: normal build (gcc), ASan+UBSan (gcc), TSan (clang),
#                the fuzzers, and Release and MinSizeRel builds with gcc and
#                clang (warnings are errors in all of these: RINGTRACE_WERROR);
#                each stage timed, the times printed at the end
#
# Everything is driven through CMake; build folders: build/, build-asan/,
# build-tsan/, build-fuzz/, build-<type>-<compiler>/.

JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# Tests run in parallel: many of them wait (for a program to start, a
# socket, a recorder's drain), so one more than the cores keeps the cores
# busy. Those that cannot share the machine say so in tests/CMakeLists.txt
# (RESOURCE_LOCK, RUN_SERIAL).
CTEST_JOBS ?= $(shell echo $$(($(JOBS) + 1)))
CTEST_FLAGS ?= --output-on-failure --no-tests=error -j$(CTEST_JOBS)
# (each build's ctest output is kept in BUILD/ctest.log for the summary)

# Each stage of make check through scripts/timed: its wall and CPU seconds
# go to STAGES, printed at the end.
STAGES ?= out/check-stages.txt
TIMED = sh scripts/timed $(STAGES)

# The normal build: the one `make build` and `make demo` use and the first
# that make check tests. Warnings are errors only where asked (WERROR=ON:
# make check, CI), so that a user's newer compiler cannot fail the demo;
# CI runs `make demo WERROR=ON`, so that make check finds build/ configured
# as it needs and builds only what the demo did not.
WERROR ?= OFF
NORMAL_CONFIG = -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++

.PHONY: all build demo check check-format check-normal check-asan check-tsan check-fuzz check-release check-functions deps deps-build clean

all: build

build:
	cmake -S . -B build -DRINGTRACE_WERROR=$(WERROR) $(NORMAL_CONFIG)
	cmake --build build -j$(JOBS)

# The demo builds the command, the demo program and the benchmark only.
demo: deps-build
	cmake -S . -B build -DRINGTRACE_WERROR=$(WERROR) $(NORMAL_CONFIG)
	cmake --build build -j$(JOBS) --target ringtrace_cli ringtrace-demo ringtrace-bench
	@sh scripts/demo.sh build

# Installs the compilers and tools the tests need when they are missing
# (Debian). A check is never skipped for lack of a tool.
deps:
	@sh scripts/install-deps.sh check
deps-build:
	@sh scripts/install-deps.sh build

# Each stage timed (scripts/timed), the times printed at the end and kept
# in $(STAGES). The stages run one after another: each uses both cores.
CHECK_STAGES = check-format check-functions check-normal check-asan check-tsan check-fuzz check-release
check:
	@mkdir -p $(dir $(STAGES)) && rm -f $(STAGES) && date +%s >$(STAGES).start
	@$(TIMED) deps $(MAKE) --no-print-directory deps
	@set -e; for s in $(CHECK_STAGES); do $(MAKE) --no-print-directory $$s; done
	@echo "== all test builds passed (normal, asan+ubsan, tsan), the fuzzers found nothing, release builds clean"
	@p=0; s=0; for d in build build-asan build-tsan; do \
		t=$$(ctest --test-dir $$d -N | sed -n 's/^Total Tests: //p'); \
		k=$$(grep -c '\*\*\*Skipped\|Not Run' $$d/ctest.log 2>/dev/null || true); \
		p=$$((p + t - k)); s=$$((s + k)); done; \
		echo "check: $$p passed, $$s skipped, 0 failed"
	@echo "== make check's stages (wall and CPU seconds, $(JOBS) cores; $(STAGES))"
	@sh scripts/timed --summary $(STAGES)
	@echo "make check: $$(($$(date +%s) - $$(cat $(STAGES).start))) s from start to end (the stages, their CMake configure steps and this summary)"

# The sources are laid out by clang-format (.clang-format); tests/ too.
FORMAT_FILES = $(shell git ls-files 'src/*.[ch]' 'include/*.h' 'tools/*.[ch]' 'bench/*.[ch]' \
	'examples/*.[ch]' 'tests/*.[ch]' 'tests/*.cpp' 2>/dev/null)
check-format:
	@$(TIMED) format clang-format --dry-run --Werror $(FORMAT_FILES)
	@echo "== clang-format: every source laid out by .clang-format"

# No function in src/, tools/, include/, tests/ or bench/ longer than 120
# lines, tables and generated code aside (each marked and justified;
# scripts/check-functions says how).
check-functions:
	@$(TIMED) functions python3 scripts/check-functions src tools include tests bench
	@echo "== check-functions: no function over 120 lines"

check-normal:
	cmake -S . -B build -DRINGTRACE_WERROR=ON $(NORMAL_CONFIG)
	$(TIMED) normal-build cmake --build build -j$(JOBS)
	$(TIMED) normal-tests ctest --test-dir build $(CTEST_FLAGS) --output-log build/ctest.log

# The sanitizer builds build what their tests run: not the benchmarks
# (RINGTRACE_BENCH=OFF), which the normal and release builds compile.
check-asan:
	cmake -S . -B build-asan -DRINGTRACE_WERROR=ON -DCMAKE_BUILD_TYPE=Debug -DRINGTRACE_SANITIZE=address -DRINGTRACE_FAULT_INJECTION=ON -DRINGTRACE_BENCH=OFF -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++
	$(TIMED) asan-build cmake --build build-asan -j$(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		$(TIMED) asan-tests ctest --test-dir build-asan $(CTEST_FLAGS) --output-log build-asan/ctest.log

# (TSan makes every program it built wait a second at its exit, so that
# threads still running meet their races: a tenth of it here, where the
# tests run many short programs)
check-tsan:
	cmake -S . -B build-tsan -DRINGTRACE_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRINGTRACE_SANITIZE=thread -DRINGTRACE_BENCH=OFF -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
	$(TIMED) tsan-build cmake --build build-tsan -j$(JOBS)
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:atexit_sleep_ms=100 \
		$(TIMED) tsan-tests ctest --test-dir build-tsan $(CTEST_FLAGS) --output-log build-tsan/ctest.log

# The build types a packager uses, warning-free with both compilers: every
# target built (the tests above run the same code), both types with each
# compiler, since some warnings come from the optimizers (gcc's
# maybe-uninitialized, stringop-*), which -O3 and -Os run differently.
# RELEASE_NO_KERNEL is also the build without libtracefs and libtraceevent
# (RINGTRACE_KERNEL=OFF, as on a machine without them; clang's TSan build
# compiles the kernel events layer): its own tests run there, what
# `record -k` says and its layers.
RELEASE_BUILDS ?= Release-gcc MinSizeRel-gcc Release-clang MinSizeRel-clang
RELEASE_NO_KERNEL ?= Release-clang
check-release:
	@set -e; for b in $(RELEASE_BUILDS); do \
		bt=$${b%-*} cc=$${b##*-}; \
		cxx=$$([ $$cc = gcc ] && echo g++ || echo clang++); d=build-$$bt-$$cc; \
		k=$$([ $$b = $(RELEASE_NO_KERNEL) ] && echo OFF || echo ON); \
		echo "== $$bt build with $$cc ($$d, kernel events $$k)"; \
		cmake -S . -B $$d -DRINGTRACE_WERROR=ON -DCMAKE_BUILD_TYPE=$$bt -DRINGTRACE_KERNEL=$$k \
			-DCMAKE_C_COMPILER=$$cc -DCMAKE_CXX_COMPILER=$$cxx >/dev/null; \
		$(TIMED) release-$$bt-$$cc cmake --build $$d -j$(JOBS) >/dev/null; \
		if [ $$k = OFF ]; then ctest --test-dir $$d $(CTEST_FLAGS) \
			-R '^(record_k_without_the_libraries_says_what_to_install|layers_point_one_way)$$'; fi; \
		done
	@echo "== $(RELEASE_BUILDS): warning-free ($(RELEASE_NO_KERNEL) without kernel events)"

# libFuzzer (clang, ASan+UBSan) on the trace reader's stream decoding, seeded
# with a real trace (FUZZ_SECONDS), on its metadata parser and formatter,
# each input within a time limit (FUZZ_META_SECONDS), on the filter-expression
# compiler and evaluator and the trigger-spec parser (FUZZ_FILTER_SECONDS),
# and on pools damaged in every part (FUZZ_POOL_SECONDS; tests/fuzz/fuzz_pool.c
# says what an input is; each input limited to 10 s). Each fuzzer is one
# process on one core: two run at a time (FUZZ_JOBS, the cores), each for
# its whole time, paired so that a pair ends together (stream with pool,
# metadata with filter); each one's output is printed when it ends.
FUZZ_SECONDS ?= 60
FUZZ_FILTER_SECONDS ?= 30
FUZZ_META_SECONDS ?= 30
FUZZ_POOL_SECONDS ?= 60
FUZZ_JOBS ?= $(if $(filter 1,$(JOBS)),1,2)
FUZZ_RUNS = fuzz-run-stream fuzz-run-pool fuzz-run-metadata fuzz-run-filter
.PHONY: fuzz-build $(FUZZ_RUNS)
check-fuzz:
	@$(TIMED) fuzz-build $(MAKE) --no-print-directory fuzz-build
	@$(TIMED) fuzz-run $(MAKE) --no-print-directory -j$(FUZZ_JOBS) --output-sync=target $(FUZZ_RUNS)

fuzz-build:
	cmake -S . -B build-fuzz -DRINGTRACE_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRINGTRACE_SANITIZE=address -DRINGTRACE_FUZZ=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
	cmake --build build-fuzz -j$(JOBS) --target fuzz_stream fuzz_metadata fuzz_filter fuzz_pool test_trace_gen
	rm -rf build-fuzz/seed-trace
	./build-fuzz/bin/test_trace_gen build-fuzz/seed-trace 3000 2 >/dev/null

fuzz-run-stream:
	rm -rf build-fuzz/corpus && mkdir -p build-fuzz/corpus
	cp build-fuzz/seed-trace/stream_* build-fuzz/corpus/
	RINGTRACE_FUZZ_TRACE=build-fuzz/seed-trace ./build-fuzz/bin/fuzz_stream build-fuzz/corpus \
		-max_total_time=$(FUZZ_SECONDS) -max_len=65536 -print_final_stats=1

fuzz-run-metadata:
	rm -rf build-fuzz/meta-corpus && mkdir -p build-fuzz/meta-corpus
	cp build-fuzz/seed-trace/metadata build-fuzz/meta-corpus/
	RINGTRACE_FUZZ_TRACE=build-fuzz/seed-trace ./build-fuzz/bin/fuzz_metadata build-fuzz/meta-corpus \
		-max_total_time=$(FUZZ_META_SECONDS) -timeout=10 -max_len=65536 -print_final_stats=1

fuzz-run-filter:
	rm -rf build-fuzz/filter-corpus && mkdir -p build-fuzz/filter-corpus
	printf 'value & 1' > build-fuzz/filter-corpus/a
	printf 's32 < -5 && (name ~ "eth*" || !flag)' > build-fuzz/filter-corpus/b
	printf 'color == "RED" || f64 >= 1.5e3' > build-fuzz/filter-corpus/c
	printf 'fz_ev if c > 1 && s ~ "e*": enable_event:fz_ev:2' > build-fuzz/filter-corpus/d
	printf 'fz_*: traceoff' > build-fuzz/filter-corpus/e
	./build-fuzz/bin/fuzz_filter build-fuzz/filter-corpus -max_total_time=$(FUZZ_FILTER_SECONDS) \
		-max_len=512 -print_final_stats=1

fuzz-run-pool:
	rm -rf build-fuzz/pool-corpus && mkdir -p build-fuzz/pool-corpus && cd build-fuzz/pool-corpus && \
	printf '' > clean && printf '\004' > live-clean && \
	printf '\000\002\030\000\000\003\377\377\000\000' > cell-index && \
	printf '\000\002\020\000\000\007\120\000\000\000\000\000\000\000' > cell-seq-ahead && \
	printf '\001\000\040\000\000' > shrunk-after-attach && \
	printf '\002\000\020\000\000' > shrunk-before-attach && \
	printf '\000\000\020\000\000\003\377\377\377\177' > npages && \
	printf '\000\000\200\000\000\007\377\000\000\000\001\000\000\000' > free-head && \
	printf '\000\001\014\000\000\003\177\000\000\000' > slot-page && \
	printf '\000\005\000\000\000\017\245\245\245\245\245\245\245\245\245\245\245\245\245\245\245\245' > page-header && \
	printf '\004\002\030\000\000\003\377\377\000\000' > live-cell-index && \
	printf '\004\002\000\000\000\007\050\000\000\000\000\000\000\000' > live-cell-seq
	./build-fuzz/bin/fuzz_pool build-fuzz/pool-corpus -max_total_time=$(FUZZ_POOL_SECONDS) \
		-timeout=10 -max_len=512 -close_fd_mask=2 -print_final_stats=1

clean:
	rm -rf build build-asan build-tsan build-fuzz build-Release-* build-MinSizeRel-*
