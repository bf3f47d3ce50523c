#!/bin/sh
# A traced program that damages its own pool while `ringtrace record`
# records it (test_hostile_prog: N events, wait until they are read, damage
# the pool one way, N more events from two threads, exit 0). Per way of
# damage, one case; each checks that
#  - neither the program nor the recorder crashes or hangs: record exits
#    with the program's status 0 within the time limit (a hang would be
#    cut by `timeout`, exit 124, the program with it: one process group);
#  - the recorder says on stderr that the pool is damaged (the library's
#    recorder in the program: "ringtrace: buffer /NAME: damaged (WHAT);
#    tracing to it stopped", or the skipped page);
#  - what was recorded before the damage is in the trace: `ringtrace
#    report` reads all N events of phase 0, in order.
#   usage: test_hostile.sh BIN_DIR [CASE...] | --list
set -eu
. "$(dirname "$0")/cases.sh"
bin=$1
shift
rt="$bin/ringtrace"
prog="$bin/test_hostile_prog"
N=20000
tmp=$(mktemp -d /tmp/ringtrace-hostile-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_hostile: $*" >&2; exit 1; }

# hostile WAY WANT: record the program damaging its pool by WAY; its stderr
# must say WANT
hostile() {
	way=$1 want=$2
	d="$tmp/$way"
	st=0
	timeout -k 5 60 "$rt" record -q -o "$d" -- "$prog" "$way" $N > "$d.out" 2> "$d.err" || st=$?
	[ "$st" != 124 ] || { cat "$d.err" >&2; fail "$way: record or the program hung (cut after 60 s)"; }
	[ "$st" = 0 ] || { cat "$d.err" >&2; fail "$way: record exited $st, want 0 (the program's)"; }
	grep -q "test_hostile_prog: $way: done" "$d.out" || { cat "$d.err" >&2; fail "$way: the program did not finish"; }
	grep -q "$want" "$d.err" || { cat "$d.err" >&2; fail "$way: no \"$want\" on stderr"; }
	"$rt" report --raw "$d" > "$d.txt" 2> "$d.report.err" || true
	awk -v N=$N '
		/hostile_ev:/ && /phase=0/ {
			for (i = 1; i <= NF; i++)
				if ($i ~ /^seq=/) seq = substr($i, 5) + 0;
			if (seq < N) {
				if (seq != next_seq) { print "phase 0: seq " seq " after " next_seq - 1 > "/dev/stderr"; exit 1 }
				next_seq++
			}
		}
		END { if (next_seq != N) { print "phase 0: " next_seq " of " N " events" > "/dev/stderr"; exit 1 } }
	' "$d.txt" || { cat "$d.err" "$d.report.err" >&2; fail "$way: the events recorded before the damage are not all in the trace"; }
	echo "test_hostile: $way: $(grep -m1 "$want" "$d.err")"
}

record_pool_geometry_bits_flipped_reported_not_crashed() { # case
	hostile geometry "damaged (control block: .* was "
}

record_pool_queue_index_out_of_range_reported_not_crashed() { # case
	hostile queue_index "damaged (FIFO cell [0-9]* (position [0-9]*): page index [0-9]* >= [0-9]* pages)"
}

record_pool_slot_page_index_out_of_range_reported_not_crashed() { # case
	hostile slot_index "damaged (writer slot [0-9]*: current page [0-9]* >= [0-9]* pages)"
}

record_pool_queue_sequence_ahead_reported_not_hung() { # case
	hostile seq_ahead "damaged (FIFO cell [0-9]*: sequence [0-9]* runs ahead of the"
}

record_pool_page_header_scribbled_reported_and_skipped() { # case
	hostile page_header "published page [0-9]* damaged (page header: bad magic"
}

# recover WAY: a program dies while recording (test_crash_prog), its pool
# is damaged by WAY, and `ringtrace recover` reads it: it neither hangs
# (it used to spin on a FIFO sequence ahead) nor crashes, says the pool is
# damaged, and keeps what the trace held
recover() {
	way=$1
	d="$tmp/recover-$way"
	shm="/ringtrace-test-hostile-$$-$way"
	st=0
	RINGTRACE_OUTPUT="$d" RINGTRACE_SHM="$shm" "$bin/test_crash_prog" 30000 "$d" kill > "$d.out" 2>&1 || st=$?
	[ "$st" = 137 ] || fail "recover $way: the program exited $st"
	"$prog" --damage "$shm" "$way" || fail "recover $way: cannot damage $shm"
	st=0
	timeout -k 5 60 "$rt" recover "$shm" "$d" > "$d.rec.out" 2> "$d.rec.err" || st=$?
	rm -f "/dev/shm$shm"
	[ "$st" != 124 ] || fail "recover $way: hung (cut after 60 s)"
	[ "$st" = 0 ] || { cat "$d.rec.err" >&2; fail "recover $way: exit $st"; }
	grep -q "is damaged: " "$d.rec.err" || { cat "$d.rec.err" >&2; fail "recover $way: the damage was not said"; }
	"$rt" report --raw "$d" > "$d.txt" || fail "recover $way: report failed"
	echo "test_hostile: recover $way: $(grep -m1 "is damaged" "$d.rec.err")"
}

recover_pool_queue_sequence_ahead_reported_not_hung() { # case
	recover seq_ahead
}

recover_pool_queue_index_out_of_range_reported_not_crashed() { # case
	recover queue_index
}

rt_run_cases "$@"
