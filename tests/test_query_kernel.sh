#!/bin/sh
# The kernel trace's tables of `ringtrace query` (docs/query.md:
# ftrace_event, sched_slice, thread_state) on one recording of the sleep
# program with the scheduling events, pinned to CPU 0 (on this VM the
# kernel records no sched_switch out of CPU 1's idle task, docs/kernel.md),
# made by the first case and read by the others (CTest: a fixture), as
# root (CI runs as root; elsewhere the recording case says it needs root):
#  - per thread, the sums of thread_state's durations per state equal the
#    running / runnable / blocked / unknown times `ringtrace sched --all`
#    prints (the same model: equal at the printed precision, 1 us);
#  - per thread, the sum of sched_slice's durations equals its running
#    time; no slice of the idle task; the sleeper's slices end at its
#    switch-outs, with the prev_state letters report prints for them;
#  - ftrace_event's count per name equals `ringtrace stat`'s for the
#    kernel trace, and a sched_switch's utid is its prev_pid (the task
#    that was running: common_pid);
#  - the sleeper's runnable intervals after a wake-up (one per sleep) name
#    their waker: the task that recorded the wake-up;
#  - the sleeper's blocked time between two readings of its
#    /proc/thread-self/schedstat (the kernel's own accounting: time on a
#    CPU and time waiting for one) equals the time between them less the
#    kernel's running and waiting time, within 50 us per sleep (the
#    kernel counts a context switch's own time as running, the tracepoints
#    see it from inside the switch: a few us each here), plus the model's
#    unknown time when the kernel missed a switch.
# Each is a case (tests/cases.sh).
#   usage: test_query_kernel.sh BIN_DIR [CASE...] | --list
set -eu
export LC_ALL=C
. "$(dirname "$0")/cases.sh"
bin=$1
shift
rt="$bin/ringtrace"
prog="$bin/test_sleep_prog"
# the recording the cases share (CTest runs the first case before the others)
d="$(dirname "$bin")/query-kernel-trace"
tmp=$(mktemp -d /tmp/ringtrace-query-kernel-XXXXXX)
chmod 755 "$tmp"
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "test_query_kernel: ${rt_c:-}: $*" >&2; exit 1; }
skip() { echo "${rt_c:-test_query_kernel}: SKIPPED: $*"; exit 77; }
. "$(dirname "$0")/tracefs.sh"

# q SQL: the rows of SQL over the shared recording, as CSV without its
# header (and without the CRs that end CSV's lines)
q() {
	"$rt" query --format csv "$d" "$1" >"$tmp/q.csv" 2>"$tmp/q.err" ||
		fail "query failed: $1: $(cat "$tmp/q.err")"
	tail -n +2 "$tmp/q.csv" | tr -d '\r'
}

# the recording, and the sleeper's tid in $p
need_recording() {
	[ "$(id -u)" = 0 ] || skip "needs root (the recording: a tracefs instance)"
	[ -f "$d/kernel/metadata" ] || fail "no recording at $d (the case query_kernel_record_sleeper runs first)"
	p=$(ls "$d" | sed -n 's/^test_sleep_prog-//p')
	[ -n "$p" ] || fail "no sleeper's trace in $d: $(ls "$d")"
}

# Most of the sleeper's 20 sleeps have their states: a switch the kernel
# now and then does not record (docs/kernel.md) leaves one sleep unknown.
most=15

# sched --all's threads: "tid running runnable blocked unknown" (ms)
sched_times() {
	"$rt" sched --all "$d" >"$tmp/sched" 2>"$tmp/sched.err" ||
		fail "sched failed: $(cat "$tmp/sched.err")"
	awk '/^longest off-CPU/ { exit } NF >= 14 && $1 ~ /^[0-9]+$/ { print $1, $2, $4, $6, $8 }' "$tmp/sched" | sort -n
}

query_kernel_record_sleeper() { # case
	need_tracefs
	rm -rf "$d" "$d.err"
	# 20 ticks, 1 ms sleeps but a 100 ms one after tick 10, schedstat
	# read after the second tick and after the last sleep (under
	# ThreadSanitizer a program sleeps a second at its exit: not here)
	TSAN_OPTIONS="${TSAN_OPTIONS:-}${TSAN_OPTIONS:+:}atexit_sleep_ms=0" \
		taskset -c 0 "$rt" record -q -k sched:sched_switch -k sched:sched_wakeup \
		-k sched:sched_wakeup_new -o "$d" -- "$prog" 20 100 schedstat 2>"$d.err" ||
		fail "record -k failed: $(cat "$d.err")"
	need_recording
	[ "$(q "SELECT count(*) FROM sl_stat")" = 2 ] || fail "not two sl_stat events: $(cat "$tmp/q.csv")"
}

