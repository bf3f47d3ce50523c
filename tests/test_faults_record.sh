#!/bin/sh
# The recording commands with each of ringtrace's own calls failed in turn
# (src/base/fault.h; fault-injection builds only), by tests/faults.sh's
# loop: for N = 1, 2, ... the Nth counted call fails, until N passes the
# last call. For every N the loop checks: no crash, no hang, no sanitizer
# report (a leak, a use after free), a failure says why on stderr, a
# success prints what a run without a fault prints. And here:
#
#  - `ringtrace record -- CMD`, with the faults in the command
#    (RINGTRACE_FAULT_ONLY=ringtrace) and in the traced program's library
#    (RINGTRACE_FAULT_ONLY=test_fault_prog): the program's own output as
#    without tracing (it runs to its end whatever the recorder's trouble,
#    unless the command failed before starting it), its trace directory
#    read by `ringtrace report` and babeltrace2 up to what was written, no
#    pool of the recorder's left in /dev/shm;
#  - `ringtrace record -p PID`, with the faults in the command and in the
#    attached program (its listener and the session it starts): the
#    program runs on, computes what it would have, can be attached to
#    again afterwards (a failed attach leaves it free), and what was
#    written is readable.
#
# One case per side and per kind of call (alloc: the allocations; file:
# open, write, ftruncate, mmap and socket's functions; any: all; the
# longest loops in two halves, odd and even calls), so that every counted
# call is failed once and the cases run in parallel.
#   usage: test_faults_record.sh BIN_DIR [CASE...] | --list
set -eu
. "$(dirname "$0")/cases.sh"
. "$(dirname "$0")/faults.sh"
bin=$1
shift
rt="$bin/ringtrace"
fprog="$bin/test_fault_prog"
aprog="$bin/test_attach_prog"
tmp=$(mktemp -d /tmp/ringtrace-faults-record-XXXXXX)
chmod 755 "$tmp"
kids=""
cleanup() {
	for p in $kids; do kill -9 "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "test_faults_record: ${rt_c:-}: $*" >&2; exit 1; }
command -v babeltrace2 >/dev/null || fail "babeltrace2 is not installed (make check installs it)"
unset RINGTRACE_FAULT RINGTRACE_FAULT_ONLY RINGTRACE_FAULT_LOG

sockdir=$(rt_own_dir)

# readable DIR: if a recorder left a metadata in DIR, report and
# babeltrace2 read the trace (exit status 0), and if the recorder wrote its
# counts there, every event it took (hit) was read from the pool (read):
# none left out silently. Else nothing to read.
readable() {
	[ -f "$1/metadata" ] || return 0
	"$rt" report "$1" >/dev/null 2>"$tmp/report.err" ||
		{ echo "ringtrace report $1 fails: $(cat "$tmp/report.err")" >&2; return 1; }
	babeltrace2 "$1" >/dev/null 2>"$tmp/bt.err" ||
		{ echo "babeltrace2 cannot read $1: $(tail -n 3 "$tmp/bt.err")" >&2; return 1; }
	"$rt" stat "$1" >"$tmp/stat" 2>&1 || { echo "ringtrace stat $1 fails" >&2; return 1; }
	awk '$1 == "hit" {h = $2} $1 == "read" {r = $2} END {exit h != r}' "$tmp/stat" ||
		{ echo "$1: events taken and read differ: $(cat "$tmp/stat")" >&2; return 1; }
}

# no_pool_left PIDFILE: no pool of the recorders whose pids PIDFILE lists
# in /dev/shm, but those there before they started (a dead process's of
# the same pid).
no_pool_left() {
	left=""
	for rp in $(cat "$1"); do
		left="$left$(ls /dev/shm | grep "^ringtrace-rec-$rp-" |
			grep -vxF -f "$tmp/shm.before" || true)"
	done
	[ -z "$left" ] || { echo "left in /dev/shm: $left" >&2; return 1; }
}

