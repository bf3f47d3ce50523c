#!/bin/sh
# Attaching, its first part (docs/attach.md): a program linked with
# libringtrace listens on <pid>.sock in its user's rendezvous directory
# and `ringtrace ps` finds it:
#  - ps lists a running program (pid, user, command, its events, whether a
#    session records it), and says "yes" under `ringtrace record`;
#  - RINGTRACE_ATTACH=0: no socket, no listener thread, not listed;
#  - the socket file goes when the program exits; one left by a program
#    killed with SIGKILL is removed by the next ps;
#  - another user's program: root's ps lists it, the user's own ps too;
#    a third user who reaches its socket (a directory loosened by hand) is
#    refused by the program, which says why;
#  - a listener that is not a ringtrace program (an oversized message, a
#    wrong hello, a refusal with a terminal escape in it, silence) gets an
#    error naming it from ps, escaped, never a crash or a hang;
#  - a rendezvous directory that is not the user's (or open to others)
#    is refused: the program is not attachable, and says so when asked
#    (RINGTRACE_ATTACH=1).
# And recording them (ringtrace record -p), with test_attach_prog, a
# program that checks its own work:
#  - a running program recorded and detached: every event of the trace in
#    sequence per worker (losses only where counted), its threads and
#    descriptors as before, the program's result right;
#  - 100 attach/detach cycles: events each time, nothing growing;
#  - --overwrite: the last buffer's worth, the rest counted as overwritten;
#  - the program's own events, filters and triggers put back at detach;
#  - a program recorded already: refused as busy;
#  - the program's exit ends the recording with a complete trace;
#  - the recorder killed (SIGKILL): the program stops tracing at once and
#    frees its pool; a program that crashes while recorded: its committed
#    events recovered from its pool into its trace; a program that goes
#    away during the attach: said, not waited for;
#  - Ctrl-C stops and detaches; another user refused, root allowed;
#  - the exact values, read back with babeltrace2;
#  - ringtrace list -p: a running program's events, the program unchanged;
#  - the program stops the attached session itself and starts its own:
#    the recorder's stop leaves the program's session alone;
#  - record -a: three programs, one started while it records (as a user of
#    their own, so that other tests' programs are not recorded);
#  - record -a -- CMD: the command's programs, each from its first event;
#  - one trace for many processes: two programs ping-pong a token through
#    pipes, and in the collection merged by time (ringtrace report, and
#    babeltrace2) every event follows the one that caused it; every trace
#    declares the same clock conversion and its process (env pid,
#    procname); stat gives each and the totals, export each process as its
#    own pid and name.
#   usage: test_attach.sh BIN_DIR [CASE...] | --list
set -eu
. "$(dirname "$0")/cases.sh"
bin=$1
shift
rt="$bin/ringtrace"
demo="$bin/ringtrace-demo"
tmp=$(mktemp -d /tmp/ringtrace-attach-XXXXXX)
chmod 755 "$tmp"
kids=""
cleanup() {
	for p in $kids; do kill -9 "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "test_attach: ${rt_c:-}: $*" >&2; exit 1; }
skip() { echo "${rt_c:-test_attach}: SKIPPED: $*"; exit 77; }


# has_threads PID N: the process has at least N threads.
has_threads() {
	[ "$(cat /proc/"$1"/task/*/comm 2>/dev/null | wc -l)" -ge "$2" ]
}

# start_demo SECONDS [ENV...]: the demo in the background; its pid in $pid
# once its socket (if any) is there or 5 s have passed.
start_demo() {
	secs=$1
	shift
	rt_mark
	env "$@" "$demo" --seconds "$secs" --threads 1 >/dev/null 2>"$tmp/demo.err" &
	pid=$!
	kids="$kids $pid"
	case " $* " in
	*" RINGTRACE_ATTACH=0 "*)
		# (no socket to wait for: its worker thread instead, which it starts
		# after the library's constructors, where a listener would start;
		# bounded, 10 s. A fixed sleep was too short on a loaded machine.)
		rt_wait_for 100 has_threads "$pid" 2
		;;
	*) rt_wait_socket "$(rt_own_dir)/$pid.sock" ;;
	esac
}

# as_user UID CMD...: run CMD with that uid and gid, no groups.
as_user() {
	u=$1
	shift
	setpriv --reuid="$u" --regid="$u" --clear-groups -- "$@"
}

need_root() {
	[ "$(id -u)" = 0 ] || skip "needs root (runs programs as other users)"
	command -v setpriv >/dev/null || skip "needs setpriv (util-linux)"
}

ps_lists_running_program_with_its_events() { # case
	start_demo 5
	[ -S "$(rt_own_dir)/$pid.sock" ] || fail "no socket $(rt_own_dir)/$pid.sock"
	out=$("$rt" ps)
	line=$(echo "$out" | awk -v p="$pid" '$1 == p')
	[ -n "$line" ] || fail "pid $pid not listed: $out"
	echo "$line" | grep -q "ringtrace-demo" || fail "no command: $line"
	# the demo defines 4 events (demo_tick, demo_work_begin/end, ringtrace_printf)
	echo "$line" | awk '{ exit !($4 == 4 && $5 == "no") }' || fail "events/recording: $line"
	echo "$line" | grep -q "$demo" || fail "no executable path: $line"
	kill "$pid"
}

