# Quick start:
#   make demo    build, record the demo program with `ringtrace record`, print
#                `ringtrace stat` and the head of `ringtrace report`
#   make check   every test: normal build (gcc), ASan+UBSan (gcc), TSan (clang),
#                the fuzzers, and Release and MinSizeRel builds with gcc and
#                clang (warnings are errors in all of these: RINGTRACE_WERROR)
#
# Everything is driven through CMake; build folders: build/, build-asan/,
# build-tsan/.

JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CTEST_FLAGS ?= --output-on-failure --no-tests=error
# (each build's ctest output is kept in BUILD/ctest.log for the summary)

.PHONY: all build demo check check-format check-normal check-asan check-tsan check-fuzz check-release check-functions deps clean

all: build

build:
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build build -j$(JOBS)

demo: build
	@echo "== ringtrace record: 4 instrumented worker threads of ringtrace-demo, 1 s"
	rm -rf out/demo && mkdir -p out
	./build/bin/ringtrace record -o out/demo -- ./build/bin/ringtrace-demo --seconds 1 --threads 4
	@echo "== ringtrace stat out/demo"
	./build/bin/ringtrace stat out/demo
	@echo "== ringtrace report out/demo | head -20"
	./build/bin/ringtrace report out/demo | head -20
	@echo "== the same trace read by babeltrace2, the reference CTF reader (event count)"
	@command -v babeltrace2 >/dev/null && babeltrace2 out/demo 2>/dev/null | wc -l || echo "(babeltrace2 not installed: make deps)"
	@echo "== ring buffer benchmark (kernel ring_buffer_benchmark shape), reader by pages"
	./build/bin/ringtrace-bench rb --seconds 1 --reader page

# Installs the compilers and tools the tests need when they are missing
# (Debian). A check is never skipped for lack of a tool.
deps:
	@sh scripts/install-deps.sh

check: deps check-format check-normal check-asan check-tsan check-fuzz check-release
	@echo "== all test builds passed (normal, asan+ubsan, tsan), the fuzzer found nothing, release builds clean"
	@p=0; s=0; for d in build build-asan build-tsan; do \
		t=$$(ctest --test-dir $$d -N | sed -n 's/^Total Tests: //p'); \
		k=$$(grep -c '\*\*\*Skipped\|Not Run' $$d/ctest.log 2>/dev/null || true); \
		p=$$((p + t - k)); s=$$((s + k)); done; \
		echo "check: $$p passed, $$s skipped, 0 failed"

# The sources are laid out by clang-format (.clang-format); tests/ too.
FORMAT_FILES = $(shell git ls-files 'src/*.[ch]' 'include/*.h' 'tools/*.[ch]' 'bench/*.[ch]' \
	'examples/*.[ch]' 'tests/*.[ch]' 'tests/*.cpp' 2>/dev/null)
check-format:
	@clang-format --dry-run --Werror $(FORMAT_FILES)
	@echo "== clang-format: every source laid out by .clang-format"

# No function in src/, tools/ or include/ longer than 120 lines, tables and
# generated code aside (each marked and justified; scripts/check-functions
# says how); the long functions of tests/ and bench/ are listed, not failed.
check-functions:
	@python3 scripts/check-functions --info tests --info bench src tools include
	@echo "== check-functions: no function over 120 lines"

check-normal:
	cmake -S . -B build -DRINGTRACE_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++
	cmake --build build -j$(JOBS)
	ctest --test-dir build $(CTEST_FLAGS) --output-log build/ctest.log