# rec_cmd DIR PIDFILE CMD...: the loop's command: DIR removed (each run
# makes it anew), the pid written (exec keeps it: the recorder's) and the
# pools of that pid in /dev/shm already, then CMD.
cat >"$tmp/rec_cmd.sh" <<'EOF'
rm -rf "$1"
echo $$ >"$2"
ls /dev/shm | grep "^ringtrace-rec-$$-" >"$(dirname "$2")/shm.before"
shift 2
exec "$@"
EOF

# ---- record -- CMD ----

# (a pool of 4 pages of 16 KiB and 2 x 1500 events: a few pages written,
# a few calls to fail)
record_cmd() {
	rt_fault_loop "$1" "$2" record_cmd_check sh "$tmp/rec_cmd.sh" "$tmp/t" "$tmp/recpid" \
		"$rt" record -o "$tmp/t" --buffer-size 64k --page-size 16k -- "$fprog" 1500
}

# After each run: the program's own output (none only if the command
# failed before starting it: its fault, said), nothing left, the trace
# readable.
record_cmd_check() {
	if [ "${RINGTRACE_FAULT_ONLY}" = ringtrace ] && [ "$2" -ne 0 ] && [ ! -s "$RT_FAULT_OUT" ]; then
		: # (the command stopped before the program ran)
	else
		[ "$(cat "$RT_FAULT_OUT")" = "test_fault_prog: ok" ] ||
			{ echo "the program's output: $(cat "$RT_FAULT_OUT")" >&2; return 1; }
	fi
	no_pool_left "$tmp/recpid" && readable "$tmp/t"
}

fault_record_cmd_each_call_of_the_command_failed() { # case
	export RINGTRACE_FAULT_ONLY=ringtrace
	record_cmd any 2000
	echo "record -- CMD, the command: $RT_FAULT_N calls failed in turn"
}

fault_record_cmd_each_alloc_of_the_program_failed() { # case
	export RINGTRACE_FAULT_ONLY=test_fault_prog
	record_cmd alloc 2000
	echo "record -- CMD, the program: $RT_FAULT_N allocations failed in turn"
}

fault_record_cmd_each_file_call_of_the_program_failed() { # case
	export RINGTRACE_FAULT_ONLY=test_fault_prog
	record_cmd file 2000
	echo "record -- CMD, the program: $RT_FAULT_N file calls failed in turn"
}

# mmap failing for good in the program from its Nth call on (memory
# exhausted): the pool, then the threads' read-side nodes (a thread cannot
# record without one; the library's static reserve stands in) cannot be
# mapped. The program never waits for memory: it runs to its end, and a
# trace, if the pool could be made, holds every event it emitted.
fault_record_cmd_mmap_failing_for_good_program_never_waits() { # case
	n=1
	while [ $n -le 12 ]; do
		d="$tmp/mm$n"
		rm -f "$tmp/mm.log"
		st=0
		RINGTRACE_FAULT=mmap:$n:persist RINGTRACE_FAULT_ONLY=test_fault_prog \
			RINGTRACE_FAULT_LOG="$tmp/mm.log" timeout 60 \
			"$rt" record -o "$d" -- "$fprog" 1000 >"$tmp/mm.out" 2>"$tmp/mm.err" || st=$?
		[ "$st" -ne 124 ] || fail "mmap:$n:persist: the program hangs"
		grep -q 'ok' "$tmp/mm.out" ||
			fail "mmap:$n:persist: the program did not finish its work (status $st): $(cat "$tmp/mm.err")"
		if [ -f "$d/metadata" ]; then
			readable "$d" || fail "mmap:$n:persist: the trace is not readable"
			ev=$("$rt" stat "$d" | awk '$1 == "total" {print $3}')
			[ "$ev" = 2000 ] || fail "mmap:$n:persist: $ev events in the trace, not 2000"
		fi
		[ -s "$tmp/mm.log" ] || break
		n=$((n + 1))
	done
	[ $n -gt 2 ] || fail "the loop ended at mmap call $n: the reserve nodes were not reached"
	echo "record -- CMD, mmap failed for good from each of its $n calls in the program"
}