ps_says_recording_under_ringtrace_record() { # case
	"$rt" record -q -o "$tmp/rec" -- "$demo" --seconds 3 --threads 1 >/dev/null 2>&1 &
	rpid=$!
	kids="$kids $rpid"
	i=0
	line=""
	while [ $i -lt 50 ] && [ -z "$line" ]; do
		sleep 0.1
		line=$("$rt" ps | awk '$3 == "ringtrace-demo" && $5 == "yes"')
		i=$((i + 1))
	done
	[ -n "$line" ] || fail "no recording ringtrace-demo in: $("$rt" ps)"
	wait "$rpid" || fail "record failed"
}

attach_zero_means_no_socket_no_thread() { # case
	start_demo 3 RINGTRACE_ATTACH=0
	[ -d "/proc/$pid/task" ] || fail "the demo is not running"
	[ ! -e "$(rt_own_dir)/$pid.sock" ] || fail "a socket with RINGTRACE_ATTACH=0"
	# (its threads are there to look at: the check below cannot pass vacuously)
	[ "$(cat /proc/"$pid"/task/*/comm | wc -l)" -ge 2 ] || fail "no threads seen"
	! grep -qx "ringtrace-att" /proc/"$pid"/task/*/comm || fail "a listener thread"
	"$rt" ps | awk -v p="$pid" '$1 == p { exit 1 }' || fail "listed"
	# and by default there is one listener thread
	start_demo 3
	grep -qx "ringtrace-att" /proc/"$pid"/task/*/comm || fail "no listener thread"
}

socket_removed_at_exit() { # case
	start_demo 0.3
	[ -S "$(rt_own_dir)/$pid.sock" ] || fail "no socket"
	wait "$pid" || fail "demo failed"
	[ ! -e "$(rt_own_dir)/$pid.sock" ] || fail "socket left after exit"
}

stale_socket_of_killed_program_removed_by_ps() { # case
	start_demo 10
	[ -S "$(rt_own_dir)/$pid.sock" ] || fail "no socket"
	kill -9 "$pid"
	wait "$pid" 2>/dev/null || true
	[ -e "$(rt_own_dir)/$pid.sock" ] || fail "the killed program's socket is already gone?"
	"$rt" ps >/dev/null
	[ ! -e "$(rt_own_dir)/$pid.sock" ] || fail "ps left the stale socket"
}

other_users_program_listed_for_root_and_owner() { # case
	need_root
	setpriv --reuid=65534 --regid=65534 --clear-groups -- "$demo" --seconds 5 --threads 1 >/dev/null 2>&1 &
	npid=$!
	kids="$kids $npid"
	rt_wait_socket "/tmp/ringtrace-65534/$npid.sock"
	[ -S "/tmp/ringtrace-65534/$npid.sock" ] || fail "no socket for uid 65534's program"
	"$rt" ps | awk -v p="$npid" '$1 == p && $2 == "nobody"' | grep -q . ||
		fail "root's ps does not list it: $("$rt" ps)"
	as_user 65534 "$rt" ps | awk -v p="$npid" '$1 == p' | grep -q . ||
		fail "its owner's ps does not list it"
	# a third user sees nothing of it
	as_user 1 "$rt" ps | awk -v p="$npid" '$1 == p { exit 1 }' || fail "uid 1 lists it"
}

third_user_refused_by_the_program() { # case
	need_root
	py=/usr/bin/python3
	[ -x "$py" ] || skip "needs /usr/bin/python3 (a client that is neither ringtrace nor root)"
	setpriv --reuid=65534 --regid=65534 --clear-groups -- "$demo" --seconds 5 --threads 1 >/dev/null 2>&1 &
	npid=$!
	kids="$kids $npid"
	d=/tmp/ringtrace-65534
	rt_wait_socket "$d/$npid.sock"
	[ -S "$d/$npid.sock" ] || fail "no socket"
	# loosened by hand: what the program's own check of the peer is for
	chmod 711 "$d"
	chmod 666 "$d/$npid.sock"
	out=$(as_user 1 "$py" -c '
import socket, struct, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(3)
s.connect(sys.argv[1])
h = b""
while len(h) < 8:
    c = s.recv(8 - len(h))
    if not c: break
    h += c
n, t = struct.unpack("II", h)
b = b""
while len(b) < n:
    c = s.recv(n - len(b))
    if not c: break
    b += c
print(t, b.rstrip(b"\0").decode())
' "$d/$npid.sock") || { chmod 700 "$d"; fail "client failed"; }
	chmod 700 "$d"
	case "$out" in
	"2 refused: uid 1 may not attach to a program of uid 65534") ;;
	*) fail "answer: $out" ;;
	esac
}