check-asan:
	cmake -S . -B build-asan -DRINGTRACE_WERROR=ON -DCMAKE_BUILD_TYPE=Debug -DRINGTRACE_SANITIZE=address -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++
	cmake --build build-asan -j$(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		ctest --test-dir build-asan $(CTEST_FLAGS) --output-log build-asan/ctest.log

check-tsan:
	cmake -S . -B build-tsan -DRINGTRACE_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRINGTRACE_SANITIZE=thread -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
	cmake --build build-tsan -j$(JOBS)
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
		ctest --test-dir build-tsan $(CTEST_FLAGS) --output-log build-tsan/ctest.log

# The build types a packager uses, with both compilers, warning-free: built,
# not run (the tests above run the same code). The last (MinSizeRel, clang)
# is also the build without libtracefs and libtraceevent (RINGTRACE_KERNEL=OFF,
# as on a machine without them): its own tests run, what `record -k` says
# there and its layers.
RELEASE_TYPES ?= Release MinSizeRel
check-release:
	@set -e; for cc in gcc clang; do for bt in $(RELEASE_TYPES); do \
		cxx=$$([ $$cc = gcc ] && echo g++ || echo clang++); d=build-$$bt-$$cc; \
		k=$$([ $$cc-$$bt = clang-MinSizeRel ] && echo OFF || echo ON); \
		echo "== $$bt build with $$cc ($$d, kernel events $$k)"; \
		cmake -S . -B $$d -DRINGTRACE_WERROR=ON -DCMAKE_BUILD_TYPE=$$bt -DRINGTRACE_KERNEL=$$k \
			-DCMAKE_C_COMPILER=$$cc -DCMAKE_CXX_COMPILER=$$cxx >/dev/null; \
		cmake --build $$d -j$(JOBS) >/dev/null; \
		if [ $$k = OFF ]; then ctest --test-dir $$d $(CTEST_FLAGS) \
			-R '^(record_k_without_the_libraries_says_what_to_install|layers_point_one_way)$$'; fi; \
		done; done
	@echo "== Release and MinSizeRel build warning-free with gcc and clang (one without kernel events)"

# libFuzzer (clang, ASan+UBSan) on the trace reader's stream decoding, seeded
# with a real trace (FUZZ_SECONDS), on its metadata parser and formatter,
# each input within a time limit (FUZZ_META_SECONDS), on the filter-expression
# compiler and evaluator and the trigger-spec parser (FUZZ_FILTER_SECONDS),
# and on pools damaged in every part (FUZZ_POOL_SECONDS; tests/fuzz/fuzz_pool.c
# says what an input is; each input limited to 10 s).
FUZZ_SECONDS ?= 60
FUZZ_FILTER_SECONDS ?= 30
FUZZ_META_SECONDS ?= 30
FUZZ_POOL_SECONDS ?= 60
check-fuzz:
	cmake -S . -B build-fuzz -DRINGTRACE_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRINGTRACE_SANITIZE=address -DRINGTRACE_FUZZ=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
	cmake --build build-fuzz -j$(JOBS) --target fuzz_stream fuzz_metadata fuzz_filter fuzz_pool test_trace_gen
	rm -rf build-fuzz/seed-trace build-fuzz/corpus && mkdir -p build-fuzz/corpus
	./build-fuzz/bin/test_trace_gen build-fuzz/seed-trace 3000 2 >/dev/null
	cp build-fuzz/seed-trace/stream_* build-fuzz/corpus/
	RINGTRACE_FUZZ_TRACE=build-fuzz/seed-trace ./build-fuzz/bin/fuzz_stream build-fuzz/corpus \
		-max_total_time=$(FUZZ_SECONDS) -max_len=65536 -print_final_stats=1
	rm -rf build-fuzz/meta-corpus && mkdir -p build-fuzz/meta-corpus
	cp build-fuzz/seed-trace/metadata build-fuzz/meta-corpus/
	RINGTRACE_FUZZ_TRACE=build-fuzz/seed-trace ./build-fuzz/bin/fuzz_metadata build-fuzz/meta-corpus \
		-max_total_time=$(FUZZ_META_SECONDS) -timeout=10 -max_len=65536 -print_final_stats=1
	rm -rf build-fuzz/filter-corpus && mkdir -p build-fuzz/filter-corpus
	printf 'value & 1' > build-fuzz/filter-corpus/a
	printf 's32 < -5 && (name ~ "eth*" || !flag)' > build-fuzz/filter-corpus/b
	printf 'color == "RED" || f64 >= 1.5e3' > build-fuzz/filter-corpus/c
	printf 'fz_ev if c > 1 && s ~ "e*": enable_event:fz_ev:2' > build-fuzz/filter-corpus/d
	printf 'fz_*: traceoff' > build-fuzz/filter-corpus/e
	./build-fuzz/bin/fuzz_filter build-fuzz/filter-corpus -max_total_time=$(FUZZ_FILTER_SECONDS) \
		-max_len=512 -print_final_stats=1
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
