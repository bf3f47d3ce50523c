#!/bin/sh
# A stopped or killed `ringtrace record` while its program writes at full
# rate (docs/reliability.md, "A stopped, stalled or killed recorder"). The
# pages are written by the recorder thread inside the program; the
# command only starts or attaches the program's session and, when the
# program dies, rebuilds the trace from its pool. So:
#  - the command stopped (SIGSTOP, 5 s, then SIGCONT) in discard and in
#    overwrite mode, for record -- CMD and record -p: the program writes
#    its whole phase while the command is stopped, every writer's events
#    are in the trace or counted as lost (exactly: read + dropped +
#    overrun = written, per thread), and the events written after SIGCONT
#    are in the trace;
#  - the command killed (SIGKILL, what the out-of-memory killer sends):
#    record -- CMD's program records on and finishes a complete trace
#    itself; record -p's program stops recording (the connection's end)
#    with a complete trace of what was recorded, and runs on;
#  - the command and the program killed: `ringtrace stat` says that the
#    events in the pool left are not in its counts, and `ringtrace
#    recover DIR` finds that pool (by the trace's uuid) and rebuilds the
#    trace from it, every event accounted for; the program killed
#    while record -p is stopped: the command recovers it after SIGCONT.
# Every trace is read by `ringtrace report` and babeltrace2.
# (tests/stall_lib.sh: the program's runs and the trace's check.)
#   usage: test_stall.sh BIN_DIR [CASE...] | --list
set -eu
. "$(dirname "$0")/cases.sh"
bin=$1
shift
. "$(dirname "$0")/stall_lib.sh"

# start_cmd MODE: record -- test_stall_prog; $rpid the command, $pid the
# program, $d the trace, $ctl the program's control directory.
start_cmd() {
	ctl="$tmp/ctl-$rt_c"
	d="$tmp/t-$rt_c"
	mkdir "$ctl"
	"$rt" record -o "$d" $POOL $(mode_opt "$1") -- "$prog" $T $Q "$ctl" \
		>"$tmp/rec.out" 2>"$tmp/rec.err" &
	rpid=$!
	kids="$kids $rpid"
	rt_wait_for 300 pgrep -P "$rpid" >/dev/null
	pid=$(pgrep -P "$rpid") || fail "record did not start its program: $(cat "$tmp/rec.err")"
	kids="$kids $pid"
	rt_wait_for 100 test -f "$d/metadata"
	[ -f "$d/metadata" ] || fail "the program is not recording: $(cat "$tmp/rec.err")"
}

# start_p MODE: test_stall_prog, then record -p; the same variables ($d
# the program's trace in the collection).
start_p() {
	ctl="$tmp/ctl-$rt_c"
	mkdir "$ctl"
	rt_mark
	"$prog" $T $Q "$ctl" >"$tmp/prog.out" 2>"$tmp/prog.err" &
	pid=$!
	kids="$kids $pid"
	rt_wait_socket "$(rt_own_dir)/$pid.sock"
	"$rt" record -p "$pid" -o "$tmp/t-$rt_c" $POOL $(mode_opt "$1") \
		>"$tmp/rec.out" 2>"$tmp/rec.err" &
	rpid=$!
	kids="$kids $rpid"
	d="$tmp/t-$rt_c/test_stall_prog-$pid"
	rt_wait_for 100 test -f "$d/metadata"
	[ -f "$d/metadata" ] || fail "record -p is not recording: $(cat "$tmp/rec.err")"
}

# stopped HOW MODE: phase 1 recorded, phase 2 written while the command
# is stopped (5 s), phase 3 after SIGCONT; the command ends as it would.
stopped() {
	start_$1 "$2"
	touch "$ctl/go1"
	wait_file "$ctl/done1"
	kill -STOP "$rpid"
	touch "$ctl/go2"
	wait_file "$ctl/done2"
	[ "$(state "$rpid")" = T ] || fail "the command is not stopped ($(state "$rpid"))"
	# (the program did its phase 2 while the command was stopped; the
	# command stays stopped for the five seconds the issue of a stopped
	# recorder is about)
	sleep 5
	kill -CONT "$rpid"
	touch "$ctl/go3"
	wait_file "$ctl/written"
	st=0
	wait "$rpid" || st=$?
	[ "$st" = 0 ] || fail "record exited $st: $(cat "$tmp/rec.err")"
	[ "$1" = cmd ] || wait "$pid" || fail "the program failed: $(cat "$tmp/prog.err")"
	complete "$d" || fail "the trace is not complete"
	check_trace "$d" "$ctl" "$2" $((3 * Q + TAIL)) 1
}

record_cmd_stopped_discard_program_goes_on_losses_counted() { # case
	stopped cmd discard
}

record_cmd_stopped_overwrite_program_goes_on_overruns_counted() { # case
	stopped cmd overwrite
}

record_p_stopped_discard_program_goes_on_losses_counted() { # case
	stopped p discard
}

record_p_stopped_overwrite_program_goes_on_overruns_counted() { # case
	stopped p overwrite
}

# record -- CMD killed: the program, whose recorder thread writes the
# trace, records on and completes it at its exit; its pool goes with it.
killed_cmd() {
	start_cmd "$1"
	touch "$ctl/go1"
	wait_file "$ctl/done1"
	kill -9 "$rpid"
	wait "$rpid" 2>/dev/null || true
	touch "$ctl/go2" "$ctl/go3"
	wait_file "$ctl/written"
	rt_wait_for 600 complete "$d"
	complete "$d" || fail "the program did not complete its trace"
	rt_wait_for 100 test ! -e "/proc/$pid"
	[ -z "$(pool_of "$rpid")" ] || fail "the pool is left: $(pool_of "$rpid")"
	check_trace "$d" "$ctl" "$1" $((3 * Q + TAIL)) 1
}