ps_survives_hostile_listeners() { # case
	py=/usr/bin/python3
	[ -x "$py" ] || skip "needs /usr/bin/python3 (a fake listener)"
	d=$(rt_own_dir)
	mkdir -p "$d"
	chmod 700 "$d"
	# each fake binds <its pid>.sock and answers every connection its way
	for how in big wrong deny silent; do
		"$py" -c '
import os, socket, struct, sys, time
d, how = sys.argv[1], sys.argv[2]
p = "%s/%d.sock" % (d, os.getpid())
s = socket.socket(socket.AF_UNIX)
s.bind(p)
s.listen(4)
open(sys.argv[3], "w").write(str(os.getpid()))
try:
    while True:
        c, _ = s.accept()
        if how == "big":
            c.sendall(struct.pack("II", 100000, 1) + b"x" * 64)
        elif how == "wrong":
            c.sendall(struct.pack("II", 8, 1) + b"abcdefgh")
        elif how == "deny":
            c.sendall(struct.pack("II", 7, 2) + b"\x1b[2Jno\0")
        else:
            time.sleep(5)
        c.close()
finally:
    os.unlink(p)
' "$d" "$how" "$tmp/fake-$how" &
		kids="$kids $!"
	done
	for how in big wrong deny silent; do
		i=0
		while [ $i -lt 50 ] && [ ! -s "$tmp/fake-$how" ]; do
			sleep 0.1
			i=$((i + 1))
		done
		rt_wait_socket "$d/$(cat "$tmp/fake-$how").sock"
	done
	start=$(date +%s)
	timeout 20 "$rt" ps >"$tmp/ps.out" 2>"$tmp/ps.err" || fail "ps failed ($?): $(cat "$tmp/ps.err")"
	[ $(($(date +%s) - start)) -lt 10 ] || fail "ps took too long"
	big=$(cat "$tmp/fake-big") wrong=$(cat "$tmp/fake-wrong")
	deny=$(cat "$tmp/fake-deny") silent=$(cat "$tmp/fake-silent")
	grep -q "$big.sock: attach: message of type 1 says 100000 bytes" "$tmp/ps.err" ||
		fail "no error for the oversized message: $(cat "$tmp/ps.err")"
	grep -q "$wrong.sock: an answer of type 1 and 8 bytes, not a hello" "$tmp/ps.err" ||
		fail "no error for the wrong hello: $(cat "$tmp/ps.err")"
	grep -qF "$deny.sock: \\x1b[2Jno" "$tmp/ps.err" ||
		fail "the refusal text not shown escaped: $(cat "$tmp/ps.err")"
	grep -q "$silent.sock: attach: reading a message header" "$tmp/ps.err" ||
		fail "no error for the silent listener: $(cat "$tmp/ps.err")"
	! grep -q "$(printf '\033')" "$tmp/ps.err" "$tmp/ps.out" || fail "an escape byte reached the output"
	for f in $big $wrong $deny $silent; do
		awk -v p="$f" '$1 == p { exit 1 }' "$tmp/ps.out" || fail "fake $f listed"
	done
}

directory_not_ours_makes_program_unattachable() { # case
	need_root
	d=/tmp/ringtrace-65534
	as_user 65534 "$rt" ps >/dev/null # (its stale sockets cleared)
	[ ! -e "$d" ] || rm -rf "$d"
	mkdir -m 0777 "$d" # root's, open to all: not the user's
	out=$(as_user 65534 env RINGTRACE_ATTACH=1 "$demo" --seconds 0.2 --threads 1 2>&1 >/dev/null) ||
		{ rm -rf "$d"; fail "the demo failed: $out"; }
	n=$(find "$d" -name '*.sock' | wc -l)
	rm -rf "$d"
	[ "$n" = 0 ] || fail "a socket in a directory that is not the user's"
	echo "$out" | grep -q "not attachable: attach directory $d: not a directory of uid 65534" ||
		fail "no message saying why: $out"
}

prog="$bin/test_attach_prog"

# start_prog THREADS [ARGS...]: test_attach_prog in the background until
# stop_prog; pid in $pid, its stdout in $tmp/prog.out.
start_prog() {
	th=$1
	shift
	rm -f "$tmp/stop"
	"$prog" "$th" 600 --stop-file "$tmp/stop" "$@" >"$tmp/prog.out" 2>"$tmp/prog.err" &
	pid=$!
	kids="$kids $pid"
	rt_wait_socket "$(rt_own_dir)/$pid.sock"
	[ -S "$(rt_own_dir)/$pid.sock" ] || fail "test_attach_prog has no socket"
	# (its workers are running once it says "ready": its footprint is
	# what it will be; bounded, 5 s)
	rt_wait_for 50 grep -q '^ready$' "$tmp/prog.out"
	grep -q '^ready$' "$tmp/prog.out" || fail "test_attach_prog not ready: $(cat "$tmp/prog.err")"
}

# stop_prog: it ends, and its own check of its work passed.
stop_prog() {
	touch "$tmp/stop"
	wait "$pid" || fail "test_attach_prog failed: $(cat "$tmp/prog.err")"
	grep -q "^done .* ok$" "$tmp/prog.out" || fail "its work is wrong: $(cat "$tmp/prog.out")"
}

# footprint PID: threads, descriptors, mapped KiB.
footprint() {
	echo "threads=$(ls /proc/"$1"/task | wc -l) fds=$(ls /proc/"$1"/fd | wc -l)" \
		"vm=$(awk '/^VmSize/ {print $2}' /proc/"$1"/status)"
}

# state PID: the line test_attach_prog prints on SIGUSR1.
state() {
	n=$(grep -c '^state' "$tmp/prog.out" || true)
	kill -USR1 "$1"
	i=0
	while [ $i -lt 50 ] && [ "$(grep -c '^state' "$tmp/prog.out" || true)" = "$n" ]; do
		sleep 0.1
		i=$((i + 1))
	done
	grep '^state' "$tmp/prog.out" | tail -1
}