query_kernel_thread_state_sums_equal_sched() { # case
	need_recording
	sched_times >"$tmp/want"
	[ "$(wc -l <"$tmp/want")" -ge 2 ] || fail "sched --all shows too few threads: $(cat "$tmp/sched")"
	q "SELECT t.tid,
		sum(CASE WHEN s.state = 'Running' THEN s.dur ELSE 0 END),
		sum(CASE WHEN s.state != 'Running' AND substr(s.state, 1, 1) = 'R' THEN s.dur ELSE 0 END),
		sum(CASE WHEN substr(s.state, 1, 1) NOT IN ('R', 'U') THEN s.dur ELSE 0 END),
		sum(CASE WHEN s.state = 'U' THEN s.dur ELSE 0 END)
		FROM thread_state s JOIN thread t USING (utid) GROUP BY t.tid" >"$tmp/got.csv"
	# every thread sched shows, with no rows: 0 in each state; and no
	# thread with rows that sched does not show
	awk -F, 'NR == FNR { got[$1] = sprintf("%.3f %.3f %.3f %.3f", $2 / 1e6, $3 / 1e6, $4 / 1e6, $5 / 1e6); next }
		{ g = ($1 in got) ? got[$1] : "0.000 0.000 0.000 0.000"; delete got[$1]
		  w = $2 " " $3 " " $4 " " $5
		  if (g != w) { print "thread " $1 ": thread_state " g ", sched " w; bad = 1 } }
		END { for (t in got) { print "thread " t " in thread_state, not in sched"; bad = 1 }
		      exit bad }' "$tmp/got.csv" FS=' ' "$tmp/want" ||
		fail "per-state sums differ from sched --all"
	# the sleeper blocked in 'S' (it sleeps)
	[ "$(q "SELECT count(*) FROM thread_state JOIN thread USING (utid)
		WHERE tid = $p AND state = 'S'")" -ge $most ] || fail "fewer than $most 'S' rows for the sleeper"
}

query_kernel_sched_slice_sums_equal_running() { # case
	need_recording
	sched_times >"$tmp/want"
	q "SELECT t.tid, sum(s.dur) FROM sched_slice s JOIN thread t USING (utid) GROUP BY t.tid" \
		>"$tmp/got.csv"
	awk -F, 'NR == FNR { got[$1] = sprintf("%.3f", $2 / 1e6); next }
		{ g = ($1 in got) ? got[$1] : "0.000"; delete got[$1]
		  if (g != $2) { print "thread " $1 ": sched_slice " g " ms, sched running " $2 " ms"; bad = 1 } }
		END { for (t in got) { print "thread " t " has slices, not in sched"; bad = 1 }
		      exit bad }' "$tmp/got.csv" FS=' ' "$tmp/want" ||
		fail "sched_slice sums differ from sched --all's running times"
	[ "$(q "SELECT count(*) FROM sched_slice JOIN thread USING (utid) WHERE tid = 0")" = 0 ] ||
		fail "slices of the idle task"
	# the sleeper's slices end at one of its switch-outs, with the
	# prev_state report prints for it (times as report prints them)
	"$rt" report "$d/kernel" --events sched_switch |
		sed -n "s/.* \([0-9]*\.[0-9]*\): sched_switch: .* prev_pid=$p prev_prio=[0-9]* prev_state=\([^ ]*\) ==> .*/\1,\2/p" |
		sort >"$tmp/want_ends"
	q "SELECT printf('%d.%06d', (ts + dur) / 1000000000, (ts + dur) % 1000000000 / 1000),
		end_state FROM sched_slice JOIN thread USING (utid) WHERE tid = $p AND end_state IS NOT NULL" |
		sort >"$tmp/got_ends"
	[ "$(wc -l <"$tmp/got_ends")" -ge $most ] || fail "the sleeper's slices: $(cat "$tmp/got_ends")"
	[ -z "$(comm -23 "$tmp/got_ends" "$tmp/want_ends")" ] ||
		fail "slices that end otherwise than a switch-out in report: $(comm -23 "$tmp/got_ends" "$tmp/want_ends")"
}

