#!/bin/sh
# The scheduling view (docs/kernel.md, "The scheduling view"): `ringtrace
# sched DIR` and the thread states of `ringtrace export`, on a program that
# records sl_tick, sleeps 1 ms and repeats (test_sleep_prog), recorded with
# sched_switch and sched_wakeup, as root (CI runs as root; elsewhere the
# cases that record kernel events say they need root):
#  - its main thread: a wake-up (and a latency sample) per sleep, blocked
#    at least a millisecond per sleep, latencies 0 < p50 <= p99 <= max, the
#    states adding up to its time; only the recorded program's threads
#    unless --all;
#  - its longest off-CPU stretch (a long sleep between two ticks) with
#    sl_tick just before and just after it;
#  - export: valid JSON, the thread's states as X events on its own track
#    (in sequence, adding up to what sched says), the kernel's events on a
#    track per CPU of a process "kernel";
#  - a trace without kernel events, or without sched_switch: said, exit 1;
#    damage: exit 1 after printing; usage errors: exit 2.
# Each is a case (tests/cases.sh).
#   usage: test_sched.sh BIN_DIR [CASE...] | --list
set -eu
. "$(dirname "$0")/cases.sh"
bin=$1
shift
rt="$bin/ringtrace"
prog="$bin/test_sleep_prog"
tmp=$(mktemp -d /tmp/ringtrace-sched-XXXXXX)
chmod 755 "$tmp"
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "test_sched: ${rt_c:-}: $*" >&2; exit 1; }
skip() { echo "${rt_c:-test_sched}: SKIPPED: $*"; exit 77; }
. "$(dirname "$0")/tracefs.sh"

# record_sleep DIR ARGS...: the sleep program with the scheduling events,
# on CPU 0 (on this VM the kernel records no sched_switch out of CPU 1's
# idle task, docs/kernel.md); $p is its pid
record_sleep() {
	d=$1
	shift
	# (under ThreadSanitizer a program sleeps a second at its exit, which
	# would be its longest stretch: not here)
	TSAN_OPTIONS="${TSAN_OPTIONS:-}${TSAN_OPTIONS:+:}atexit_sleep_ms=0" \
		taskset -c 0 "$rt" record -q -k sched:sched_switch -k sched:sched_wakeup \
		-k sched:sched_wakeup_new -o "$d" -- "$prog" "$@" 2>"$d.err" ||
		fail "record -k failed: $(cat "$d.err")"
	p=$(ls "$d" | sed -n 's/^test_sleep_prog-//p')
	[ -n "$p" ] && [ -f "$d/kernel/metadata" ] || fail "no collection: $(ls "$d")"
}

# The table line of thread $2 in sched's output $1 (the fields: tid,
# running ms and %, runnable, blocked, unknown, wake-ups, p50, p99, max us,
# comm [trace]).
thread_line() { awk -v t="$2" '$1 == t && NF >= 14' "$1"; }

sched_sleep_program_wakeups_blocked_latencies() { # case
	need_tracefs
	w="$tmp/$rt_c" # (each case its own directory: they may run in one process)
	mkdir -p "$w"
	n=50
	record_sleep "$w/t" $n
	"$rt" sched "$w/t" >"$w/out" 2>"$w/err" || fail "sched failed: $(cat "$w/err")"
	line=$(thread_line "$w/out" "$p")
	[ -n "$line" ] || fail "no line for the program's thread $p: $(cat "$w/out")"
	echo "$line" | awk -v n=$n -v p="$p" '
		{ run = $2; runnable = $4; blocked = $6; unknown = $8; wk = $10; p50 = $11; p99 = $12; max = $13
		  pc = $3 + $5 + $7 + $9 }
		wk < n - 1 { print "only " wk " wake-ups for " n " sleeps"; bad = 1 }
		blocked < (n - 1) * 1.0 { print "blocked " blocked " ms for " n " sleeps of 1 ms"; bad = 1 }
		!(p50 > 0 && p50 <= p99 && p99 <= max) { print "latencies p50 " p50 " p99 " p99 " max " max; bad = 1 }
		run <= 0 { print "never running"; bad = 1 }
		pc < 99.5 || pc > 100.5 { print "the states add up to " pc "%"; bad = 1 }
		$14 != "test_sleep_prog" || $15 != "[test_sleep_prog-" p "]" { print "comm or trace wrong"; bad = 1 }
		END { exit bad }' || fail "main thread: $line"
	# only the recorded program's threads by default (its own helper
	# threads record nothing, the recorder is not the program's); --all
	# shows the others the kernel trace names
	[ "$(awk 'NF >= 14 && $1 ~ /^[0-9-]+$/' "$w/out" | wc -l)" = 1 ] ||
		fail "threads shown by default: $(cat "$w/out")"
	grep -q "^threads: 1 of the recorded programs" "$w/out" || fail "header: $(head -3 "$w/out")"
	"$rt" sched --all "$w/t" >"$w/all" || fail "sched --all failed"
	[ "$(awk 'NF >= 14 && $1 ~ /^[0-9-]+$/' "$w/all" | wc -l)" -ge 2 ] ||
		fail "--all shows no other thread: $(cat "$w/all")"
	[ "$(thread_line "$w/all" "$p")" = "$line" ] || fail "--all gives the program's thread otherwise"
	# the kernel trace alone: every thread, the program's with the same times
	"$rt" sched "$w/t/kernel" >"$w/k" || fail "sched of the kernel trace alone failed"
	grep -q "^threads: all .* (no user trace beside it)" "$w/k" || fail "$(head -3 "$w/k")"
	[ "$(thread_line "$w/k" "$p" | awk '{ print $2, $4, $6, $10 }')" = \
		"$(echo "$line" | awk '{ print $2, $4, $6, $10 }')" ] ||
		fail "the kernel trace alone gives other times: $(thread_line "$w/k" "$p")"
	# --top 0: no stretches
	"$rt" sched --top 0 "$w/t" | grep -q 'off-CPU' && fail "--top 0 printed stretches"
	true
}

