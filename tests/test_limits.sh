#!/bin/sh
# Limits (docs/reliability.md, "Limits"), with test_limits_prog, whose
# every event is lim_seq(unit, seq), numbered per unit (thread, child,
# program) so that a trace shows exactly which it holds:
#  - a traced program with few descriptors (RLIMIT_NOFILE from the lowest
#    it runs with at all), recorded by `record -- CMD` and by `record -p`:
#    a complete trace, or a clear error naming what ran out; the program
#    runs to its end either way;
#  - the reading commands (report, stat, query, recover) with few
#    descriptors on a trace of 200 streams: the whole trace, or a clear
#    error naming what ran out;
#  - record -a -- CMD with 200 programs at once: every program's trace
#    complete, the collection read by report and stat, the command's
#    descriptors and memory bounded;
#  - 10,000 short-lived threads while record -p attaches and detaches in
#    a loop: every event of a thread that ran while attached in that
#    attachment's trace, nothing growing in the program;
#  - 1,000 forks while recorded: the parent's events exact, every child's
#    events in a stream of its own, no descriptor left in the parent.
# And in every case: no shared memory object left in /dev/shm by the
# recording, nothing in the trace directories but the traces.
# The sanitizer builds scale the counts down (their programs are slower
# to start, fork and make threads); the normal build runs the full ones.
#   usage: test_limits.sh BIN_DIR [CASE...] | --list
set -eu
. "$(dirname "$0")/cases.sh"
bin=$1
shift
rt="$bin/ringtrace"
prog="$bin/test_limits_prog"
tmp=$(mktemp -d /tmp/ringtrace-limits-XXXXXX)
kids=""
cleanup() {
	touch "$tmp/stop" 2>/dev/null || true
	for p in $kids; do kill -9 "$p" 2>/dev/null || true; done
	[ -n "${RT_KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "test_limits: ${rt_c:-}: $*" >&2; exit 1; }

sanitized=0
if grep -qa -e __tsan_init -e __asan_init "$prog"; then
	sanitized=1
fi

# The rendezvous directory of the caller (as the library chooses it).
own_dir() {
	if [ "$(id -u)" = 0 ]; then
		echo /run/ringtrace
	elif [ -n "${XDG_RUNTIME_DIR:-}" ] && [ -O "$XDG_RUNTIME_DIR" ]; then
		echo "$XDG_RUNTIME_DIR/ringtrace"
	elif [ -O "/run/user/$(id -u)" ]; then
		echo "/run/user/$(id -u)/ringtrace"
	else
		echo "/tmp/ringtrace-$(id -u)"
	fi
}

# fds PID: the number of descriptors PID has open.
fds() { ls "/proc/$1/fd" | wc -l; }
# rss PID / hwm PID: its resident set now / at most so far, in KiB.
rss() { awk '$1 == "VmRSS:" {print $2}' "/proc/$1/status"; }
hwm() { awk '$1 == "VmHWM:" {print $2}' "/proc/$1/status"; }

# The shared memory objects of `ringtrace record` (named after the
# command's pid: another test's are not ours).
shm_of() { ls /dev/shm | grep "^ringtrace-rec-$1-" || true; }

# check_units DIR UNITS EVENTS: DIR (a trace or a collection) holds
# exactly lim_seq(u, 0..EVENTS-1) for u in 0..UNITS-1, each unit's events
# in order, nothing more; with UNITS 0 (a collection of programs, whose
# units are not unique), exactly EVENTS events per thread and unit. And
# `stat` agrees: every event read, none lost.
check_units() {
	"$rt" report "$1" >"$tmp/report" 2>"$tmp/report.err" ||
		fail "report $1: $(cat "$tmp/report.err")"
	"$rt" stat "$1" >"$tmp/stat" 2>&1 || fail "stat $1: $(cat "$tmp/stat")"
	awk -v units="$2" -v events="$3" '
	/ lim_seq: / {
		n1 = split($1, a, "-"); t = a[n1]
		for (i = 1; i <= NF; i++) {
			if ($i ~ /^unit=/) u = substr($i, 6) + 0
			if ($i ~ /^seq=/) s = substr($i, 5) + 0
		}
		k = units > 0 ? u : t " " u
		if (s != n[k] + 0) { print "unit " k ": seq " s ", expected " n[k] + 0; bad = 1 }
		n[k] = s + 1
		next
	}
	{ print "not an event of the program: " $0; bad = 1 }
	END {
		for (k in n) {
			if (n[k] != events) { print "unit " k ": " n[k] " events, expected " events; bad = 1 }
			c++
		}
		if (units > 0 && c != units) { print c " units, expected " units; bad = 1 }
		exit bad
	}' "$tmp/report" >"$tmp/check" || fail "$1: $(head -5 "$tmp/check")"
	cu_lost=$(awk '$1 == "missed" || $1 == "overrun" {n += $2} END {print n + 0}' "$tmp/stat")
	[ "$cu_lost" = 0 ] || fail "$1: $cu_lost events lost"
	cu_n=$(wc -l <"$tmp/report")
	cu_read=$(awk '$1 == "read" {n += $2} END {print n + 0}' "$tmp/stat")
	[ "$cu_n" = "$cu_read" ] || fail "$1: report shows $cu_n events, stat says $cu_read"
}

# only_traces DIR: nothing in DIR but trace files (metadata, stream_N).
only_traces() {
	extra=$(find "$1" -mindepth 1 ! -type d ! -name metadata ! -name 'stream_[0-9]*' | head -3)
	[ -z "$extra" ] || fail "left in $1: $extra"
}

# rec_cmd_with_limit N: record test_limits_prog (200 threads of 5 events)
# with RLIMIT_NOFILE N in the program only; sets rst (record's status).
rec_cmd_with_limit() {
	rm -rf "$tmp/t$1"
	rst=0
	"$rt" record -q -o "$tmp/t$1" -- sh -c "ulimit -n $1 && exec \"\$0\" threads 200 5" "$prog" \
		>"$tmp/out$1" 2>"$tmp/err$1" &
	rpid=$!
	wait "$rpid" || rst=$?
	[ -z "$(shm_of "$rpid")" ] || fail "limit $1: left in /dev/shm: $(shm_of "$rpid")"
}

# The lowest descriptor limit test_limits_prog runs with at all, untraced.
lowest_limit() {
	n=3
	while [ $n -lt 64 ] &&
		! RINGTRACE_ATTACH=0 sh -c "ulimit -n $n && exec \"\$0\" threads 1 1" "$prog" \
			>/dev/null 2>&1; do
		n=$((n + 1))
	done
	echo $n
}

program_with_few_descriptors_records_or_says_what_ran_out() { # case
	low=$(lowest_limit)
	[ "$low" -lt 64 ] || fail "the program does not run with up to 64 descriptors"
	ok=0
	for n in $low $((low + 1)) $((low + 2)) $((low + 3)) $((low + 4)) $((low + 5)) \
		$((low + 6)) $((low + 8)) 16 32; do
		rec_cmd_with_limit $n
		# (the program ran to its end: its last line)
		grep -q '^fds ' "$tmp/out$n" || fail "limit $n: the program did not finish: $(cat "$tmp/err$n")"
		if [ "$rst" = 0 ]; then
			check_units "$tmp/t$n" 200 5
			only_traces "$tmp/t$n"
			ok=$((ok + 1))
		else
			grep -q "Too many open files" "$tmp/err$n" ||
				fail "limit $n: failed without naming what ran out: $(cat "$tmp/err$n")"
		fi
		# (from 4 above the lowest every limit records: the library
		# needs 6 descriptors, the recorder its first stream file)
		[ "$rst" = 0 ] || [ $n -lt $((low + 4)) ] ||
			fail "limit $n: not recorded: $(cat "$tmp/err$n")"
	done
	[ $ok -ge 7 ] || fail "recorded with only $ok of the limits"
}

attached_program_with_few_descriptors_records_or_says_what_ran_out() { # case
	low=$(lowest_limit)
	ok=0
	for n in $low $((low + 2)) $((low + 4)) $((low + 6)) $((low + 8)) 16 32; do
		rm -f "$tmp/stop"
		RINGTRACE_ATTACH=1 sh -c "ulimit -n $n && exec \"\$0\" wait 50 5 \"\$1\"" "$prog" \
			"$tmp/stop" >"$tmp/pout$n" 2>"$tmp/perr$n" &
		pid=$!
		kids="$kids $pid"
		# (the listener needs two descriptors: without them the program is
		# not attachable, says why (RINGTRACE_ATTACH=1), and record -p says
		# it cannot find it)
		rt_wait_for 50 sh -c "test -S \"$(own_dir)/$pid.sock\" || test -s \"$tmp/perr$n\""
		rst=0
		"$rt" record -q -p "$pid" -o "$tmp/a$n" >"$tmp/rout$n" 2>"$tmp/rerr$n" &
		rpid=$!
		kids="$kids $rpid"
		# (until the program has written its events, or record gave up)
		rt_wait_for 300 sh -c "grep -q emitted \"$tmp/pout$n\" || ! kill -0 $rpid 2>/dev/null"
		touch "$tmp/stop"
		wait "$pid" || fail "limit $n: the program failed: $(cat "$tmp/pout$n")"
		wait "$rpid" || rst=$?
		if [ "$rst" = 0 ]; then
			check_units "$tmp/a$n" 50 5
			only_traces "$tmp/a$n"
			ok=$((ok + 1))
		else
			grep -q -e "Too many open files" -e "not attachable" "$tmp/rerr$n" ||
				fail "limit $n: failed without saying why: $(cat "$tmp/rerr$n")"
			grep -q "Too many open files" "$tmp/rerr$n" "$tmp/perr$n" ||
				fail "limit $n: nothing names what ran out: $(cat "$tmp/rerr$n" "$tmp/perr$n")"
		fi
	done
	[ $ok -ge 4 ] || fail "attached with only $ok of the limits"
}

# with_limit N CMD...: CMD with RLIMIT_NOFILE N; its output in $tmp/cout,
# its messages in $tmp/cerr; sets cst (its status).
with_limit() {
	wl_n=$1
	shift
	cst=0
	sh -c "ulimit -n $wl_n && exec \"\$@\"" sh "$@" >"$tmp/cout" 2>"$tmp/cerr" || cst=$?
}

# said_out_of_descriptors WHAT: the command failed (status 1) saying so.
said_out_of_descriptors() {
	[ "$cst" = 1 ] || fail "$1: status $cst (a crash?): $(cat "$tmp/cerr")"
	grep -q "Too many open files" "$tmp/cerr" ||
		fail "$1: failed without naming what ran out: $(cat "$tmp/cerr")"
}

commands_with_few_descriptors_read_a_trace_of_many_streams() { # case
	"$rt" record -q -o "$tmp/t" -- "$prog" threads 200 5 >/dev/null || fail "record failed"
	[ "$(find "$tmp/t" -name 'stream_*' | wc -l)" = 200 ] || fail "not 200 stream files"
	ok=0
	for n in 4 5 6 7 8 16; do
		with_limit $n "$rt" report "$tmp/t"
		if [ "$cst" = 0 ]; then
			[ "$(grep -c ' lim_seq: ' "$tmp/cout")" = 1000 ] || fail "report, limit $n: not 1000 events"
			ok=$((ok + 1))
		else
			said_out_of_descriptors "report, limit $n"
		fi
		with_limit $n "$rt" stat "$tmp/t"
		if [ "$cst" = 0 ]; then
			awk '$1 == "total" && $2 == 200 && $3 == 1000 {f = 1} END {exit !f}' "$tmp/cout" ||
				fail "stat, limit $n: $(grep '^total' "$tmp/cout")"
			ok=$((ok + 1))
		else
			said_out_of_descriptors "stat, limit $n"
		fi
		with_limit $n "$rt" query "$tmp/t" "select count(*), count(distinct unit) from lim_seq"
		if [ "$cst" = 0 ]; then
			grep -q '^ *1000 *200 *$' "$tmp/cout" || fail "query, limit $n: $(cat "$tmp/cout")"
			ok=$((ok + 1))
		else
			said_out_of_descriptors "query, limit $n"
		fi
		# recover: from the pool of a program killed with 100 threads
		# (fewer than the pool's 128 writer slots), each holding a page
		# of 5 events (4 KiB pages: the pool has room for all)
		shm=/ringtrace-test-limits-$$-$n
		RINGTRACE_OUTPUT="$tmp/k$n" RINGTRACE_SHM=$shm RINGTRACE_PAGE_SIZE=4096 \
			"$prog" threads-kill 100 5 >/dev/null 2>&1 || true
		with_limit $n "$rt" recover $shm "$tmp/k$n"
		if [ "$cst" = 0 ]; then
			check_units "$tmp/k$n" 100 5
			only_traces "$tmp/k$n"
			ok=$((ok + 1))
		else
			said_out_of_descriptors "recover, limit $n"
			# (the pool is kept for a recover with more descriptors)
			[ -e /dev/shm$shm ] || fail "recover, limit $n: the pool was removed"
			"$rt" recover $shm "$tmp/k$n" >/dev/null 2>&1 || fail "recover, limit $n: not again"
		fi
		[ ! -e /dev/shm$shm ] || fail "recover, limit $n: the pool is left"
	done
	# (each works from 7 descriptors on: a file at a time)
	[ $ok -ge 12 ] || fail "only $ok of 24 worked"
}

rt_run_cases "$@"