# check_trace DIR: the at_seq events of each worker in sequence, with
# gaps only as many as counted drops; `ringtrace report` shows every
# event the trace's counters say it holds.
check_trace() {
	[ -f "$1/metadata" ] || fail "no metadata in $1"
	"$rt" report "$1" >"$tmp/report" || fail "report $1 failed"
	# (read: the events written out, every committed one in discard mode,
	# the last buffer's in overwrite mode)
	hit=$("$rt" stat "$1" | awk '$1 == "read" {print $2}')
	# (losses: dropped when the buffer was full, or overwritten in a flight
	# recorder; either is counted)
	missed=$("$rt" stat "$1" | awk '$1 == "missed" || $1 == "overrun" {n += $2} END {print n + 0}')
	n=$(grep -vc 'events lost \*\*\*' "$tmp/report" || true)
	[ "$n" -gt 0 ] || fail "no events in $1"
	[ "$n" = "$hit" ] || fail "$1: report shows $n events, stat says $hit were written (read)"
	awk -v missed="$missed" '
	/ at_seq: / {
		for (i = 1; i <= NF; i++) {
			if ($i ~ /^worker=/) w = substr($i, 8)
			if ($i ~ /^seq=/) s = substr($i, 5) + 0
		}
		if (w in last) {
			if (s <= last[w]) { print "worker " w ": seq " s " after " last[w]; bad = 1 }
			lost += s - last[w] - 1
		}
		last[w] = s
	}
	END {
		if (lost > missed * 1) { print "lost " lost " at_seq events, counted " missed; bad = 1 }
		exit bad
	}' "$tmp/report" || fail "$1: events out of sequence"
}

record_p_records_running_program_and_detaches() { # case
	start_prog 2
	before=$(footprint "$pid")
	"$rt" record -p "$pid" --duration 0.5 -o "$tmp/t-$rt_c" 2>"$tmp/rec.err" ||
		fail "record -p failed: $(cat "$tmp/rec.err")"
	grep -q "recording 1 program into $tmp/t-$rt_c (attached in" "$tmp/rec.err" ||
		fail "no start line: $(cat "$tmp/rec.err")"
	grep -q "ringtrace: pid $pid (test_attach_pro): [1-9][0-9]* events recorded" "$tmp/rec.err" ||
		fail "no summary: $(cat "$tmp/rec.err")"
	check_trace "$tmp/t-$rt_c/test_attach_pro-$pid"
	after=$(footprint "$pid")
	# (the read-side nodes a session maps stay, for the next: not the VM size)
	[ "${before% vm=*}" = "${after% vm=*}" ] || fail "left behind: before $before, after $after"
	[ "$(state "$pid")" = "state at_seq=0/0 at_val=0/0 triggers=0 tracing=1" ] ||
		fail "tracing not off after detach: $(state "$pid")"
	stop_prog
}