# ---- record -p ----

# start_prog: test_attach_prog in the background (until stop_prog), its
# pid in $pid, once it listens and its worker runs.
start_prog() {
	rm -f "$tmp/stop"
	rt_mark
	"$aprog" 1 600 --stop-file "$tmp/stop" >"$tmp/prog.out" 2>"$tmp/prog.err" &
	pid=$!
	kids="$kids $pid"
	rt_wait_socket "$sockdir/$pid.sock"
	rt_wait_for 50 grep -q '^ready$' "$tmp/prog.out"
	rt_fresh_socket "$sockdir/$pid.sock" && grep -q '^ready$' "$tmp/prog.out" ||
		fail "test_attach_prog does not start: $(cat "$tmp/prog.err")"
}

# stop_prog: it ends, and its own check of its work passed.
stop_prog() {
	touch "$tmp/stop"
	wait "$pid" || fail "test_attach_prog failed: $(cat "$tmp/prog.err")"
	kids="" # (gone: its pid may be another process's now)
	grep -q "^done .* ok$" "$tmp/prog.out" || fail "its work is wrong: $(cat "$tmp/prog.out")"
}

# After each run with the command failing: the program runs on, what was
# written is readable, and after a failed run a recording without a fault
# attaches to it (a failed attach left it free).
record_p_check() {
	kill -0 "$pid" 2>/dev/null || { echo "the program is gone" >&2; return 1; }
	no_pool_left "$tmp/recpid" && readable "$tmp/t/test_attach_pro-$pid" || return 1
	[ "$2" -eq 0 ] && return 0
	rm -rf "$tmp/again"
	"$rt" record -q -p "$pid" --duration 0.02 -o "$tmp/again" 2>"$tmp/again.err" ||
		{ echo "attaching again fails: $(cat "$tmp/again.err")" >&2; return 1; }
}

fault_record_p_each_call_of_the_command_failed() { # case
	start_prog
	export RINGTRACE_FAULT_ONLY=ringtrace
	rt_fault_loop any 3000 record_p_check \
		sh "$tmp/rec_cmd.sh" "$tmp/t" "$tmp/recpid" \
		"$rt" record -q -p "$pid" --duration 0.05 -o "$tmp/t"
	stop_prog
	echo "record -p, the command: $RT_FAULT_N calls failed in turn"
}

# att_cmd.sh: the loop's command for the program's faults (armed in it by
# the environment, from its start): start test_attach_prog; unless it says
# it cannot listen (its fault), attach to it until a recording succeeds
# (the fault fails one call: the second try must work), each recording's
# status and stderr kept for the check; then end the program, which must
# exit 0 with its work right. Exit 3 when something is wrong.
cat >"$tmp/att_cmd.sh" <<'EOF'
rt=$1 prog=$2 d=$3 sockdir=$4
rm -rf "$d"/a? "$d/stop" "$d"/st? "$d/recpids" "$d/shm.before"
touch "$d/recpids" "$d/shm.before"
# (a socket made before the program started is a dead process's of the
# same pid, which the program's listener replaces: wait for the new one)
t0=$(date +%s.%N)
fresh() {
	[ -S "$1" ] && awk -v a="$(stat -c %.9Y "$1" 2>/dev/null || echo 0)" -v b="$t0" \
		'BEGIN { exit !(a + 0 >= b + 0) }'
}
RINGTRACE_ATTACH=1 "$prog" 1 600 --stop-file "$d/stop" >"$d/p.out" 2>"$d/p.err" &
pid=$!
echo $pid >"$d/apid"
# (the program goes with this script, whatever ends it; killed only if
# still running: it is waited for below)
trap 'kill -9 $pid 2>/dev/null || true' EXIT
# (decided once: the state seen when the loop ends is the one acted on;
# 20 s at most, whatever the machine's load)
state=none
i=0
while [ $i -lt 1000 ]; do
	if grep -q "^ringtrace: not attachable" "$d/p.err"; then
		state=refused
		break
	fi
	if fresh "$sockdir/$pid.sock" && grep -q '^ready$' "$d/p.out"; then
		state=listening
		break
	fi
	sleep 0.02
	i=$((i + 1))