record_cmd_killed_discard_program_records_on_to_a_complete_trace() { # case
	killed_cmd discard
}

record_cmd_killed_overwrite_program_records_on_to_a_complete_trace() { # case
	killed_cmd overwrite
}

# record -p killed: the connection's end stops the session (a complete
# trace of phase 1, its pool freed); the program runs on untraced.
record_p_killed_session_stops_trace_complete_program_goes_on() { # case
	start_p discard
	touch "$ctl/go1"
	wait_file "$ctl/done1"
	kill -9 "$rpid"
	wait "$rpid" 2>/dev/null || true
	rt_wait_for 600 complete "$d"
	complete "$d" || fail "the session did not stop when its recorder died"
	rt_wait_for 100 test -z "$(pool_of "$rpid")"
	[ -z "$(pool_of "$rpid")" ] || fail "the pool is left: $(pool_of "$rpid")"
	touch "$ctl/go2" "$ctl/go3"
	wait "$pid" || fail "the program failed after its recorder died: $(cat "$tmp/prog.err")"
	[ -f "$ctl/written" ] || fail "the program did not finish its work"
	check_trace "$d" "$ctl" discard $Q 0
}

# recover_by_hand MODE: the command killed, then the program (after its
# phase 2): stat says the trace is unfinished, `ringtrace recover DIR`
# finds the pool left and rebuilds the trace from it.
recover_by_hand() {
	start_cmd "$1"
	touch "$ctl/go1"
	wait_file "$ctl/done1"
	kill -9 "$rpid"
	wait "$rpid" 2>/dev/null || true
	touch "$ctl/go2"
	wait_file "$ctl/done2"
	kill -9 "$pid"
	rt_wait_for 100 test ! -e "/proc/$pid"
	shm=$(pool_of "$rpid")
	[ -n "$shm" ] || fail "no pool left by the killed program"
	! complete "$d" || fail "a killed program's trace has final stats"
	# stat says that its counts leave out the pool, and how to add it
	"$rt" stat "$d" > "$tmp/before.stat" || fail "stat of the unfinished trace failed"
	grep -q "the trace is not finished .* its pool /$shm are not counted above: .*ringtrace recover $d" \
		"$tmp/before.stat" || fail "stat does not say the trace is unfinished: $(tail -n 3 "$tmp/before.stat")"
	# recover DIR: the pool found by the trace's uuid
	"$rt" recover "$d" 2>"$tmp/recover.err" || fail "recover failed: $(cat "$tmp/recover.err")"
	grep -q "the pool of $d is /$shm" "$tmp/recover.err" || fail "recover did not find the pool: $(cat "$tmp/recover.err")"
	grep -q "recovered [0-9]* pages" "$tmp/recover.err" || fail "recover said nothing: $(cat "$tmp/recover.err")"
	[ -z "$(pool_of "$rpid")" ] || fail "the pool is left after recover"
	check_trace "$d" "$ctl" "$1" $((2 * Q)) 0
}

record_cmd_and_program_killed_discard_recover_rebuilds_every_event() { # case
	recover_by_hand discard
}

record_cmd_and_program_killed_overwrite_recover_rebuilds_the_newest() { # case
	recover_by_hand overwrite
}

# record -p stopped, the program killed meanwhile: after SIGCONT the
# command finds the connection gone and the trace unfinished, and
# recovers it from the pool.
record_p_stopped_program_killed_recovered_after_sigcont() { # case
	start_p discard
	touch "$ctl/go1"
	wait_file "$ctl/done1"
	kill -STOP "$rpid"
	touch "$ctl/go2"
	wait_file "$ctl/done2"
	kill -9 "$pid"
	wait "$pid" 2>/dev/null || true
	kill -CONT "$rpid"
	wait "$rpid" || fail "record -p after the program's death: exit $?: $(cat "$tmp/rec.err")"
	grep -q "pid $pid (test_stall_prog) ended without finishing its trace" "$tmp/rec.err" ||
		fail "the death not said: $(cat "$tmp/rec.err")"
	grep -q "recovered [0-9]* pages from the pool" "$tmp/rec.err" ||
		fail "nothing recovered: $(cat "$tmp/rec.err")"
	[ -z "$(pool_of "$rpid")" ] || fail "the pool is left"
	check_trace "$d" "$ctl" discard $((2 * Q)) 0
}

# record -p and its program both killed (the recorder stopped first, so
# that its death cannot stop the session): recover by hand.
record_p_and_program_killed_recover_by_hand() { # case
	start_p discard
	touch "$ctl/go1"
	wait_file "$ctl/done1"
	kill -STOP "$rpid"
	touch "$ctl/go2"
	wait_file "$ctl/done2"
	kill -9 "$pid"
	wait "$pid" 2>/dev/null || true
	kill -9 "$rpid"
	wait "$rpid" 2>/dev/null || true
	shm=$(pool_of "$rpid")
	[ -n "$shm" ] || fail "no pool left"
	"$rt" recover "/$shm" "$d" 2>"$tmp/recover.err" || fail "recover failed: $(cat "$tmp/recover.err")"
	[ -z "$(pool_of "$rpid")" ] || fail "the pool is left after recover"
	check_trace "$d" "$ctl" discard $((2 * Q)) 0
}

rt_run_cases "$@"
