#!/bin/sh
# The installed package works for a user: `cmake --install` into a fresh
# prefix, then a small instrumented program is built against the installed
# copy through pkg-config and through find_package(ringtrace), run with
# RINGTRACE_OUTPUT, and its trace read back with babeltrace2. One case
# each (tests/cases.sh; the package is installed once per run).
#   usage: test_install.sh BUILD_DIR [CASE...] | --list
set -eu
. "$(dirname "$0")/cases.sh"
build=$1
shift
tmp=$(mktemp -d /tmp/ringtrace-install-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
for tool in pkg-config babeltrace2 cc; do
	command -v "$tool" >/dev/null 2>&1 || { echo "test_install: $tool is not installed (make check installs it)" >&2; exit 1; }
done

# cmake --install into $tmp/prefix (once), and the program in $tmp/app.c;
# sets libdir.
install_package() {
	if [ ! -d "$tmp/prefix" ]; then
		cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
		cat > "$tmp/app.c" <<'C'
#define RINGTRACE_CREATE_EVENTS
#include <ringtrace/tracepoint.h>
RINGTRACE_EVENT(install_hello,
	RINGTRACE_PROTO(int i, const char *who),
	RINGTRACE_ARGS(i, who),
	RINGTRACE_FIELDS(ringtrace_integer(int32_t, i, i) ringtrace_string(who, who)),
	RINGTRACE_PRINT("i=%d who=%s"))
int main(void)
{
	for (int i = 0; i < 1000; i++)
		trace_install_hello(i, "installed");
	return 0;
}
C
	fi
	libdir=$(ls -d "$tmp"/prefix/lib*/pkgconfig | head -1)
	libdir=${libdir%/pkgconfig}
}

check_trace() {
	n=$(babeltrace2 "$1" | grep -c 'install_hello: .*who = "installed"' || true)
	if [ "$n" != 1000 ]; then
		echo "test_install: $2: expected 1000 events in $1, babeltrace2 read $n" >&2
		exit 1
	fi
	echo "test_install: $2: built against the installed copy, 1000 events recorded and read"
}

# 1. pkg-config
install_pkg_config_builds_a_program_that_records() { # case
	install_package
	PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --exists ringtrace
	cc -Wall -Wextra -Werror "$tmp/app.c" -o "$tmp/app-pc" \
		$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs ringtrace) \
		-Wl,-rpath,"$libdir"
	RINGTRACE_OUTPUT="$tmp/trace-pc" "$tmp/app-pc"
	check_trace "$tmp/trace-pc" pkg-config
}

# 2. find_package
install_find_package_builds_a_program_that_records() { # case
	install_package
	mkdir "$tmp/proj"
	cp "$tmp/app.c" "$tmp/proj/app.c"
	cat > "$tmp/proj/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.16)
project(app C)
find_package(ringtrace 0.1 REQUIRED)
add_executable(app app.c)
target_link_libraries(app PRIVATE ringtrace::ringtrace_static)
CM
	cmake -S "$tmp/proj" -B "$tmp/proj/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
	cmake --build "$tmp/proj/build" >/dev/null
	RINGTRACE_OUTPUT="$tmp/trace-cmake" "$tmp/proj/build/app"
	check_trace "$tmp/trace-cmake" find_package
}

rt_run_cases "$@"
