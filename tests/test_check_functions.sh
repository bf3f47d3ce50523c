#!/bin/sh
# scripts/check-functions on small C files written here: what it counts as
# a function's length, what it ignores, and what its allowlist marker
# takes. Each is a case (tests/cases.sh).
#   usage: test_check_functions.sh SOURCE_DIR [CASE...] | --list
set -eu
. "$(dirname "$0")/cases.sh"
src=$1
shift
tmp=$(mktemp -d /tmp/ringtrace-checkfn-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_check_functions: $*" >&2; exit 1; }

# body N: N lines of statements.
body() {
	awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) print "\tx++;" }'
}

# fn NAME N: a function whose braces enclose N lines (so N + 2 in all).
fn() {
	printf 'static int %s(int x)\n{\n' "$1"
	body "$2"
	printf '}\n'
}

# run ARGS...: the script's exit status in $rc, its stdout in $tmp/out.
run() {
	rc=0
	python3 "$src/scripts/check-functions" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
}

check_functions_fails_over_120_lines_brace_to_brace() { # case
	mkdir -p "$tmp/a"
	{ fn at_limit 118; echo; fn over 119; } >"$tmp/a/x.c"
	run "$tmp/a"
	[ "$rc" = 1 ] || fail "exit $rc, want 1: $(cat "$tmp/out" "$tmp/err")"
	[ "$(cat "$tmp/out")" = "$tmp/a/x.c:123 over 121" ] ||
		fail "want only 'x.c:123 over 121', got: $(cat "$tmp/out")"
}

check_functions_passes_at_the_limit() { # case
	mkdir -p "$tmp/b"
	fn at_limit 118 >"$tmp/b/x.c"
	run "$tmp/b"
	[ "$rc" = 0 ] || fail "exit $rc, want 0: $(cat "$tmp/out" "$tmp/err")"
}

check_functions_ignores_braces_in_comments_strings_and_directives() { # case
	mkdir -p "$tmp/c"
	{
		printf '/* {\n{\n */\n#define OPEN {\n'
		printf 'static const char *s(void)\n{\n\t// }\n\treturn "}}" "{";\n'
		printf "\tchar c = '}';\n"
		printf '#if X\n\tif (1) {\n#else\n\tif (2) {\n#endif\n\t}\n'
		body 108
		printf '}\n'
	} >"$tmp/c/x.c"
	run "$tmp/c"
	[ "$rc" = 0 ] || fail "exit $rc, want 0 (119 lines): $(cat "$tmp/out" "$tmp/err")"
	run --limit 100 "$tmp/c"
	grep -qx "$tmp/c/x.c:5 s 119" "$tmp/out" || fail "want 'x.c:5 s 119', got: $(cat "$tmp/out")"
}

check_functions_marker_allows_a_table_with_its_reason() { # case
	mkdir -p "$tmp/d"
	{ echo '/* check-functions: table -- one row per opcode */'; fn ops 200; } >"$tmp/d/x.c"
	run "$tmp/d"
	[ "$rc" = 0 ] || fail "exit $rc, want 0: $(cat "$tmp/out" "$tmp/err")"
	grep -qF "ops 202 (table, allowed)" "$tmp/out" || fail "not listed as allowed: $(cat "$tmp/out")"
}

check_functions_refuses_a_marker_without_a_reason() { # case
	mkdir -p "$tmp/e"
	{ echo '/* check-functions: table */'; fn ops 200; } >"$tmp/e/x.c"
	run "$tmp/e"
	[ "$rc" = 1 ] || fail "exit $rc, want 1: $(cat "$tmp/out" "$tmp/err")"
	grep -qF 'marker must read' "$tmp/out" || fail "no message on the marker: $(cat "$tmp/out")"
}

check_functions_refuses_a_marker_on_a_short_function() { # case
	mkdir -p "$tmp/f"
	{ echo '/* check-functions: generated -- by gen.py */'; fn small 3; } >"$tmp/f/x.c"
	run "$tmp/f"
	[ "$rc" = 1 ] || fail "exit $rc, want 1: $(cat "$tmp/out" "$tmp/err")"
	grep -qF 'within the limit' "$tmp/out" || fail "no message on the marker: $(cat "$tmp/out")"
}

check_functions_refuses_a_marker_away_from_a_function() { # case
	mkdir -p "$tmp/g"
	{ echo '/* check-functions: table -- nothing under it */'; echo; fn small 3; } >"$tmp/g/x.c"
	run "$tmp/g"
	[ "$rc" = 1 ] || fail "exit $rc, want 1: $(cat "$tmp/out" "$tmp/err")"
	grep -qF 'not on the line before a function' "$tmp/out" ||
		fail "no message on the marker: $(cat "$tmp/out")"
}

check_functions_info_folders_list_without_failing() { # case
	mkdir -p "$tmp/h/ok" "$tmp/h/info"
	fn small 3 >"$tmp/h/ok/x.c"
	fn long 150 >"$tmp/h/info/y.c"
	run --info "$tmp/h/info" "$tmp/h/ok"
	[ "$rc" = 0 ] || fail "exit $rc, want 0: $(cat "$tmp/out" "$tmp/err")"
	grep -qx "$tmp/h/info/y.c:1 long 152 (info)" "$tmp/out" || fail "not listed: $(cat "$tmp/out")"
}

rt_run_cases "$@"
