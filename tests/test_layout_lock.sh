#!/bin/sh
# The version lock of the inline code (ringtrace/static/layout.h): a
# program compiled against the headers links with the library built from
# them and refers to its symbols by their versioned names; one compiled
# against a copy of the headers with another RINGTRACE_LAYOUT_VERSION fails
# to link, with the static library and with the shared one, and the linker
# names a symbol of that other layout. One case each (tests/cases.sh).
#   usage: test_layout_lock.sh BUILD_DIR CC [CASE...] | --list
set -eu
. "$(dirname "$0")/cases.sh"
build=$1 cc=$2
shift 2
src=$(cd "$(dirname "$0")/.." && pwd)
lib=$build/lib
tmp=$(mktemp -d /tmp/ringtrace-layout-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
layout_h=ringtrace/static/layout.h
version=$(sed -n 's/^#define RINGTRACE_LAYOUT_VERSION \([0-9][0-9]*\)$/\1/p' "$src/include/$layout_h")
[ -n "$version" ] || {
	echo "test_layout_lock: no '#define RINGTRACE_LAYOUT_VERSION N' line in include/$layout_h" >&2
	exit 1
}
other=$((version + 1))

fail() {
	echo "test_layout_lock: $*" >&2
	exit 1
}

# compile INCLUDE_DIR OBJECT: the program, against those headers.
compile() {
	"$cc" -std=gnu11 -Wall -Wextra -Werror -pthread -I"$1" \
		-c "$src/tests/layout_lock_prog.c" -o "$2" ||
		fail "layout_lock_prog.c does not compile against $1"
}

# A copy of the headers with layout version $other, and the program
# compiled against it: $tmp/other.o.
compile_other() {
	cp -R "$src/include" "$tmp/other"
	sed -i "s/^#define RINGTRACE_LAYOUT_VERSION $version\$/#define RINGTRACE_LAYOUT_VERSION $other/" \
		"$tmp/other/$layout_h"
	grep -q "^#define RINGTRACE_LAYOUT_VERSION $other\$" "$tmp/other/$layout_h" ||
		fail "could not change the layout version in the copy of $layout_h"
	compile "$tmp/other" "$tmp/other.o"
}

# expect_link_failure WHAT LINK-ARGS...: linking $tmp/other.o must fail, and
# the linker's message must name a symbol of layout $other.
expect_link_failure() {
	what=$1
	shift
	if "$cc" -pthread "$tmp/other.o" "$@" -o "$tmp/other-prog" >"$tmp/link.log" 2>&1; then
		fail "a program built against layout $other linked with the $what library of layout $version"
	fi
	grep -q "undefined reference to .ringtrace_[a-z_]*_layout$other'" "$tmp/link.log" ||
		fail "the link with the $what library failed, but names no symbol of layout $other:
$(cat "$tmp/link.log")"
	echo "test_layout_lock: linking with the $what library failed as it must:"
	grep -m 3 "undefined reference" "$tmp/link.log"
}

layout_lock_program_of_this_layout_links_and_runs() { # case
	compile "$src/include" "$tmp/this.o"
	"$cc" -pthread "$tmp/this.o" "$lib/libringtrace.a" -o "$tmp/this-static" ||
		fail "the program does not link with $lib/libringtrace.a"
	"$cc" -pthread "$tmp/this.o" -L"$lib" -lringtrace -Wl,-rpath,"$lib" -o "$tmp/this-shared" ||
		fail "the program does not link with $lib/libringtrace.so"
	"$tmp/this-static" || fail "the statically linked program failed"
	"$tmp/this-shared" || fail "the dynamically linked program failed"
}

# Every library symbol the inline code refers to is an internal one (its
# C name ends in "_", or is the printf pseudo-event) or the public API;
# the internal ones must all carry the layout version, and the main ones
# must be there (else the cases below would prove nothing).
layout_lock_inline_code_refers_to_internals_by_versioned_names() { # case
	compile "$src/include" "$tmp/this.o"
	nm -u "$tmp/this.o" | awk '{ print $NF }' | grep '^ringtrace_' >"$tmp/undef" || true
	if grep -E '_$|^ringtrace_event_ringtrace_printf$' "$tmp/undef"; then
		fail "the inline code refers to the internal symbols above without the layout version"
	fi
	for s in ringtrace_runtime_ ringtrace_thr_ ringtrace_wtls_ ringtrace_rb_reserve_general_ \
		ringtrace_events_cookie_ ringtrace_printf_record_ ringtrace_event_ringtrace_printf; do
		grep -qx "${s}_layout$version" "$tmp/undef" ||
			fail "layout_lock_prog.o does not refer to ${s}_layout$version; it refers to:
$(cat "$tmp/undef")"
	done
}

layout_lock_program_of_another_layout_fails_to_link_statically() { # case
	compile_other
	expect_link_failure static "$lib/libringtrace.a"
}

layout_lock_program_of_another_layout_fails_to_link_dynamically() { # case
	compile_other
	expect_link_failure shared -L"$lib" -lringtrace -Wl,-rpath,"$lib"
}

rt_run_cases "$@"
