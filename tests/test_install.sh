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

# 3. a third-party reader: the installed reader library alone (pkg-config
# ringtrace-read and find_package's ringtrace::ringtrace_read) reads the
# trace of case 1's program; it holds none of the tracing runtime, so run
# with RINGTRACE_OUTPUT set it records nothing of its own.
install_reader_library_reads_a_trace_without_the_runtime() { # case
	install_package
	[ -d "$tmp/trace-pc" ] || install_pkg_config_builds_a_program_that_records
	cat > "$tmp/reader.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <ringtrace/trace.h>
int main(int argc, char **argv)
{
	ringtrace_trace *t;
	if (argc != 2 || ringtrace_trace_open(argv[1], NULL, NULL, &t) < 0) {
		fprintf(stderr, "reader: %s\n", ringtrace_trace_open_error());
		return 1;
	}
	struct ringtrace_trace_record r;
	char line[512];
	unsigned n = 0;
	while (ringtrace_trace_next(t, &r) == 1)
		if (ringtrace_trace_format_line(t, &r, 0, line, sizeof(line)) > 0 &&
		    strstr(line, "install_hello: i=") && strstr(line, "who=installed"))
			n++;
	ringtrace_trace_close(t);
	printf("%u\n", n);
	return 0;
}
C
	PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --exists ringtrace-read
	cc -Wall -Wextra -Werror "$tmp/reader.c" -o "$tmp/reader-pc" \
		$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs ringtrace-read)
	mkdir -p "$tmp/rproj"
	cp "$tmp/reader.c" "$tmp/rproj/reader.c"
	cat > "$tmp/rproj/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.16)
project(reader C)
find_package(ringtrace 0.1 REQUIRED)
add_executable(reader reader.c)
target_link_libraries(reader PRIVATE ringtrace::ringtrace_read)
CM
	cmake -S "$tmp/rproj" -B "$tmp/rproj/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
	cmake --build "$tmp/rproj/build" >/dev/null
	for r in "$tmp/reader-pc" "$tmp/rproj/build/reader"; do
		n=$(RINGTRACE_OUTPUT="$tmp/reader-self" "$r" "$tmp/trace-pc")
		[ "$n" = 1000 ] || { echo "test_install: $r read $n events of install_hello, not 1000" >&2; exit 1; }
		[ ! -e "$tmp/reader-self" ] || { echo "test_install: $r traced itself" >&2; exit 1; }
		if nm "$r" | grep -q "ringtrace_session_\|ringtrace_event_register\|ringtrace_wtls_"; then
			echo "test_install: $r holds tracing runtime symbols" >&2
			exit 1
		fi
	done
	echo "test_install: the reader library alone read the 1000 events (pkg-config and find_package)"
}

# 4. the license travels with the package: the LICENSE file in the
# package's doc folder, a License field in both pkg-config files (which
# pkg-config still reads), and ringtrace_LICENSE from find_package.
install_names_the_mit_license_in_every_package_file() { # case
	install_package
	doc=$tmp/prefix/share/doc/ringtrace/LICENSE
	grep -q '^MIT License$' "$doc" || { echo "test_install: $doc is missing or not the MIT license" >&2; exit 1; }
	for pc in ringtrace ringtrace-read; do
		grep -q '^License: MIT$' "$libdir/pkgconfig/$pc.pc" ||
			{ echo "test_install: $libdir/pkgconfig/$pc.pc has no 'License: MIT' line" >&2; exit 1; }
		PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --validate "$pc"
	done
	mkdir -p "$tmp/lproj"
	cat > "$tmp/lproj/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.16)
project(lic C)
find_package(ringtrace 0.1 REQUIRED)
message(STATUS "ringtrace license: ${ringtrace_LICENSE}")
CM
	lic=$(cmake -S "$tmp/lproj" -B "$tmp/lproj/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" | sed -n 's/^-- ringtrace license: //p')
	[ "$lic" = MIT ] || { echo "test_install: find_package(ringtrace) set ringtrace_LICENSE to '$lic', not MIT" >&2; exit 1; }
	echo "test_install: LICENSE installed, License: MIT in both .pc files, ringtrace_LICENSE=MIT"
}

rt_run_cases "$@"
