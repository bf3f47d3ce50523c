# Quick start:
#   make demo    build, then run the demo (an instrumented program recorded and
#                read back) and the ring-buffer benchmark
#   make check   every test: normal build (gcc), ASan+UBSan (gcc), TSan (clang)
#
# Everything is driven through CMake; build folders: build/, build-asan/,
# build-tsan/.

JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CTEST_FLAGS ?= --output-on-failure --no-tests=error

.PHONY: all build demo check check-normal check-asan check-tsan deps clean

all: build

build:
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build build -j$(JOBS)

demo: build
	@echo "== ringtrace-demo: 4 instrumented worker threads recorded for 1 s, read back and checked"
	./build/bin/ringtrace-demo --seconds 1 --threads 4 --lines 20
	@echo "== ring buffer benchmark: no reader, reader by pages, reader by events, overwrite mode"
	./build/bin/ringtrace-bench rb --seconds 1 --reader none
	./build/bin/ringtrace-bench rb --seconds 1 --reader page
	./build/bin/ringtrace-bench rb --seconds 1 --reader event
	./build/bin/ringtrace-bench rb --seconds 1 --reader page --mode overwrite

# Installs the compilers and tools the tests need when they are missing
# (Debian). A check is never skipped for lack of a tool.
deps:
	@sh scripts/install-deps.sh

check: deps check-normal check-asan check-tsan
	@echo "== all test builds passed (normal, asan+ubsan, tsan)"

check-normal:
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++
	cmake --build build -j$(JOBS)
	ctest --test-dir build $(CTEST_FLAGS)

check-asan:
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DRINGTRACE_SANITIZE=address -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++
	cmake --build build-asan -j$(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		ctest --test-dir build-asan $(CTEST_FLAGS)

check-tsan:
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRINGTRACE_SANITIZE=thread -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
	cmake --build build-tsan -j$(JOBS)
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
		ctest --test-dir build-tsan $(CTEST_FLAGS)

clean:
	rm -rf build build-asan build-tsan