record_p_attach_detach_100_times_without_leaks() { # case
	start_prog 2
	"$rt" record -q -p "$pid" --duration 0.02 -o "$tmp/c0-$rt_c" || fail "first cycle failed"
	first=$(footprint "$pid")
	c=1
	while [ $c -le 100 ]; do
		"$rt" record -q -p "$pid" --duration 0.02 -o "$tmp/c$c-$rt_c" 2>"$tmp/rec.err" ||
			fail "cycle $c failed: $(cat "$tmp/rec.err")"
		hit=$("$rt" stat "$tmp/c$c-$rt_c/test_attach_pro-$pid" | awk '$1 == "hit" {print $2}')
		[ "${hit:-0}" -gt 0 ] || fail "cycle $c recorded nothing"
		rm -rf "$tmp/c$c-$rt_c"
		c=$((c + 1))
	done
	last=$(footprint "$pid")
	# (a sanitizer's allocator reserves address space as it goes: there
	# the VM size says nothing, and the sanitizer itself checks for leaks
	# when the program exits)
	# The read-side nodes (8 KiB each) are a list that only grows, to the
	# most threads that ever ran at once: a session's consumer thread
	# that has not quite exited when the next session starts can make it
	# one longer, once in a while (seen: one node in 100 cycles). A leak
	# per cycle would be 100 of something.
	if grep -qa -e __tsan_init -e __asan_init "$prog"; then
		vm_first=0 vm_last=0
	else
		vm_first=${first##*vm=} vm_last=${last##*vm=}
	fi
	first=${first% vm=*} last=${last% vm=*}
	[ "$first" = "$last" ] || fail "grew over 100 cycles: after the first $first, after 100 $last"
	[ $((vm_last - vm_first)) -le 32 ] ||
		fail "VM size grew by $((vm_last - vm_first)) KiB over 100 cycles"
	stop_prog
}

record_p_detach_restores_events_filters_and_triggers() { # case
	start_prog 1 --filter
	before=$(state "$pid")
	[ "$before" = "state at_seq=0/0 at_val=0/1 triggers=1 tracing=1" ] || fail "start state: $before"
	"$rt" record -q -p "$pid" -e at_seq -f 'seq > 10' --trigger 'at_val if value == 3: traceoff' \
		--duration 1 -o "$tmp/t-$rt_c" &
	rpid=$!
	kids="$kids $rpid"
	i=0
	during=""
	while [ $i -lt 50 ] && [ "$during" != "state at_seq=1/1 at_val=0/1 triggers=2 tracing=0" ]; do
		sleep 0.1
		during=$(state "$pid")
		i=$((i + 1))
	done
	[ "$during" = "state at_seq=1/1 at_val=0/1 triggers=2 tracing=0" ] ||
		fail "the session's settings not in force: $during"
	wait "$rpid" || fail "record -p failed"
	after=$(state "$pid")
	[ "$after" = "$before" ] || fail "not put back: before '$before', after '$after'"
	stop_prog
}

record_p_refuses_a_program_recorded_already() { # case
	rm -f "$tmp/stop"
	"$rt" record -q -o "$tmp/rec-$rt_c" -- "$prog" 1 600 --stop-file "$tmp/stop" >/dev/null 2>&1 &
	rpid=$!
	kids="$kids $rpid"
	i=0
	cpid=""
	while [ $i -lt 50 ] && [ -z "$cpid" ]; do
		sleep 0.1
		cpid=$(pgrep -P "$rpid" test_attach_pro || true)
		i=$((i + 1))
	done
	[ -n "$cpid" ] || fail "no program under record"
	rt_wait_socket "$(rt_own_dir)/$cpid.sock"
	if "$rt" record -q -p "$cpid" -o "$tmp/t-$rt_c" 2>"$tmp/rec.err"; then
		fail "record -p of a recorded program succeeded"
	fi
	grep -q "pid $cpid (test_attach_pro): busy" "$tmp/rec.err" || fail "not busy: $(cat "$tmp/rec.err")"
	[ ! -e "$tmp/t-$rt_c/test_attach_pro-$cpid" ] || fail "a trace directory left for the refused program"
	touch "$tmp/stop"
	wait "$rpid" || fail "the recorded program failed"
	[ -f "$tmp/rec-$rt_c/metadata" ] || fail "its own recording was disturbed"
}

record_p_ends_when_the_program_exits() { # case
	start_prog 1
	"$rt" record -p "$pid" -o "$tmp/t-$rt_c" 2>"$tmp/rec.err" &
	rpid=$!
	kids="$kids $rpid"
	# (the program ends once its events are on disk: a program that ran
	# for a fixed time could end before a slow attach had begun)
	rt_wait_for 300 test -s "$tmp/t-$rt_c/test_attach_pro-$pid/stream_1"
	[ -s "$tmp/t-$rt_c/test_attach_pro-$pid/stream_1" ] ||
		fail "nothing recorded in 30 s: $(cat "$tmp/rec.err")"
	stop_prog
	rst=0
	wait "$rpid" || rst=$?
	[ "$rst" = 0 ] || fail "record -p failed ($rst): $(cat "$tmp/rec.err")"
	grep -q "pid $pid (test_attach_pro) exited; its trace is complete" "$tmp/rec.err" ||
		fail "no exit line: $(cat "$tmp/rec.err")"
	check_trace "$tmp/t-$rt_c/test_attach_pro-$pid"
}

# detached_from_dead RECORDER PID: the dead recorder's pool is gone and
# PID traces nothing, as before it was attached to.
detached_from_dead() {
	! ls /dev/shm/ringtrace-rec-"$1"-* >/dev/null 2>&1 &&
		[ "$(state "$2")" = "state at_seq=0/0 at_val=0/0 triggers=0 tracing=1" ]
}

record_p_killed_recorder_stops_tracing() { # case
	start_prog 1
	before=$(footprint "$pid")
	"$rt" record -q -p "$pid" -o "$tmp/t-$rt_c" &
	rpid=$!
	i=0
	while [ $i -lt 50 ] && [ ! -f "$tmp/t-$rt_c/test_attach_pro-$pid/stream_1" ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ -f "$tmp/t-$rt_c/test_attach_pro-$pid/stream_1" ] || fail "not recording"
	kill -9 "$rpid"
	wait "$rpid" 2>/dev/null || true
	# (the bound: stopped within a second, its pool freed)
	rt_wait_for 10 detached_from_dead "$rpid" "$pid"
	! ls /dev/shm/ringtrace-rec-"$rpid"-* >/dev/null 2>&1 || fail "its pool is left: $(ls /dev/shm)"
	[ "$(state "$pid")" = "state at_seq=0/0 at_val=0/0 triggers=0 tracing=1" ] ||
		fail "still tracing a second after the recorder died: $(state "$pid")"
	after=$(footprint "$pid")
	[ "${before% vm=*}" = "${after% vm=*}" ] || fail "left behind: before $before, after $after"
	check_trace "$tmp/t-$rt_c/test_attach_pro-$pid"
	stop_prog
}

record_p_ctrl_c_stops_and_detaches() { # case
	start_prog 2
	"$rt" record -p "$pid" -o "$tmp/t-$rt_c" 2>"$tmp/rec.err" &
	rpid=$!
	kids="$kids $rpid"
	i=0
	while [ $i -lt 50 ] && ! grep -q recording "$tmp/rec.err"; do
		sleep 0.1
		i=$((i + 1))
	done
	# (events written before the Ctrl-C)
	rt_wait_for 50 test -s "$tmp/t-$rt_c/test_attach_pro-$pid/stream_1"
	kill -INT "$rpid"
	wait "$rpid" || fail "record -p after SIGINT: exit $?: $(cat "$tmp/rec.err")"
	grep -q "detached in" "$tmp/rec.err" || fail "no detach line: $(cat "$tmp/rec.err")"
	check_trace "$tmp/t-$rt_c/test_attach_pro-$pid"
	stop_prog
}

record_p_other_user_refused_root_allowed() { # case
	need_root
	rm -f "$tmp/stop"
	chmod 777 "$tmp"
	setpriv --reuid=65534 --regid=65534 --clear-groups -- "$prog" 1 600 --stop-file "$tmp/stop" \
		>"$tmp/prog.out" 2>&1 &
	npid=$!
	kids="$kids $npid"
	rt_wait_socket "/tmp/ringtrace-65534/$npid.sock"
	if as_user 1 "$rt" record -q -p "$npid" --duration 0.2 -o "$tmp/u1-$rt_c" 2>"$tmp/rec.err"; then
		fail "uid 1 recorded uid 65534's program"
	fi
	grep -q "pid $npid runs as uid 65534: only its own user or root may record it" "$tmp/rec.err" ||
		fail "no refusal: $(cat "$tmp/rec.err")"
	"$rt" record -q -p "$npid" --duration 0.3 -o "$tmp/root-$rt_c" 2>"$tmp/rec.err" ||
		fail "root could not record it: $(cat "$tmp/rec.err")"
	d="$tmp/root-$rt_c/test_attach_pro-$npid"
	[ "$(stat -c %u "$d")" = 65534 ] || fail "its trace directory is not the program's user's"
	[ "$(stat -c %u "$d/metadata")" = 65534 ] || fail "its files are not the program's user's"
	check_trace "$d"
	touch "$tmp/stop"
	wait "$npid" || fail "the program failed"
	grep -q "^done .* ok$" "$tmp/prog.out" || fail "its work is wrong"
}

record_p_exact_values_read_back_with_babeltrace2() { # case
	command -v babeltrace2 >/dev/null || fail "babeltrace2 is not installed (make check installs it)"
	start_prog 2
	"$rt" record -q -p "$pid" --duration 0.3 -o "$tmp/t-$rt_c" || fail "record -p failed"
	stop_prog
	babeltrace2 "$tmp/t-$rt_c/test_attach_pro-$pid" 2>/dev/null >"$tmp/bt" || fail "babeltrace2 failed"
	# every at_val follows its worker's at_seq, with value = seq % 1000
	awk '
	/ at_seq: / { match($0, /worker = [0-9]+, seq = [0-9]+/); split(substr($0, RSTART, RLENGTH), a, /[ =,]+/)
		seq[a[2]] = a[4]; nseq++ }
	/ at_val: / { match($0, /worker = [0-9]+, value = -?[0-9]+/); split(substr($0, RSTART, RLENGTH), a, /[ =,]+/)
		if (!(a[2] in seq)) next
		if (a[4] != seq[a[2]] % 1000) { print "worker " a[2] ": value " a[4] " after seq " seq[a[2]]; bad = 1 }
		nval++ }
	END { if (nseq < 100 || nval < 100) { print "too few events: " nseq " " nval; bad = 1 }; exit bad }
	' "$tmp/bt" || fail "values read back wrong"
	[ "$(wc -l <"$tmp/bt")" = "$("$rt" stat "$tmp/t-$rt_c/test_attach_pro-$pid" | awk '$1 == "hit" {print $2}')" ] ||
		fail "babeltrace2 and stat disagree on the count"
}

list_p_lists_a_running_programs_events() { # case
	start_prog 1 --filter
	before=$(state "$pid")
	"$rt" list -p "$pid" >"$tmp/list" 2>"$tmp/list.err" || fail "list -p failed: $(cat "$tmp/list.err")"
	grep -q "^  [0-9]* at_seq (instant)$" "$tmp/list" || fail "no at_seq: $(cat "$tmp/list")"
	grep -q "^      seq  *u64 (size 8, unsigned" "$tmp/list" || fail "no seq field: $(cat "$tmp/list")"
	grep -q "^      value  *s32 (size 4, signed" "$tmp/list" || fail "no value field: $(cat "$tmp/list")"
	[ "$(state "$pid")" = "$before" ] || fail "changed by list -p: before '$before', after '$(state "$pid")'"
	"$rt" list -p 999999999 2>"$tmp/list.err" && fail "list -p of no process succeeded"
	grep -q "pid 999999999: no such process" "$tmp/list.err" || fail "no error: $(cat "$tmp/list.err")"
	stop_prog
}

record_a_records_every_program_and_those_that_start() { # case
	need_root
	u=4243 # (a user of this case's own: -a records all of a user's programs)
	# (setpriv, not as_user: $! must be the program's pid)
	d="$tmp/all-$rt_c"
	mkdir -p "$d"
	chown "$u:$u" "$d"
	rm -f "$d/stop"
	for k in 1 2; do
		setpriv --reuid="$u" --regid="$u" --clear-groups -- "$prog" 1 600 --stop-file "$d/stop" \
			>"$d/prog$k.out" 2>&1 &
		eval "p$k=\$!"
		kids="$kids $!"
	done
	rt_wait_socket "/tmp/ringtrace-$u/$p1.sock"
	rt_wait_socket "/tmp/ringtrace-$u/$p2.sock"
	setpriv --reuid="$u" --regid="$u" --clear-groups -- "$rt" record -a --duration 2 -o "$d/t" \
		2>"$d/rec.err" &
	rpid=$!
	kids="$kids $rpid"
	sleep 0.7
	setpriv --reuid="$u" --regid="$u" --clear-groups -- "$prog" 1 600 --stop-file "$d/stop" \
		>"$d/prog3.out" 2>&1 &
	p3=$!
	kids="$kids $p3"
	wait "$rpid" || fail "record -a failed: $(cat "$d/rec.err")"
	grep -q "recording every program and those that start into $d/t (2 running" "$d/rec.err" ||
		fail "no start line: $(cat "$d/rec.err")"
	touch "$d/stop"
	for k in 1 2 3; do
		eval "p=\$p$k"
		wait "$p" || fail "program $k failed"
		grep -q "^done .* ok$" "$d/prog$k.out" || fail "program $k: its work is wrong"
		[ -f "$d/t/test_attach_pro-$p/metadata" ] ||
			fail "program $k (pid $p) not recorded: $(cat "$d/rec.err")"
		check_trace "$d/t/test_attach_pro-$p"
	done
	n=$(ls "$d/t" | wc -l)
	[ "$n" = 3 ] || fail "$n traces, not 3: $(ls "$d/t")"
}

record_a_cmd_records_the_command_and_its_programs_from_their_first_event() { # case
	"$rt" record -q -a -o "$tmp/t-$rt_c" -- sh -c "'$prog' 1 0.3 & '$prog' 2 0.3; wait" \
		>"$tmp/prog.out" 2>"$tmp/rec.err" || fail "record -a -- CMD failed: $(cat "$tmp/rec.err")"
	[ "$(grep -c '^done .* ok$' "$tmp/prog.out")" = 2 ] || fail "the programs: $(cat "$tmp/prog.out")"
	nt=0
	for t in "$tmp/t-$rt_c"/test_attach_pro-*; do
		check_trace "$t"
		# from its first event: each worker's first at_seq is seq 1
		awk '/ at_seq: / && !($5 in first) { first[$5] = $6 }
		     END { for (w in first) if (first[w] != "seq=1") { print w, first[w]; bad = 1 }; exit bad }' \
			"$tmp/report" || fail "$t does not start at the first event"
		nt=$((nt + 1))
	done
	[ "$nt" = 2 ] || fail "$nt traces, not 2: $(ls "$tmp/t-$rt_c")"
}

# check_pingpong FILE: lines "sN" / "gN" (sent, got by role N) and the
# token, in file order, are exactly: s0 g1 s1 g0 for each token in turn.
check_pingpong() {
	awk -v tokens="$2" 'BEGIN { n = 1; st = 0; split("s0 g1 s1 g0", want, " ") }
	{
		if ($1 != want[st + 1] || $2 != n) {
			print "line " NR ": " $1 " " $2 ", expected " want[st + 1] " " n; exit 1
		}
		if (++st == 4) { st = 0; n++ }
	}
	END { if (n != tokens + 1 || st) { print "ended at token " n " step " st; exit 1 } }' "$1"
}

collection_orders_events_of_processes_by_cause() { # case
	command -v babeltrace2 >/dev/null || fail "babeltrace2 is not installed (make check installs it)"
	pp="$bin/test_pingpong_prog"
	mkfifo "$tmp/a-$rt_c" "$tmp/b-$rt_c"
	c="$tmp/t-$rt_c"
	"$rt" record -q -a -o "$c" -- sh -c "'$pp' ping 3000 '$tmp/a-$rt_c' '$tmp/b-$rt_c' &
		'$pp' pong 3000 '$tmp/b-$rt_c' '$tmp/a-$rt_c'; wait" 2>"$tmp/rec.err" ||
		fail "record -a failed: $(cat "$tmp/rec.err")"
	[ "$(ls "$c" | wc -l)" = 2 ] || fail "not two traces: $(ls "$c")"
	# one clock conversion for both; each names its process
	[ "$(grep -h '^clock \(tsc\|monotonic\) ' "$c"/*/metadata | sort -u | wc -l)" = 1 ] ||
		fail "the traces convert the clock differently: $(grep -h '^clock ' "$c"/*/metadata)"
	# and one wall-clock offset (CTF readers place events by it too)
	[ "$(grep -h '^realtime_offset -\{0,1\}[0-9]*$' "$c"/*/metadata | sort -u | wc -l)" = 1 ] ||
		fail "the traces declare different wall-clock offsets: $(grep -h '^realtime_offset' "$c"/*/metadata)"
	for t in "$c"/*; do
		p=${t##*-}
		grep -q "^	pid = $p;$" "$t/metadata" || fail "$t: no env pid $p"
		grep -q '^	procname = "test_pingpong_p";$' "$t/metadata" || fail "$t: no env procname"
	done
	"$rt" report "$c" | sed -n 's/.* pp_\(s\|g\)[a-z]*: role=\([01]\) n=\([0-9]*\)$/\1\2 \3/p' \
		>"$tmp/ours"
	check_pingpong "$tmp/ours" 3000 || fail "ringtrace report: an event before its cause"
	babeltrace2 "$c" 2>/dev/null |
		sed -n 's/.* pp_\(s\|g\)[a-z]*: .*{ role = \([01]\), n = \([0-9]*\) }$/\1\2 \3/p' >"$tmp/theirs"
	check_pingpong "$tmp/theirs" 3000 || fail "babeltrace2: an event before its cause"
	# stat: each trace under its name and process, and the totals
	"$rt" stat "$c" >"$tmp/stat" || fail "stat of the collection failed"
	[ "$(grep -c '^== test_pingpong_p-[0-9]*: pid [0-9]* (test_pingpong_p) ' "$tmp/stat")" = 2 ] ||
		fail "stat: not two traces named: $(cat "$tmp/stat")"
	grep -q "^collection $c: 2 traces, 12000 events, 0 dropped, 0 overrun$" "$tmp/stat" ||
		fail "stat: no totals: $(tail -2 "$tmp/stat")"
	# export: each process its own pid and name
	"$rt" export --format=json "$c" -o "$tmp/c.json" || fail "export failed"
	python3 - "$tmp/c.json" "$c" <<'PY' || fail "export: processes wrong"
import json, os, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
pids = sorted(int(d.rsplit("-", 1)[1]) for d in os.listdir(sys.argv[2]))
names = {e["pid"]: e["args"]["name"] for e in ev if e["name"] == "process_name"}
assert sorted(names) == pids, (names, pids)
assert set(names.values()) == {"test_pingpong_p"}, names
count = {p: sum(1 for e in ev if e["pid"] == p and e["ph"] == "i") for p in pids}
assert all(n == 6000 for n in count.values()), count
PY
}

record_p_crashed_program_events_recovered() { # case
	start_prog 2
	"$rt" record -p "$pid" -o "$tmp/t-$rt_c" 2>"$tmp/rec.err" &
	rpid=$!
	kids="$kids $rpid"
	d="$tmp/t-$rt_c/test_attach_pro-$pid"
	i=0
	while [ $i -lt 50 ] && [ ! -f "$d/stream_1" ]; do
		sleep 0.1
		i=$((i + 1))
	done
	sleep 0.3
	kill -SEGV "$pid"
	wait "$rpid" || fail "record -p after the crash: exit $?: $(cat "$tmp/rec.err")"
	wait "$pid" 2>/dev/null && fail "the program did not crash"
	grep -q "pid $pid (test_attach_pro) ended without finishing its trace" "$tmp/rec.err" ||
		fail "the crash not said: $(cat "$tmp/rec.err")"
	grep -q "recovered [0-9]* pages from the pool" "$tmp/rec.err" ||
		fail "nothing recovered: $(cat "$tmp/rec.err")"
	check_trace "$d"
	! ls /dev/shm/ringtrace-rec-"$rpid"-* >/dev/null 2>&1 || fail "the pool is left in /dev/shm"
}

record_p_program_gone_during_attach_is_said() { # case
	py=/usr/bin/python3
	[ -x "$py" ] || skip "needs /usr/bin/python3 (a program that goes away during the attach)"
	dir=$(rt_own_dir)
	mkdir -p "$dir"
	chmod 700 "$dir"
	# says HELLO as a program would, then closes when asked to RECORD
	"$py" -c '
import os, socket, struct, sys
d = sys.argv[1]
p = "%s/%d.sock" % (d, os.getpid())
s = socket.socket(socket.AF_UNIX)
s.bind(p)
s.listen(4)
open(sys.argv[2], "w").write(str(os.getpid()))
try:
    c, _ = s.accept()
    hello = struct.pack("6I16s1024s2I3Q", 0x54415452, 2, os.getpid(), os.geteuid(), 1, 0,
                        b"vanishing", b"/bin/vanishing", 0, 0, 0, 0, 0)
    c.sendall(struct.pack("II", len(hello), 1) + hello)
    c.recv(8)
    c.close()
finally:
    os.unlink(p)
' "$dir" "$tmp/fake" &
	kids="$kids $!"
	i=0
	while [ $i -lt 50 ] && [ ! -s "$tmp/fake" ]; do
		sleep 0.1
		i=$((i + 1))
	done
	fpid=$(cat "$tmp/fake")
	rt_wait_socket "$dir/$fpid.sock"
	start=$(date +%s)
	if "$rt" record -p "$fpid" -o "$tmp/t-$rt_c" 2>"$tmp/rec.err"; then
		fail "record -p of a program that went away succeeded"
	fi
	[ $(($(date +%s) - start)) -lt 5 ] || fail "waited for it"
	grep -q "pid $fpid (vanishing): the connection ended during the attach" "$tmp/rec.err" ||
		fail "not said: $(cat "$tmp/rec.err")"
	[ ! -e "$tmp/t-$rt_c/vanishing-$fpid" ] || fail "its trace directory is left"
}

record_p_leaves_alone_a_session_the_program_started_itself() { # case
	start_prog 1 --own-session "$tmp/own-$rt_c"
	"$rt" record -p "$pid" -o "$tmp/t-$rt_c" 2>"$tmp/rec.err" &
	rpid=$!
	kids="$kids $rpid"
	i=0
	while [ $i -lt 50 ] && [ ! -f "$tmp/t-$rt_c/test_attach_pro-$pid/stream_1" ]; do
		sleep 0.1
		i=$((i + 1))
	done
	kill -USR2 "$pid" # the program stops the attached session, starts its own
	i=0
	while [ $i -lt 50 ] && ! grep -q "^own session$" "$tmp/prog.out"; do
		sleep 0.1
		i=$((i + 1))
	done
	grep -q "^own session$" "$tmp/prog.out" || fail "the program did not start its own session"
	kill -INT "$rpid"
	wait "$rpid" && fail "record -p said nothing of the session it lost"
	grep -q "pid $pid (test_attach_pro): the program stopped the session itself" "$tmp/rec.err" ||
		fail "not said: $(cat "$tmp/rec.err")"
	# its own session records on, untouched by the recorder's stop
	[ "$(state "$pid")" = "state at_seq=1/0 at_val=1/0 triggers=0 tracing=1" ] ||
		fail "the program's own session was undone: $(state "$pid")"
	stop_prog
	check_trace "$tmp/own-$rt_c"
	check_trace "$tmp/t-$rt_c/test_attach_pro-$pid"
}

record_p_overwrite_keeps_the_last_buffer_of_a_running_program() { # case
	start_prog 2
	"$rt" record -q -p "$pid" --overwrite --buffer-size 1m --duration 0.5 -o "$tmp/t-$rt_c" ||
		fail "record -p --overwrite failed"
	d="$tmp/t-$rt_c/test_attach_pro-$pid"
	over=$("$rt" stat "$d" | awk '$1 == "overrun" {print $2}')
	[ "${over:-0}" -gt 0 ] || fail "nothing overwritten in a 1 MiB flight recorder over 0.5 s"
	[ "$("$rt" stat "$d" | awk '$1 == "mode" {print $2}')" = 1 ] || fail "not recorded in overwrite mode"
	check_trace "$d"
	stop_prog
}

rt_run_cases "$@"