sched_longest_stretch_between_two_user_events() { # case
	need_tracefs
	w="$tmp/$rt_c" # (each case its own directory: they may run in one process)
	mkdir -p "$w"
	# 20 ticks, the sleep after tick 10 lasting 300 ms
	record_sleep "$w/t" 20 300
	"$rt" sched --top 3 "$w/t" >"$w/out" 2>"$w/err" || fail "sched failed: $(cat "$w/err")"
	# the first stretch under the thread's heading, and its before / after
	awk -v p="$p" '
		$1 == p && NF == 3 { on = 1; next }
		on && $1 == "1" { ms = $2; from = $4; to = $6; next }
		on && $1 == "before:" { bn = $2; bt = $4; next }
		on && $1 == "after:" { an = $2; at = $4; exit }
		END {
			if (ms < 300) { print "the longest stretch is " ms " ms, not the 300 ms sleep"; exit 1 }
			if (bn != "sl_tick" || an != "sl_tick") { print "around it: " bn " / " an; exit 1 }
			if (!(bt <= from && from < to && to <= at)) { print "times out of order: " bt " " from " " to " " at; exit 1 }
		}' "$w/out" || fail "$(cat "$w/out")"
	# at most 3 stretches listed
	[ "$(awk -v p="$p" '$1 == p && NF == 3 { on = 1; next } on && $1 ~ /^[0-9]+$/ && $3 == "ms"' "$w/out" | wc -l)" = 3 ] ||
		fail "--top 3: $(cat "$w/out")"
}

sched_export_thread_states_and_cpu_tracks() { # case
	need_tracefs
	w="$tmp/$rt_c" # (each case its own directory: they may run in one process)
	mkdir -p "$w"
	record_sleep "$w/t" 30
	"$rt" export --format=json "$w/t" -o "$w/t.json" 2>"$w/err" || fail "export failed: $(cat "$w/err")"
	python3 -m json.tool "$w/t.json" >/dev/null || fail "export wrote invalid JSON"
	"$rt" sched "$w/t" >"$w/out" || fail "sched failed"
	running=$(thread_line "$w/out" "$p" | awk '{ print $2 }')
	python3 - "$w/t.json" "$p" "$running" <<'PY' || fail "export: thread states or CPU tracks wrong"
import json, sys
d = json.load(open(sys.argv[1]))["traceEvents"]
pid, running = int(sys.argv[2]), float(sys.argv[3])
def die(msg):
    print(msg)
    sys.exit(1)
x = [e for e in d if e["ph"] == "X"]
states = {e["name"] for e in x if e["pid"] == pid and e["tid"] == pid}
if states != {"running", "runnable", "blocked"}:
    die("the program's thread has states %s" % sorted(states))
if any(e.get("cat") != "sched" or e["dur"] < 0 for e in x):
    die("an X event not of cat sched, or of negative duration")
# a thread is in one state at a time: its spans follow each other
mine = sorted((e["ts"], e["ts"] + e["dur"]) for e in x if e["tid"] == pid)
for (a0, a1), (b0, b1) in zip(mine, mine[1:]):
    if b0 < a1 - 0.001:
        die("states overlap: %s..%s and %s..%s" % (a0, a1, b0, b1))
run_ms = sum(e["dur"] for e in x if e["tid"] == pid and e["name"] == "running") / 1000
if abs(run_ms - running) > 0.01:
    die("running %.3f ms in the JSON, %.3f ms in sched" % (run_ms, running))
# the user events on the same track
if not any(e["name"] == "sl_tick" and e["pid"] == pid and e["tid"] == pid for e in d):
    die("no sl_tick on the thread's track")
# the kernel: a process "kernel", its threads "CPU N", the scheduling events on them
kp = [e["pid"] for e in d if e["ph"] == "M" and e["name"] == "process_name" and e["args"]["name"] == "kernel"]
if len(kp) != 1:
    die("processes named kernel: %d" % len(kp))
cpus = {e["tid"]: e["args"]["name"] for e in d
        if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == kp[0]}
if "CPU 0" not in cpus.values() or not all(n.startswith("CPU ") for n in cpus.values()):
    die("the kernel's threads: %s" % sorted(cpus.values()))
sw = [e for e in d if e["name"] == "sched_switch"]
if not sw or any(e["pid"] != kp[0] or e["tid"] not in cpus for e in sw):
    die("sched_switch not on the CPU tracks")
if any(e["pid"] == kp[0] and e["tid"] in (pid, 0) for e in d if e["ph"] != "M"):
    die("a kernel event on a thread's track")
PY
}

