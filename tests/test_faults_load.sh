#!/bin/sh
# `ringtrace load` under failed calls (a fault-injection build:
# src/base/fault.h, tests/faults.sh): a small trace of test_fleet_prog
# (slices, counters, args, printf records) loaded with --create into a
# server of the test's own (tests/clickhouse.sh), with every counted
# allocation (two cases: the odd and the even calls) and every counted file
# call (open, write, socket, ...) failed in turn. For every N: no crash,
# hang or sanitizer report (leaks included); a failure says what failed and
# leaves no load marked complete; a success prints what the run without a
# fault printed and its tables hold the trace's rows with a complete
# `loads` row. (libcurl's and SQLite's own calls are not counted: only
# ringtrace's.)
# All runs load into one database: the run without a fault creates it, and
# each later run's --create finds its tables there (the statements are
# still made and sent, so their calls are failed in turn too). Each run
# loads the trace under a name of its own (the directory renamed), which
# makes it a load of its own (the name is part of a load's identity), so
# that its `loads` rows and its slices are told apart from the others'.
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
# $tmp/load: the command the loop runs (each run renames the trace to
# $tmp/t<run>, its name left in $tmp/name).
setup() {
	ch_start 1
	"$rt" record -q -o "$tmp/t0" -- "$bin/test_fleet_prog" 3 >/dev/null ||
		fail "record of test_fleet_prog failed"
	slices=$("$rt" query --format tsv "$tmp/t0" "SELECT count(*) FROM slice" | tail -n 1)
	[ "$slices" -gt 0 ] || fail "the trace has no slice"
	echo t0 >"$tmp/name"
	cat >"$tmp/load" <<EOS
#!/bin/sh
set -e
old=\$(cat "$tmp/name")
new=t\$((\${old#t} + 1))
mv "$tmp/\$old" "$tmp/\$new"
echo "\$new" >"$tmp/name"
exec "$rt" load -q --create --database f --clickhouse "$(ch_url 1)" \
	--password-file "$CH_PASSWORD_FILE" "$tmp/\$new"
EOS
	chmod +x "$tmp/load"
}

# The loop's check (N, status): a success loaded every slice with its
# load complete; a failure left no complete load. (One query: the complete
# loads of this run's name, and the slices of those loads.)
check_load() {
	t=$(cat "$tmp/name")
	got=$(ch_sql 1 "SELECT (SELECT count() FROM f.loads FINAL WHERE trace = '$t' AND state = 'complete'),
		(SELECT count() FROM f.slice WHERE load_id IN
			(SELECT load_id FROM f.loads FINAL WHERE trace = '$t' AND state = 'complete'))") ||
		return 1
	complete=${got%%	*} n=${got#*	}
	if [ "$2" = 0 ]; then
		[ "$complete" = 1 ] || { echo "call $1: loaded, but $complete complete loads" >&2; return 1; }
		[ "$n" = "$slices" ] || { echo "call $1: $n slices loaded of $slices" >&2; return 1; }
	else
		[ "$complete" = 0 ] || { echo "call $1: failed, but its load is complete" >&2; return 1; }
	fi
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