query_kernel_ftrace_event_counts_equal_stat() { # case
	need_recording
	"$rt" stat "$d/kernel" >"$tmp/stat" || fail "stat failed"
	awk '/^events by name:/ { on = 1; next } on && NF == 0 { exit }
		on && $2 > 0 { print $1 "," $2 }' "$tmp/stat" | sort >"$tmp/want"
	q "SELECT name, count(*) FROM ftrace_event GROUP BY name" | sort >"$tmp/got"
	[ -s "$tmp/want" ] && cmp -s "$tmp/want" "$tmp/got" ||
		fail "ftrace_event counts: $(cat "$tmp/got"); stat: $(cat "$tmp/want")"
	# a switch is recorded by the task switched out: its utid is prev_pid's
	n=$(awk -F, '$1 == "sched_switch" { print $2 }' "$tmp/want")
	[ "$(q "SELECT count(*) FROM ftrace_event f JOIN thread t USING (utid)
		JOIN args a ON a.arg_set_id = f.arg_set_id AND a.key = 'prev_pid'
		WHERE f.name = 'sched_switch' AND a.int_value = t.tid")" = "$n" ] ||
		fail "sched_switch rows whose utid is not their prev_pid's (of $n)"
}

query_kernel_wakeups_name_their_waker() { # case
	need_recording
	# each sleep ends with a wake-up: a runnable row with a waker (a
	# preemption's runnable rows, 'R' or 'R+', have none)
	n=$(q "SELECT count(*) FROM thread_state JOIN thread USING (utid)
		WHERE tid = $p AND state = 'R' AND waker_utid IS NOT NULL")
	[ "$n" -ge $most ] || fail "only $n runnable rows after a wake-up for 20 sleeps"
	# each begins at a wake-up of the sleeper, its waker the task that
	# recorded it (common_pid)
	[ "$(q "SELECT count(*) FROM thread_state s JOIN thread t USING (utid)
		JOIN ftrace_event f ON f.ts = s.ts AND f.utid = s.waker_utid
			AND f.name IN ('sched_wakeup', 'sched_wakeup_new')
		JOIN args a ON a.arg_set_id = f.arg_set_id AND a.key = 'pid' AND a.int_value = t.tid
		WHERE t.tid = $p AND s.state = 'R' AND s.waker_utid IS NOT NULL")" = "$n" ] ||
		fail "runnable rows whose waker is not the task that recorded the wake-up"
}

query_kernel_sleeper_blocked_within_schedstat() { # case
	need_recording
	# the two readings: times a < b, the kernel's running and waiting ns
	set -- $(q "SELECT ts, run_ns, delay_ns FROM sl_stat ORDER BY ts" | tr '\n,' '  ')
	[ $# = 6 ] || fail "sl_stat rows: $*"
	a=$1 ra=$2 da=$3 b=$4 rb=$5 db=$6
	# the sleeper's blocked and unknown time clipped to [a, b] (unknown:
	# the kernel now and then records no switch, docs/kernel.md; the time
	# in between may be blocked time)
	set -- $(q "SELECT
		sum(CASE WHEN substr(state, 1, 1) NOT IN ('R', 'U') THEN min(ts + dur, $b) - max(ts, $a) ELSE 0 END),
		sum(CASE WHEN substr(state, 1, 1) NOT IN ('R', 'U') THEN 1 ELSE 0 END),
		sum(CASE WHEN state = 'U' THEN min(ts + dur, $b) - max(ts, $a) ELSE 0 END)
		FROM thread_state JOIN thread USING (utid)
		WHERE tid = $p AND ts < $b AND ts + dur > $a" | tr ',' ' ')
	[ $# = 3 ] || fail "no states of the sleeper between its readings"
	blocked=$1 nblocked=$2 unknown=$3
	[ "$nblocked" -ge $most ] || fail "$nblocked blocked intervals for 19 sleeps"
	kernel=$(((b - a) - (rb - ra) - (db - da)))
	tol=$(((nblocked + 2) * 50000))
	[ "$kernel" -ge $((blocked - tol)) ] && [ "$kernel" -le $((blocked + unknown + tol)) ] ||
		fail "blocked $blocked ns (unknown $unknown ns), the kernel's accounting $kernel ns (at most $tol apart)"
	echo "blocked $blocked ns (unknown $unknown ns), the kernel's accounting $kernel ns ($nblocked sleeps)"
}

rt_run_cases "$@"
