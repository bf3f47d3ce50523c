#!/bin/sh
# The reading commands under failed calls (a fault-injection build:
# src/base/fault.h, tests/faults.sh): report, stat, export, query
# (statements, and --db FILE), latency and recover are run once with every
# one of their counted calls (allocation, open, write, mmap...) failed in
# turn (RINGTRACE_FAULT=any:N), on a small collection with every feature
# the commands read: a program of three threads with ringtrace_printf
# records, and one whose writer dropped events (losses); latency on
# test_latency_prog's requests. For every N: no
# crash, hang or sanitizer report (leaks included), and either a failure
# that says what failed or the output of the run without a fault. The
# commands that write a file leave either the whole file or none, and no
# temporary file; a failed recover leaves a trace that report and
# babeltrace2 read, and a second recover completes it. Each is a case
# (tests/cases.sh).
#   usage: test_faults_read.sh BIN_DIR [CASE...] | --list
set -eu
. "$(dirname "$0")/cases.sh"
. "$(dirname "$0")/faults.sh"
bin=$1
shift
rt="$bin/ringtrace"
tmp=$(mktemp -d /tmp/ringtrace-faults-read-XXXXXX)
pools=""
trap 'rm -rf "$tmp"; for p in $pools; do rm -f "/dev/shm$p" "/dev/shm$p-w"; done' EXIT
command -v babeltrace2 >/dev/null 2>&1 || { echo "test_faults_read: babeltrace2 is not installed (make check installs it)" >&2; exit 1; }
fail() { echo "test_faults_read: $*" >&2; exit 1; }

# $tmp/c: a collection of two traces: the demo (three threads, printf
# records) and test_tail_drops_prog (events dropped), both small.
collection() {
	[ -d "$tmp/c" ] && return 0
	mkdir "$tmp/c"
	"$rt" record -q --buffer-size 256k --page-size 4k -o "$tmp/c/demo" -- \
		"$bin/ringtrace-demo" --seconds 0.02 --threads 3 >/dev/null || fail "record of the demo failed"
	"$rt" record -q --buffer-size 16k --page-size 4k -o "$tmp/c/td" -- \
		"$bin/test_tail_drops_prog" 10 >/dev/null || fail "record of test_tail_drops_prog failed"
	"$rt" stat "$tmp/c" >"$tmp/stat" || fail "stat of the collection failed"
	grep -q '^  ringtrace_printf  *[1-9]' "$tmp/stat" || fail "the demo's trace has no printf record"
	grep -q "^collection .* [1-9][0-9]* dropped" "$tmp/stat" || fail "the collection has no loss"
}

no_check() { :; }

faults_read_stat_every_call() { # case
	collection
	rt_fault_loop any 200 no_check "$rt" stat "$tmp/c"
	echo "stat: $RT_FAULT_N calls failed in turn"
}

faults_read_report_every_call() { # case
	collection
	rt_fault_loop any 200 no_check "$rt" report "$tmp/c"
	echo "report: $RT_FAULT_N calls failed in turn"
}

# (test_latency_prog: two threads, pairs by key and across threads, a
# start never stopped and a stop never started; a smaller schema than the
# demo's, so fewer calls)
faults_read_latency_every_call() { # case
	"$rt" record -q -o "$tmp/lt" -- "$bin/test_latency_prog" 1 >/dev/null || fail "record of test_latency_prog failed"
	rt_fault_loop any 400 no_check "$rt" latency "$tmp/lt" --from lt_start --to lt_stop --key req --by kind
	echo "latency: $RT_FAULT_N calls failed in turn"
}

# only_file STATUS FILE REF VALID: FILE as REF after a success; after a
# failure no FILE, or one that VALID accepts when a trace of the
# collection could not be opened (said: the others are still written);
# and nothing else beside it (no temporary file).
only_file() {
	if [ "$1" -eq 0 ]; then
		cmp -s "$2" "$3" || { echo "$2 differs from the run without a fault" >&2; return 1; }
	elif [ -e "$2" ]; then
		grep -q "^ringtrace[^:]*: $tmp/c/[a-z]*[:/]" "$RT_FAULT_ERR" ||
			{ echo "$2 left by a failed run that opened every trace" >&2; return 1; }
		"$4" "$2" || { echo "$2 left by a failed run is not whole" >&2; return 1; }
	fi
	left=$(ls -A "$(dirname "$2")" | grep -vx "$(basename "$2")" || true)
	[ -z "$left" ] || { echo "left beside $2: $left" >&2; return 1; }
}

