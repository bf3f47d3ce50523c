#!/bin/sh
# Kernel events beside the user events (ringtrace record -k, docs/kernel.md),
# as root (CI runs as root; elsewhere every case says it needs root):
#  - a program that records a user event, sleeps 1 ms and repeats: between
#    two of its events the collection holds, in time order, a sched_switch
#    away from its thread, a sched_wakeup of it and a sched_switch back to
#    it, read with babeltrace2 and with ringtrace report;
#  - the kernel trace is on the clock of the program's (one clock line);
#  - only the recorded program's threads unless --kernel-all;
#  - a tiny kernel buffer under load: its losses counted and shown by stat;
#  - the tracefs instance is gone after the run, after SIGINT, and after a
#    SIGKILL of the recorder (removed by the next start);
#  - an unknown kernel event, or no root: a clear message, and the user
#    events still recorded;
#  - the kernel buffers are drained while the program runs: a run that
#    writes many times the kernel buffer loses nothing;
#  - -k with -p (a running program) and with -a -- CMD.
# Each is a case (tests/cases.sh).
#   usage: test_kernel.sh BIN_DIR [CASE...] | --list
set -eu
. "$(dirname "$0")/cases.sh"
bin=$1
shift
rt="$bin/ringtrace"
prog="$bin/test_sleep_prog"
tmp=$(mktemp -d /tmp/ringtrace-kernel-XXXXXX)
chmod 755 "$tmp"
witness=""
cleanup() {
	drop_instance "$witness"
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "test_kernel: ${rt_c:-}: $*" >&2; exit 1; }
skip() { echo "${rt_c:-test_kernel}: SKIPPED: $*"; exit 77; }
. "$(dirname "$0")/tracefs.sh"

# The instances of this machine that a ringtrace recorder made and left:
# its pid (in the name) is gone. (A recorder still running is not one of
# this script's, whose recorders have all ended when it looks: another
# recording on the machine, say.)
# instance_of PID: the recorder PID has made its tracefs instance.
instance_of() { ls "$tracing/instances" | grep -q "^ringtrace-$1-"; }

