#!/bin/sh
# A stalled recorder thread (a debugger, a stalled NFS write): the
# consumer thread inside the program, which writes the pages, blocks in
# one of its calls for 5 s (RINGTRACE_FAULT=write:K:stall=5000; only in
# fault-injection builds, where tests/CMakeLists.txt registers this
# script) while the program's writers go on at full rate, in discard and
# in overwrite mode (docs/reliability.md, "A stopped, stalled or killed
# recorder"):
#  - the writers do their whole phase 2 while the consumer is in the
#    stall and has written no page (test_stall_prog --stall checks it);
#  - what they could not put in the pool meanwhile is counted (dropped,
#    or overrun), exactly: per writer, read + lost = written;
#  - the consumer resumes when the stall ends: the events written after
#    it, to the program's last, are in the trace;
#  - report and babeltrace2 read the trace;
#  - overwrite mode: a snapshot asked for during the stall is written
#    when it ends, and is read by report and babeltrace2.
#   usage: test_stall_fault.sh BIN_DIR [CASE...] | --list
set -eu
. "$(dirname "$0")/cases.sh"
bin=$1
shift
. "$(dirname "$0")/stall_lib.sh"

# stalled MODE KIND K: the program's K-th counted call of KIND stalls 5 s.
stalled() {
	ctl="$tmp/ctl-$rt_c"
	d="$tmp/t-$rt_c"
	mkdir "$ctl"
	touch "$ctl/go1" "$ctl/go2" "$ctl/go3"
	st=0
	RINGTRACE_FAULT="$2:$3:stall=5000" RINGTRACE_FAULT_ONLY=test_stall_prog \
		RINGTRACE_FAULT_LOG="$tmp/fault-$rt_c.log" \
		"$rt" record -o "$d" $POOL $(mode_opt "$1") -- "$prog" $T $Q "$ctl" --stall \
		>"$tmp/rec.out" 2>"$tmp/rec.err" || st=$?
	[ "$st" = 0 ] || fail "record exited $st: $(cat "$tmp/rec.err")"
	[ "$(wc -l < "$tmp/fault-$rt_c.log")" = 1 ] && grep -q "^fault p*$2 $3 stall " "$tmp/fault-$rt_c.log" ||
		fail "not one stalled $2: $(cat "$tmp/fault-$rt_c.log")"
	line=$(grep "^stall: phase 2: " "$tmp/rec.out") || fail "no phase 2 line: $(cat "$tmp/rec.out")"
	echo "$rt_c: $line"
	# (what the writers could not put in the pool during the stall was
	# counted then: the pool holds far fewer events than a phase)
	echo "$line" | awk '{ for (i = 1; i < NF; i++) if ($i == "lost") { l0 = $(i + 1); l1 = $(i + 3) } }
		END { exit !(l1 + 0 > l0 + 0) }' || fail "no loss counted during the stall: $line"
	complete "$d" || fail "the trace is not complete"
	check_trace "$d" "$ctl" "$1" $((3 * Q + TAIL)) 1
}

consumer_stalled_discard_writers_go_on_drops_counted_recording_resumes() { # case
	# (the 5th page written: the metadata is written through stdio,
	# whose calls are not counted)
	stalled discard write 5
}

consumer_stalled_overwrite_writers_go_on_overruns_counted_recording_resumes() { # case
	# (overwrite mode writes no page until the end: the consumer's
	# first file, the live metadata's, whose openat is the 4th of the
	# program, after the three of its trace directory's)
	stalled overwrite openat 4
}

# overwrite mode: a snapshot asked for during the stall (SIGUSR2, as
# `ringtrace snapshot` sends it) is written when the stall ends, and is a
# complete trace: each writer's events in order, read by report and
# babeltrace2 alike.
consumer_stalled_overwrite_snapshot_written_when_the_stall_ends() { # case
	ctl="$tmp/ctl-$rt_c"
	d="$tmp/t-$rt_c"
	mkdir "$ctl"
	touch "$ctl/go1" "$ctl/go2" "$ctl/go3"
	st=0
	RINGTRACE_FAULT="openat:4:stall=5000" RINGTRACE_FAULT_ONLY=test_stall_prog \
		"$rt" record -o "$d" $POOL --overwrite -- "$prog" $T $Q "$ctl" --stall \
		--snapshot "$d.snapshot-1" >"$tmp/rec.out" 2>"$tmp/rec.err" || st=$?
	[ "$st" = 0 ] || fail "record exited $st: $(cat "$tmp/rec.err") $(cat "$tmp/rec.out")"
	grep -q "^stall: snapshot asked for during the stall, not written$" "$tmp/rec.out" &&
		grep -q "^stall: snapshot written after the stall$" "$tmp/rec.out" ||
		fail "the snapshot's order: $(cat "$tmp/rec.out")"
	s="$d.snapshot-1"
	"$rt" report --raw "$s" > "$s.txt" 2> "$s.err" || fail "report of the snapshot failed: $(cat "$s.err")"
	awk '/ stall_ev: / {
			th = ""; seq = "";
			for (i = 1; i <= NF; i++) {
				if ($i ~ /^thread=/) th = substr($i, 8);
				if ($i ~ /^seq=/) seq = substr($i, 5) + 0;
			}
			if ((th in last) && seq <= last[th]) { print "thread " th ": seq " seq " after " last[th] > "/dev/stderr"; bad = 1 }
			last[th] = seq; n++
		}
		END { if (bad || n == 0) exit 1 }' "$s.txt" || fail "the snapshot's sequences are broken, or it is empty"
	bn=$(babeltrace2 "$s" 2>/dev/null | grep -c " stall_ev: ") || true
	rn=$(grep -c " stall_ev: " "$s.txt") || true
	[ "$bn" = "$rn" ] || fail "babeltrace2 read $bn events of the snapshot, report $rn"
	"$rt" stat "$s" > "$s.stat" || fail "stat of the snapshot failed"
	complete "$d" || fail "the trace is not complete"
	check_trace "$d" "$ctl" overwrite $((3 * Q + TAIL)) 1
	echo "$rt_c: the snapshot, written after the stall, holds $rn events"
}

rt_run_cases "$@"