sched_without_kernel_trace_says_so() { # case
	w="$tmp/$rt_c" # (each case its own directory: they may run in one process)
	mkdir -p "$w"
	# (no root needed: a trace of the program alone)
	"$rt" record -q -o "$w/u" -- "$prog" 3 || fail "record failed"
	st=0
	"$rt" sched "$w/u" >"$w/out" 2>"$w/err" || st=$?
	[ "$st" = 1 ] || fail "sched of a trace without kernel events: status $st"
	grep -q "holds no kernel trace (record with -k sched:sched_switch -k sched:sched_wakeup)" \
		"$w/err" || fail "not said: $(cat "$w/err")"
	[ ! -s "$w/out" ] || fail "printed: $(cat "$w/out")"
	# export of the same: no thread states, and no complaint
	"$rt" export --format=json "$w/u" -o "$w/u.json" || fail "export failed"
	python3 -m json.tool "$w/u.json" >/dev/null || fail "invalid JSON"
	grep -q '"ph":"X"' "$w/u.json" && fail "thread states without kernel events"
	true
}

sched_kernel_trace_without_sched_switch_says_so() { # case
	need_tracefs
	w="$tmp/$rt_c" # (each case its own directory: they may run in one process)
	mkdir -p "$w"
	taskset -c 0 "$rt" record -q -k sched:sched_wakeup -o "$w/k" -- "$prog" 3 ||
		fail "record -k failed"
	st=0
	"$rt" sched "$w/k" >"$w/out" 2>"$w/err" || st=$?
	[ "$st" = 1 ] || fail "sched of a kernel trace without sched_switch: status $st"
	grep -q "has no sched_switch events (record with -k sched:sched_switch" "$w/err" ||
		fail "not said: $(cat "$w/err")"
}

sched_damage_exits_1_after_printing() { # case
	need_tracefs
	w="$tmp/$rt_c" # (each case its own directory: they may run in one process)
	mkdir -p "$w"
	record_sleep "$w/t" 20
	u="$w/t/test_sleep_prog-$p"
	s=$(ls "$u" | grep '^stream_' | head -1)
	# the first page's header: its magic
	printf 'XXXXXXXX' | dd of="$u/$s" bs=1 seek=0 conv=notrunc 2>/dev/null
	st=0
	"$rt" sched "$w/t" >"$w/out" 2>"$w/err" || st=$?
	[ "$st" = 1 ] || fail "sched of a damaged trace: status $st"
	grep -q "error.* found in the trace" "$w/err" || fail "damage not said: $(cat "$w/err")"
	[ -n "$(thread_line "$w/out" "$p")" ] || fail "nothing printed: $(cat "$w/out")"
}

sched_usage() { # case
	w="$tmp/$rt_c" # (each case its own directory: they may run in one process)
	mkdir -p "$w"
	"$rt" sched -h >"$w/h" || fail "-h failed"
	grep -q '^usage: ringtrace sched DIR \[--all\] \[--top N\]' "$w/h" || fail "-h: $(cat "$w/h")"
	"$rt" sched --help | cmp -s - "$w/h" || fail "--help differs from -h"
	"$rt" --help | grep -q '^  sched DIR' || fail "ringtrace --help does not list sched"
	for args in "" "--bogus $w" "--top" "--top 101 $w" "--top -1 $w" "$w $w"; do
		st=0
		"$rt" sched $args >/dev/null 2>"$w/err" || st=$?
		[ "$st" = 2 ] || fail "sched $args: status $st"
		grep -q "Try 'ringtrace sched --help'" "$w/err" || fail "sched $args: $(cat "$w/err")"
	done
}

rt_run_cases "$@"