json_whole() { python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$1"; }
db_whole() { [ "$(sqlite3 "$1" 'pragma integrity_check')" = ok ]; }

export_check() { only_file "$2" "$tmp/x/t.json" "$tmp/ref.json" json_whole; }

faults_read_export_json_every_call() { # case
	collection
	mkdir "$tmp/x"
	"$rt" export --format=json "$tmp/c" -o "$tmp/ref.json" || fail "export failed"
	# (each run starts with no FILE: the one before made it)
	export rt tmp
	rt_fault_loop any 200 export_check sh -c \
		'rm -f "$tmp/x/t.json"; exec "$rt" export --format=json "$tmp/c" -o "$tmp/x/t.json"'
	echo "export: $RT_FAULT_N calls failed in turn"
}

# a scan, a GROUP BY, a join of slice with thread and args, the stats
query_sql="select count(*), sum(dur), min(ts), max(ts) from slice;
select name, count(*) from slice group by name order by name;
select t.name, a.key, count(*), sum(a.int_value) from slice s join thread t using (utid)
  join args a on a.arg_set_id = s.arg_set_id where s.name = 'td_ev' group by 1, 2 order by 1, 2;
select name, idx, severity, source, value from stats where value <> 0 order by name, idx"

# (the longest loop: in two halves, odd and even N, run in parallel)
faults_read_query_statements_each_odd_call() { # case
	collection
	RT_FAULT_FIRST=1 RT_FAULT_STEP=2 rt_fault_loop any 1000 no_check "$rt" query "$tmp/c" "$query_sql"
	echo "query: calls 1, 3 .. $RT_FAULT_N failed in turn"
}

faults_read_query_statements_each_even_call() { # case
	collection
	RT_FAULT_FIRST=2 RT_FAULT_STEP=2 rt_fault_loop any 1000 no_check "$rt" query "$tmp/c" "$query_sql"
	echo "query: calls 2, 4 .. $RT_FAULT_N failed in turn"
}

db_check() {
	if [ "$2" -eq 0 ]; then
		sqlite3 "$tmp/d/t.db" 'select count(*) from slice' >"$tmp/d.count" 2>&1
		cmp -s "$tmp/d.count" "$tmp/ref.count" ||
			{ echo "the database's slice table differs" >&2; return 1; }
		only_file 0 "$tmp/d/t.db" "$tmp/d/t.db" db_whole
	else
		only_file "$2" "$tmp/d/t.db" /dev/null db_whole
	fi
}

faults_read_query_db_every_call() { # case
	collection
	command -v sqlite3 >/dev/null 2>&1 || fail "sqlite3 is not installed (make check installs it)"
	mkdir "$tmp/d"
	"$rt" query --db "$tmp/ref.db" "$tmp/c/td" || fail "query --db failed"
	sqlite3 "$tmp/ref.db" 'select count(*) from slice' >"$tmp/ref.count"
	export rt tmp
	rt_fault_loop any 1000 db_check sh -c 'rm -f "$tmp/d/t.db"; exec "$rt" query --db "$tmp/d/t.db" "$tmp/c/td"'
	echo "query --db: $RT_FAULT_N calls failed in turn"
}

# recover: a program killed while recording (tests/crash_prog.c) into
# $tmp/r with the pool $shm; each run works on a fresh copy of both
# ($tmp/w and $shm-w), as recover completes the one and removes the other.
recover_cmd='rm -rf "$tmp/w"; cp -a "$tmp/r" "$tmp/w"; cp "/dev/shm$shm" "/dev/shm$shm-w"
exec "$rt" recover "$shm-w" "$tmp/w"'

recover_check() {
	if [ "$2" -ne 0 ]; then
		# what was there before is still read by both readers, and a
		# second recover completes the trace
		"$rt" report --raw "$tmp/w" >/dev/null 2>"$tmp/w.err" ||
			{ cat "$tmp/w.err" >&2; echo "report cannot read the trace a failed recover left" >&2; return 1; }
		babeltrace2 "$tmp/w" >/dev/null 2>"$tmp/w.err" ||
			{ cat "$tmp/w.err" >&2; echo "babeltrace2 cannot read the trace a failed recover left" >&2; return 1; }
		[ -e "/dev/shm$shm-w" ] || cp "/dev/shm$shm" "/dev/shm$shm-w"
		"$rt" recover "$shm-w" "$tmp/w" 2>"$tmp/w.err" ||
			{ cat "$tmp/w.err" >&2; echo "a second recover after a failed one fails" >&2; return 1; }
	fi
	"$rt" report --raw "$tmp/w" >"$tmp/w.txt" || { echo "report of the recovered trace failed" >&2; return 1; }
	cmp -s "$tmp/w.txt" "$tmp/ref.txt" || { echo "the recovered trace differs from a recover without a fault" >&2; return 1; }
	babeltrace2 "$tmp/w" >/dev/null 2>&1 || { echo "babeltrace2 cannot read the recovered trace" >&2; return 1; }
	[ ! -e "/dev/shm$shm-w" ] || { echo "the pool was not removed" >&2; return 1; }
}

faults_read_recover_every_call() { # case
	shm="/ringtrace-test-faults-read-$$"
	pools="$shm"
	st=0
	RINGTRACE_OUTPUT="$tmp/r" RINGTRACE_SHM="$shm" "$bin/test_crash_prog" 2000 "$tmp/r" kill >"$tmp/r.out" 2>&1 || st=$?
	[ "$st" = 137 ] || fail "the crashing program exited $st"
	"$rt" report --raw "$tmp/r" >/dev/null || fail "report cannot read the trace before recover"
	babeltrace2 "$tmp/r" >/dev/null 2>&1 || fail "babeltrace2 cannot read the trace before recover"
	# the reference: a recover without a fault
	export shm tmp rt
	sh -c "$recover_cmd" 2>"$tmp/ref.err" || { cat "$tmp/ref.err" >&2; fail "recover failed"; }
	"$rt" report --raw "$tmp/w" >"$tmp/ref.txt"
	rt_fault_loop any 400 recover_check sh -c "$recover_cmd"
	echo "recover: $RT_FAULT_N calls failed in turn"
}

rt_run_cases "$@"