done
if [ $state = none ]; then
	echo "att: the program does not start in 20 s (t0 $t0): $(cat "$d/p.err")" >&2
	ls -l --time-style=+%s.%N "$sockdir/$pid.sock" >&2 2>&1
	cat "$d/p.out" >&2
	exit 3
fi
if [ $state = listening ]; then
	for k in 1 2; do
		st=0
		"$rt" record -q -p "$pid" --duration 0.05 -o "$d/a$k" 2>"$d/err$k" &
		rp=$!
		echo $rp >>"$d/recpids"
		ls /dev/shm | grep "^ringtrace-rec-$rp-" >>"$d/shm.before"
		wait $rp || st=$?
		echo $st >"$d/st$k"
		cat "$d/err$k" >&2
		[ $st -eq 0 ] && break
		kill -0 "$pid" 2>/dev/null || { echo "att: the program is gone" >&2; exit 3; }
	done
	[ $st -eq 0 ] || { echo "att: attaching again fails" >&2; exit 3; }
fi
touch "$d/stop"
pst=0
wait "$pid" || pst=$?
trap - EXIT
cat "$d/p.err" >&2
[ $pst -eq 0 ] && grep -q "^done .* ok$" "$d/p.out" ||
	{ echo "att: the program exits $pst: $(cat "$d/p.out")" >&2; exit 3; }
EOF

# After each run with the program failing: the script's own checks, a
# failed attach said why, and the traces written are readable.
att_check() {
	[ "$2" -ne 3 ] || return 1
	p=$(cat "$tmp/apid")
	for k in 1 2; do
		[ -f "$tmp/st$k" ] || continue
		if [ "$(cat "$tmp/st$k")" -ne 0 ] && ! grep -q '^ringtrace[^:]*: ..' "$tmp/err$k"; then
			echo "attach $k fails and says nothing of why: $(cat "$tmp/err$k")" >&2
			return 1
		fi
		readable "$tmp/a$k/test_attach_pro-$p" || return 1
	done
	no_pool_left "$tmp/recpids"
}

record_p_program() {
	export RINGTRACE_FAULT_ONLY=test_attach_prog
	rt_fault_loop "$1" 3000 att_check \
		sh "$tmp/att_cmd.sh" "$rt" "$aprog" "$tmp" "$sockdir"
}

# (each program's loop in two halves, odd and even N, run in parallel: a
# run starts a program and attaches to it, the longest of these tests)
fault_record_p_each_odd_alloc_of_the_program_failed() { # case
	RT_FAULT_FIRST=1 RT_FAULT_STEP=2 record_p_program alloc
	echo "record -p, the program: allocations 1, 3 .. $RT_FAULT_N failed"
}

fault_record_p_each_even_alloc_of_the_program_failed() { # case
	RT_FAULT_FIRST=2 RT_FAULT_STEP=2 record_p_program alloc
	echo "record -p, the program: allocations 2, 4 .. $RT_FAULT_N failed"
}

fault_record_p_each_odd_file_call_of_the_program_failed() { # case
	RT_FAULT_FIRST=1 RT_FAULT_STEP=2 record_p_program file
	echo "record -p, the program: file calls 1, 3 .. $RT_FAULT_N failed"
}

fault_record_p_each_even_file_call_of_the_program_failed() { # case
	RT_FAULT_FIRST=2 RT_FAULT_STEP=2 record_p_program file
	echo "record -p, the program: file calls 2, 4 .. $RT_FAULT_N failed"
}

rt_run_cases "$@"