our_instances() {
	for i in $(ls "$tracing/instances" 2>/dev/null | grep -E '^ringtrace-[0-9]+-[0-9a-f]{16}$'); do
		r=${i#ringtrace-}
		kill -0 "${r%%-*}" 2>/dev/null || echo "$i"
	done
}

kernel_switch_wakeup_switch_between_user_events() { # case
	need_tracefs
	w="$tmp/$rt_c" # (each case its own directory: they may run in one process)
	mkdir -p "$w"
	# A witness: a tracefs instance of the test's own records the same
	# events on the same counter, so that a switch the kernel did not record
	# (this VM's kernel records none out of CPU 1's idle task, and misses
	# one out of CPU 0's now and then, docs/kernel.md) is told from one the
	# recorder lost.
	wi="$tracing/instances/rt-test-witness-$$"
	rmdir "$wi" 2>/dev/null || true
	mkdir "$wi" || fail "cannot make the witness instance $wi"
	witness="$wi"
	echo x86-tsc >"$wi/trace_clock" && echo 8192 >"$wi/buffer_size_kb" &&
		echo 1 >"$wi/events/sched/sched_switch/enable" &&
		echo 1 >"$wi/events/sched/sched_wakeup/enable" && echo 1 >"$wi/tracing_on" ||
		fail "cannot set the witness instance up"
	# (on CPU 0, for the switch back out of the idle task; the recorder and
	# the program share it)
	taskset -c 0 "$rt" record -q -k sched:sched_switch,sched:sched_wakeup -o "$w/t" \
		-- "$prog" 50 2>"$w/rec.err" || fail "record -k failed: $(cat "$w/rec.err")"
	echo 0 >"$wi/tracing_on"
	cat "$wi/trace" >"$w/witness"
	rmdir "$wi" && witness="" || fail "cannot remove the witness instance"
	p=$(ls "$w/t" | sed -n 's/^test_sleep_prog-//p')
	[ -n "$p" ] && [ -f "$w/t/kernel/metadata" ] || fail "no collection: $(ls "$w/t")"
	[ "$(grep -h '^clock \(tsc\|monotonic\) ' "$w/t"/*/metadata | sort -u | wc -l)" = 1 ] ||
		fail "the kernel trace is on another clock: $(grep -h '^clock ' "$w/t"/*/metadata)"
	[ "$(grep -h '^realtime_offset -\{0,1\}[0-9]*$' "$w/t"/*/metadata | sort -u | wc -l)" = 1 ] ||
		fail "the kernel trace declares another wall-clock offset: $(grep -h '^realtime_offset' "$w/t"/*/metadata)"
	# a: away from it, w: its wake-up, b: back to it, u: its user event
	babeltrace2 "$w/t" 2>/dev/null | awk -v p="$p" '
		/ sl_tick: / { print "u"; next }
		/ sched_switch: / && $0 ~ ("prev_pid = " p ",") { print "a"; next }
		/ sched_switch: / && $0 ~ ("next_pid = " p ",") { print "b"; next }
		/ sched_wakeup: / && $0 ~ (" pid = " p ",") { print "w"; next }' | tr -d '\n' >"$w/seq"
	gaps=$(sed 's/^[^u]*u//' "$w/seq" | tr 'u' '\n' | head -n -1 | wc -l)
	[ "$gaps" = 49 ] || fail "babeltrace2 shows $gaps gaps between 50 user events: $(cat "$w/seq")"
	# every gap between two user events (after the first) holds a, w, b in
	# order, unless the witness shows the kernel did not record them either
	# (then at most 3 such gaps: more and the test says nothing)
	"$rt" report --raw "$w/t" >"$w/raw"
	awk -v p="$p" -v wf="$w/witness" '
		# (the counter value before "EVENT: ", in the witness after its flags)
		function ts(line,   m) {
			if (!match(line, / [0-9]+: [a-z_]+: /)) return -1
			m = substr(line, RSTART + 1, RLENGTH - 1); sub(/:.*/, "", m); return m + 0
		}
		BEGIN {
			while ((getline l < wf) > 0) {
				if (l !~ / sched_(switch|wakeup): /) continue
				t = ts(l)
				if (l ~ (" next_pid=" p " ")) B[++nb] = t
				else if (l ~ (" prev_pid=" p " ")) A[++na] = t
				else if (l ~ / sched_wakeup: / && l ~ (" pid=" p " ")) W[++nw] = t
			}
		}
		function has(X, n, a, b,   i) { for (i = 1; i <= n; i++) if (X[i] > a && X[i] < b) return 1; return 0 }
		/ sl_tick: / {
			t = ts($0)
			if (seen && st != 3) {
				if (has(A, na, prev, t) && has(W, nw, prev, t) && has(B, nb, prev, t)) {
					printf "lost: between the user events at %.0f and %.0f (ticks) the kernel recorded the switch away, the wake-up and the switch back; the trace lacks one\n", prev, t; bad = 1
				} else kmiss++
			}
			seen = 1; prev = t; st = 0; next
		}
		/ sched_switch: / && $0 ~ (" prev_pid=" p " ") { if (st == 0) st = 1; next }
		/ sched_wakeup: / && $0 ~ (" pid=" p " ") { if (st == 1) st = 2; next }
		/ sched_switch: / && $0 ~ (" next_pid=" p " ") { if (st == 2) st = 3; next }
		END {
			if (kmiss > 3) { print kmiss " sleeps the kernel did not record whole (witness too): too many to test"; bad = 1 }
			else if (kmiss) print "note: " kmiss " sleep(s) the kernel itself did not record whole (the witness neither)"
			exit bad
		}' "$w/raw" >"$w/gaps" || fail "$(cat "$w/gaps"): $(cat "$w/seq")"
	cat "$w/gaps"
	# ringtrace report: the same order
	"$rt" report "$w/t" | awk -v p="$p" '
		/ sl_tick: / { print "u"; next }
		/ sched_switch: / && $0 ~ (" prev_pid=" p " ") { print "a"; next }
		/ sched_switch: / && $0 ~ (" next_pid=" p " ") { print "b"; next }
		/ sched_wakeup: / && $0 ~ (" pid=" p " ") { print "w"; next }' | tr -d '\n' >"$w/seq2"
	cmp -s "$w/seq" "$w/seq2" || fail "report and babeltrace2 order differently"
	# ... in ftrace's shape: the task that ran the event in front (the
	# program's own thread for the switch away from it), sched_switch as
	# the kernel prints it (a state letter, "==>")
	"$rt" report "$w/t" >"$w/report"
	grep -Eq "^ *test_sleep_prog-$p +\[000\] [0-9. ]+: sched_switch: prev_comm=test_sleep_prog prev_pid=$p prev_prio=[0-9]+ prev_state=[SD] ==> next_comm=.* next_pid=[0-9]+ next_prio=[0-9]+\$" "$w/report" ||
		fail "no sched_switch away from $p in ftrace's shape: $(grep -m3 sched_switch "$w/report")"
	grep -Eq "sched_wakeup: comm=test_sleep_prog pid=$p prio=[0-9]+ target_cpu=[0-9]{3}\$" "$w/report" ||
		fail "no sched_wakeup of $p in ftrace's shape: $(grep -m3 sched_wakeup "$w/report")"
	[ -z "$(our_instances)" ] || fail "instance left: $(our_instances)"
}

kernel_only_recorded_threads_unless_kernel_all() { # case
	need_tracefs
	w="$tmp/$rt_c" # (each case its own directory: they may run in one process)
	mkdir -p "$w"
	"$rt" record -q -k sched:sched_switch -o "$w/t" -- "$prog" 20 || fail "record -k failed"
	p=$(ls "$w/t" | sed -n 's/^test_sleep_prog-//p')
	# every switch kept has the program's threads on one side
	"$rt" report "$w/t/kernel" | grep ' sched_switch: ' >"$w/sw" || fail "no sched_switch"
	"$rt" report "$w/t/test_sleep_prog-$p" >/dev/null
	tids=$(babeltrace2 "$w/t" 2>/dev/null | grep -o 'child_pid = [0-9]*' | sed 's/child_pid = //')
	awk -v tids="$p $tids" 'BEGIN { n = split(tids, t, " "); for (i = 1; i <= n; i++) ours[t[i]] = 1 }
		{ for (i = 1; i <= NF; i++) { if ($i ~ /^prev_pid=/) a = substr($i, 10); if ($i ~ /^next_pid=/) b = substr($i, 10) }
		  if (!(a in ours) && !(b in ours)) { print "not ours: " $0; bad = 1 } }
		END { exit bad }' "$w/sw" || fail "a switch of other threads kept"
	# --kernel-all: switches of other threads too (the recorder's own, waiting
	# for the program, at least), in the same run
	"$rt" record -q --kernel-all -k sched:sched_switch -o "$w/all" -- "$prog" 20 || fail "--kernel-all failed"
	p=$(ls "$w/all" | sed -n 's/^test_sleep_prog-//p')
	tids=$(babeltrace2 "$w/all" 2>/dev/null | grep -o 'child_pid = [0-9]*' | sed 's/child_pid = //')
	"$rt" report "$w/all/kernel" | grep ' sched_switch: ' | awk -v tids="$p $tids" '
		BEGIN { n = split(tids, t, " "); for (i = 1; i <= n; i++) ours[t[i]] = 1 }
		# (another thread: neither pid of the program nor a comm of its threads,
		# whose tids the trace does not all name)
		{ for (i = 1; i <= NF; i++) {
			if ($i ~ /^prev_pid=/) a = substr($i, 10); if ($i ~ /^next_pid=/) b = substr($i, 10)
			if ($i ~ /^prev_comm=/) ca = substr($i, 11); if ($i ~ /^next_comm=/) cb = substr($i, 11) }
		  if (!(a in ours) && !(b in ours) && ca !~ /^(test_sleep_prog|ringtrace-att|ringtrace-rec)$/ &&
		      cb !~ /^(test_sleep_prog|ringtrace-att|ringtrace-rec)$/) other++ }
		END { exit !(other > 0) }' || fail "--kernel-all kept no switch of another thread"
}

kernel_losses_of_a_tiny_buffer_counted() { # case
	need_tracefs
	w="$tmp/$rt_c" # (each case its own directory: they may run in one process)
	mkdir -p "$w"
	# 400,000 read syscalls in well under a second, on the CPU the recorder
	# (its drain) shares: far more than a 4 KiB buffer holds between two
	# drains, whoever wakes first
	taskset -c 0 "$rt" record -q --kernel-all --kernel-buffer 4k \
		-k syscalls:sys_enter_read,syscalls:sys_exit_read -o "$w/t" \
		-- sh -c 'dd if=/dev/zero of=/dev/null bs=1 count=200000 2>/dev/null; exec "$0" 5' "$prog" ||
		fail "record -k failed"
	lost=$("$rt" stat "$w/t/kernel" | awk '$1 == "overrun" || $1 == "missed" {n += $2} END {print n + 0}')
	[ "$lost" -gt 0 ] || fail "a 4 KiB kernel buffer under 400,000 syscalls lost nothing?"
	"$rt" stat "$w/t" | grep -q "^collection $w/t: 2 traces" || fail "stat of the collection"
}

kernel_instance_gone_after_sigint_and_after_sigkill() { # case
	need_tracefs
	w="$tmp/$rt_c" # (each case its own directory: they may run in one process)
	mkdir -p "$w"
	"$rt" record -q -k sched:sched_switch -o "$w/a" -- "$prog" 3000 &
	r=$!
	rt_wait_for 100 instance_of "$r"
	instance_of "$r" || fail "no instance while recording"
	kill -INT "$r"
	wait "$r" || true
	[ -z "$(our_instances)" ] || fail "instance left after SIGINT: $(our_instances)"
	"$rt" record -q -k sched:sched_switch -o "$w/b" -- "$prog" 3000 &
	r=$!
	rt_wait_for 100 instance_of "$r"
	kill -KILL "$r"
	wait "$r" 2>/dev/null || true
	pkill -f "$prog 3000" || true
	[ -n "$(our_instances)" ] || fail "the killed recorder's instance is already gone?"
	"$rt" record -q -k sched:sched_switch -o "$w/c" -- "$prog" 1 || fail "the next record -k failed"
	[ -z "$(our_instances)" ] || fail "the killed recorder's instance was not removed: $(our_instances)"
}

kernel_errors_said_and_user_events_recorded() { # case
	need_tracefs
	w="$tmp/$rt_c" # (each case its own directory: they may run in one process)
	mkdir -p "$w"
	"$rt" record -q -k nosuch:event -o "$w/t" -- "$prog" 5 2>"$w/err" || fail "record failed"
	grep -q "ringtrace record: -k: -k 'nosuch:event': no such kernel event" "$w/err" ||
		fail "not said: $(cat "$w/err")"
	p=$(ls "$w/t" | sed -n 's/^test_sleep_prog-//p')
	[ "$("$rt" report "$w/t/test_sleep_prog-$p" | grep -c ' sl_tick: ')" = 5 ] ||
		fail "the user events were not recorded"
	[ -z "$(our_instances)" ] || fail "instance left: $(our_instances)"
	command -v setpriv >/dev/null || fail "needs setpriv (util-linux)"
	mkdir "$w/u" && chown 65534:65534 "$w/u"
	setpriv --reuid=65534 --regid=65534 --clear-groups -- "$rt" record -q -k sched:sched_switch \
		-o "$w/u/t" -- "$prog" 5 2>"$w/err" || fail "record as a user failed: $(cat "$w/err")"
	grep -q "kernel events need root" "$w/err" || fail "not said: $(cat "$w/err")"
	[ -n "$(ls "$w/u/t" | grep '^test_sleep_prog-')" ] || fail "the user events were not recorded"
}


kernel_drained_while_running_loses_nothing() { # case
	need_tracefs
	w="$tmp/$rt_c" # (each case its own directory: they may run in one process)
	mkdir -p "$w"
	# 6000 sleeps: some 18000 events of the program's thread on CPU 0, several
	# times what a 512 KiB buffer holds; drained every 100 ms, none lost
	taskset -c 0 "$rt" record -q -k sched:sched_switch,sched:sched_wakeup --kernel-buffer 512k \
		-o "$w/t" -- "$prog" 6000 || fail "record -k failed"
	"$rt" stat "$w/t/kernel" >"$w/stat" || fail "stat failed: $(cat "$w/stat")"
	lost=$(awk '$1 == "overrun" || $1 == "missed" {n += $2} END {print n + 0}' "$w/stat")
	[ "$lost" = 0 ] || fail "$lost kernel events lost: $(cat "$w/stat")"
	bytes=$(awk '$1 == "1" && $3 == "kernel/0" {print $7}' "$w/stat")
	[ -n "$bytes" ] && [ "$bytes" -gt $((2 * 512 * 1024)) ] ||
		fail "CPU 0's kernel stream holds $bytes bytes, not more than twice its buffer: $(cat "$w/stat")"
	n=$("$rt" report "$w/t/kernel" --events sched_wakeup | grep -c ' sched_wakeup: comm=test_sleep_prog ' || true)
	[ "$n" -ge 5900 ] || fail "only $n wake-ups of the program's 6000 sleeps"
}

kernel_with_pid_records_the_attached_programs_threads() { # case
	need_tracefs
	w="$tmp/$rt_c" # (each case its own directory: they may run in one process)
	mkdir -p "$w"
	taskset -c 0 "$prog" 60000 >/dev/null 2>&1 & # (killed below)
	pid=$!
	rt_wait_socket "/run/ringtrace/$pid.sock"
	taskset -c 0 "$rt" record -q -p "$pid" -k sched:sched_switch,sched:sched_wakeup --duration 1 \
		-o "$w/t" 2>"$w/err" || fail "record -p -k failed: $(cat "$w/err")"
	tids=$(ls "/proc/$pid/task" | tr '\n' ' ') # (its threads: the main one, the listener)
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	[ -f "$w/t/kernel/metadata" ] && [ -d "$w/t/test_sleep_prog-$pid" ] ||
		fail "no collection: $(ls "$w/t")"
	[ -z "$(our_instances)" ] || fail "instance left: $(our_instances)"
	# one clock for both traces, and the program's sleeps: switched away from,
	# woken, switched back, between its user events
	[ "$(grep -h '^clock \(tsc\|monotonic\) ' "$w/t"/*/metadata | sort -u | wc -l)" = 1 ] ||
		fail "two clocks: $(grep -h '^clock \(tsc\|monotonic\) ' "$w/t"/*/metadata)"
	[ "$(grep -h '^realtime_offset -\{0,1\}[0-9]*$' "$w/t"/*/metadata | sort -u | wc -l)" = 1 ] ||
		fail "two wall-clock offsets: $(grep -h '^realtime_offset' "$w/t"/*/metadata)"
	"$rt" report "$w/t" | awk -v p="$pid" '
		/ sl_tick: / { print "u"; next }
		/ sched_switch: / && $0 ~ (" prev_pid=" p " ") { print "a"; next }
		/ sched_switch: / && $0 ~ (" next_pid=" p " ") { print "b"; next }
		/ sched_wakeup: / && $0 ~ (" pid=" p " ") { print "w"; next }' | tr -d '\n' >"$w/seq"
	n=$(sed 's/^[^u]*u//' "$w/seq" | tr 'u' '\n' | head -n -1 | grep -c 'a.*w.*b' || true)
	[ "$n" -ge 100 ] || fail "only $n sleeps of the attached program show switch, wake-up, switch back: $(head -c 300 "$w/seq")"
	# and no switch between two threads that are not the program's (those it
	# had, and those it made while recorded: its recorder thread)
	tids="$tids $("$rt" report "$w/t/kernel" | sed -n 's/.* sched_process_fork: .* child_pid=\([0-9]*\)$/\1/p' | tr '\n' ' ')"
	"$rt" report "$w/t/kernel" | grep ' sched_switch: ' | awk -v tids="$tids" '
		BEGIN { n = split(tids, t, " "); for (i = 1; i <= n; i++) ours[t[i]] = 1 }
		{ a = b = ""; for (i = 1; i <= NF; i++) { if ($i ~ /^prev_pid=/) a = substr($i, 10); if ($i ~ /^next_pid=/) b = substr($i, 10) }
		  if (!(a in ours) && !(b in ours)) { print "not ours: " $0; bad = 1 } }
		END { exit bad }' >"$w/bad" || fail "switches of other threads kept: $(head -3 "$w/bad")"
}

kernel_with_all_and_command_records_the_command() { # case
	need_tracefs
	w="$tmp/$rt_c" # (each case its own directory: they may run in one process)
	mkdir -p "$w"
	taskset -c 0 "$rt" record -q -a -k sched:sched_switch -k sched:sched_wakeup -o "$w/t" \
		-- "$prog" 50 2>"$w/err" || fail "record -a -k -- CMD failed: $(cat "$w/err")"
	p=$(ls "$w/t" | sed -n 's/^test_sleep_prog-//p')
	[ -n "$p" ] && [ -f "$w/t/kernel/metadata" ] || fail "no collection: $(ls "$w/t")"
	[ "$("$rt" report "$w/t/test_sleep_prog-$p" | grep -c ' sl_tick: ')" = 50 ] ||
		fail "the command's user events were not all recorded"
	n=$("$rt" report "$w/t/kernel" | grep -c " sched_wakeup: comm=test_sleep_prog pid=$p " || true)
	[ "$n" -ge 49 ] || fail "only $n wake-ups of the command's 50 sleeps"
	[ -z "$(our_instances)" ] || fail "instance left: $(our_instances)"
}

kernel_of_a_program_without_libringtrace_on_the_monotonic_clock() { # case
	need_tracefs
	w="$tmp/$rt_c" # (each case its own directory: they may run in one process)
	mkdir -p "$w"
	mono() { python3 -c 'import time; print("%.6f" % time.monotonic())'; }
	t0=$(mono)
	rc=0
	"$rt" record -q -k sched:sched_switch -o "$w/t" -- sh -c 'sleep 0.3; exit 3' 2>"$w/err" || rc=$?
	t1=$(mono)
	[ "$rc" = 3 ] || fail "exit status $rc, not the command's 3: $(cat "$w/err")"
	[ -f "$w/t/kernel/metadata" ] || fail "no kernel trace: $(ls "$w/t")"
	# the recorder's own calibration: the events' seconds are CLOCK_MONOTONIC's
	"$rt" report "$w/t/kernel" | grep ' sched_switch: prev_comm=sh ' >"$w/sw" ||
		fail "no switch of the command: $("$rt" report "$w/t/kernel" | head -3)"
	awk -v a="$t0" -v b="$t1" '{ s = $3; sub(/:$/, "", s); if (s + 0 < a - 0.001 || s + 0 > b + 0.001) { print; bad = 1 } }
		END { exit bad }' "$w/sw" >"$w/out" || fail "events outside [$t0, $t1]: $(head -2 "$w/out")"
}

kernel_report_survives_damaged_format_files() { # case
	need_tracefs
	w="$tmp/$rt_c" # (each case its own directory: they may run in one process)
	mkdir -p "$w"
	taskset -c 0 "$rt" record -q -k sched:sched_switch,sched:sched_wakeup -o "$w/t" -- "$prog" 5 ||
		fail "record -k failed"
	f="$w/t/kernel/formats"
	[ -f "$f/sched.sched_switch" ] && [ -f "$f/sched.sched_wakeup" ] ||
		fail "the format files are not kept: $(ls "$f")"
	n=$("$rt" report "$w/t" | grep -c ' sched_switch: ')
	# garbage, a format whose field lies far past any record, a link, a huge file
	head -c 3000 /dev/urandom >"$f/sched.sched_wakeup"
	printf 'name: sched_process_fork\nID: 1\nformat:\n\tfield:int parent_pid;\toffset:99999;\tsize:4;\tsigned:1;\n\nprint fmt: "%%d", REC->parent_pid\n' >"$f/sched.sched_process_fork"
	# (a negative offset, as libtraceevent reads 4294967288; a hex dump as
	# long as the print fmt says: both would reach past the rebuilt record)
	id=$(sed -n 's/^ID: //p' "$w/t/kernel/formats/sched.sched_switch" 2>/dev/null || true)
	printf 'name: sched_switch\nID: %s\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:int prev_pid;\toffset:4294967288;\tsize:8;\tsigned:1;\n\tfield:int next_pid;\toffset:8;\tsize:4;\tsigned:1;\n\nprint fmt: "%%d %%s", REC->prev_pid, __print_hex(REC->next_pid, 200000)\n' "${id:-1}" >"$f/sched.sched_switch"
	ln -s /etc/passwd "$f/sched.x"
	head -c 1000000 /dev/zero >"$f/sched.y"
	"$rt" report "$w/t" >"$w/out" 2>"$w/err" || true
	[ "$(grep -c ' sched_switch: ' "$w/out")" = "$n" ] || fail "events lost to damaged format files"
	grep -q ' sched_switch: prev_comm=.* prev_pid=[0-9]* ' "$w/out" || fail "not printed as name=value"
	grep -q "formats/sched.sched_wakeup: not a kernel format file" "$w/err" ||
		fail "the damaged file is not named: $(cat "$w/err")"
	# a formats that is not a directory: still a readable trace
	rm -rf "$f" && ln -s /etc "$f"
	"$rt" report "$w/t" >"$w/out2" 2>"$w/err2" || true
	[ "$(grep -c ' sched_switch: ' "$w/out2")" = "$n" ] || fail "events lost to a linked formats"
}

kernel_alone_records_every_thread_until_duration_or_sigint() { # case
	need_tracefs
	w="$tmp/$rt_c" # (each case its own directory: they may run in one process)
	mkdir -p "$w"
	"$rt" record -q -k sched:sched_switch --duration 0.5 -o "$w/t" || fail "record -k alone failed"
	[ -f "$w/t/kernel/metadata" ] || fail "no kernel trace: $(ls -R "$w/t")"
	n=$("$rt" report "$w/t" | grep -c ' sched_switch: ' || true)
	[ "$n" -gt 0 ] || fail "no switch in half a second of the whole machine"
	# until SIGINT: stops, writes, removes its instance
	"$rt" record -q -k sched:sched_switch -o "$w/i" &
	r=$!
	rt_wait_for 100 instance_of "$r"
	kill -INT "$r"
	wait "$r" || fail "record -k alone exited $? after SIGINT"
	[ -f "$w/i/kernel/metadata" ] || fail "no kernel trace after SIGINT"
	[ -z "$(our_instances)" ] || fail "instance left: $(our_instances)"
	# -k the only thing asked for, and not to be had: a failure, nothing left
	if "$rt" record -q -k nosuch:event --duration 0.2 -o "$w/n" 2>"$w/err"; then
		fail "record -k nosuch:event alone succeeded"
	fi
	grep -q "no such kernel event" "$w/err" || fail "not said: $(cat "$w/err")"
	[ ! -e "$w/n" ] || fail "an empty output directory left: $(ls -R "$w/n")"
}

rt_run_cases "$@"
