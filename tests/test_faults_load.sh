#!/bin/sh
# `ringtrace load` under failed calls (a fault-injection build:
# src/base/fault.h, tests/faults.sh): a small trace of test_fleet_prog
# (slices, counters, args, printf records) loaded into a server of the
# test's own (tests/clickhouse.sh), each time into a fresh database made by
# --create, with every counted allocation (two cases: the odd and the even
# calls) and every counted file call (open, write, socket, ...) failed in
# turn. For every N: no crash, hang or sanitizer report (leaks included);
# a failure says what failed and leaves no load marked complete; a success
# prints what the run without a fault printed and its tables hold the
# trace's rows with a complete `loads` row. (libcurl's and SQLite's own
# calls are not counted: only ringtrace's.)
# Each is a case (tests/cases.sh).
#   usage: test_faults_load.sh BIN_DIR [CASE...] | --list
set -eu
export LC_ALL=C
. "$(dirname "$0")/cases.sh"
. "$(dirname "$0")/faults.sh"
. "$(dirname "$0")/clickhouse.sh"
bin=$1
shift
rt="$bin/ringtrace"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ringtrace-faults-load-XXXXXX")
chmod 755 "$tmp"
CH_AT_EXIT="rm -rf '$tmp'"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_faults_load: ${rt_c:-}: $*" >&2; exit 1; }

# The server, the trace, its slice count as ringtrace query has it, and
# $tmp/load: the command the loop runs (each run a database of its own,
# its name left in $tmp/db).
setup() {
	ch_start 1
	"$rt" record -q -o "$tmp/t" -- "$bin/test_fleet_prog" 3 >/dev/null ||
		fail "record of test_fleet_prog failed"
	slices=$("$rt" query --format tsv "$tmp/t" "SELECT count(*) FROM slice" | tail -n 1)
	[ "$slices" -gt 0 ] || fail "the trace has no slice"
	cat >"$tmp/load" <<EOS
#!/bin/sh
db=d\$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
echo "\$db" >"$tmp/db"
exec "$rt" load -q --create --database "\$db" --clickhouse "$(ch_url 1)" \
	--password-file "$CH_PASSWORD_FILE" "$tmp/t"
EOS
	chmod +x "$tmp/load"
}

# The loop's check (N, status): a success loaded every slice with its
# load complete; a failure left no complete load (the database may be
# missing: --create's own statement may be what failed).
check_load() {
	db=$(cat "$tmp/db")
	done_=$(ch_sql 1 "SELECT count() FROM system.tables WHERE database = '$db' AND name = 'loads'")
	complete=0
	[ "$done_" = 0 ] ||
		complete=$(ch_sql 1 "SELECT count() FROM $db.loads FINAL WHERE state = 'complete'")
	if [ "$2" = 0 ]; then
		[ "$complete" = 1 ] || { echo "call $1: loaded, but $complete complete loads" >&2; return 1; }
		n=$(ch_sql 1 "SELECT count() FROM $db.slice")
		[ "$n" = "$slices" ] || { echo "call $1: $n slices loaded of $slices" >&2; return 1; }
	else
		[ "$complete" = 0 ] || { echo "call $1: failed, but its load is complete" >&2; return 1; }
	fi
	ch_sql 1 "DROP DATABASE IF EXISTS $db" >/dev/null
}

fault_load_each_file_call_failed() { # case
	setup
	RINGTRACE_FAULT_ONLY=ringtrace rt_fault_loop file 200 check_load "$tmp/load"
}

fault_load_each_odd_alloc_call_failed() { # case
	setup
	RINGTRACE_FAULT_ONLY=ringtrace RT_FAULT_FIRST=1 RT_FAULT_STEP=2 \
		rt_fault_loop alloc 2000 check_load "$tmp/load"
}

fault_load_each_even_alloc_call_failed() { # case
	setup
	RINGTRACE_FAULT_ONLY=ringtrace RT_FAULT_FIRST=2 RT_FAULT_STEP=2 \
		rt_fault_loop alloc 2000 check_load "$tmp/load"
}

rt_run_cases "$@"
