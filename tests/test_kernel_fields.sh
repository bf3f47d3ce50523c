#!/bin/sh
# The kernel events of ringtrace record -k (docs/kernel.md) as the kernel
# has them, as root (CI runs as root; elsewhere every case says it needs
# root), with tests/kernel_fields_compare.py:
#  - the metadata (read by babeltrace2) describes every event of sched:*
#    and syscalls:sys_enter_openat, those that never occurred too, each
#    with its format file's fields, in order, of the kernel's types;
#  - every field of every sched:* event that occurred during a workload
#    (a shell that forks, execs, opens files, moves between CPUs and
#    sleeps, recorded with --kernel-all) and of sys_enter_openat, read by
#    babeltrace2, equals the kernel's own text of the same event: a second
#    tracefs instance of the test's records the same events on the same
#    clock, and its `trace` text (what trace_pipe gives) is read as the
#    kernel prints each event and with the `fields` option. The events are
#    matched by name and time (counter ticks; the two instances each read
#    the counter). Two differences are allowed, the kernel's: an exiting
#    task's sched_switch prev_state, X in one record and Z in the other
#    (each probe reads the task's state; its parent reaps it), and the
#    name of a task that execs while an event about it is recorded on
#    another CPU, old in one record and new in the other. It says which
#    sched events never occurred.
# Each is a case (tests/cases.sh).
#   usage: test_kernel_fields.sh BIN_DIR [CASE...] | --list
set -eu
. "$(dirname "$0")/cases.sh"
bin=$1
shift
rt="$bin/ringtrace"
prog="$bin/test_sleep_prog"
compare="$(cd "$(dirname "$0")" && pwd)/kernel_fields_compare.py"
tmp=$(mktemp -d /tmp/ringtrace-kfields-XXXXXX)
chmod 755 "$tmp"
. "$(dirname "$0")/tracefs.sh"
# (the test's own instance: its events off and removed, whatever happens)
inst="$tracing/instances/rt-test-fields-$$"
cleanup() { drop_instance "$inst"; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() { echo "test_kernel_fields: ${rt_c:-}: $*" >&2; exit 1; }
skip() { echo "${rt_c:-test_kernel_fields}: SKIPPED: $*"; exit 77; }

need_kernel() {
	need_tracefs
	command -v babeltrace2 >/dev/null || fail "needs babeltrace2"
	command -v python3 >/dev/null || fail "needs python3"
	[ -d "$tracing/events/syscalls/sys_enter_openat" ] ||
		skip "this kernel has no syscalls:sys_enter_openat (CONFIG_FTRACE_SYSCALLS)"
}

# The events the cases enable: every one of sched:*, and sys_enter_openat.
events() {
	for d in "$tracing"/events/sched/*/; do
		basename "$d" | sed 's/^/sched:/'
	done
	echo syscalls:sys_enter_openat
}

kernel_metadata_describes_every_sched_and_openat_event() { # case
	need_kernel
	w="$tmp/$rt_c" # (each case its own directory: they may run in one process)
	mkdir -p "$w"
	"$rt" record -q -k 'sched:*' -k syscalls:sys_enter_openat -o "$w/t" -- "$prog" 3 2>"$w/rec.err" ||
		fail "record -k failed: $(cat "$w/rec.err")"
	babeltrace2 "$w/t" >/dev/null 2>"$w/bt.err" || fail "babeltrace2 cannot read it: $(cat "$w/bt.err")"
	babeltrace2 -o ctf-metadata "$w/t/kernel" >"$w/meta.txt" 2>"$w/bt.err" ||
		fail "babeltrace2 cannot read the kernel trace's metadata: $(cat "$w/bt.err")"
	python3 "$compare" --metadata "$w/meta.txt" "$tracing/events" $(events) >"$w/out" 2>&1 ||
		fail "the metadata is not the kernel's: $(cat "$w/out")"
}

kernel_sched_and_openat_fields_equal_the_kernels_text() { # case
	need_kernel
	[ -e "$tracing/options/fields" ] ||
		skip "this kernel's tracefs has no 'fields' option (each field's value in trace_pipe's text)"
	w="$tmp/$rt_c" # (each case its own directory: they may run in one process)
	mkdir -p "$w"
	# (instances of this test a killed run left)
	for d in "$tracing"/instances/rt-test-fields-*; do
		[ -d "$d" ] && ! kill -0 "${d##*-}" 2>/dev/null && drop_instance "$d"
	done
	case $(uname -m) in
	x86_64 | i?86) clock=x86-tsc ;;
	*) clock=counter ;;
	esac
	# The test's instance: the same events on the same clock, a buffer that
	# keeps them all (on by the time ringtrace's is, off after it).
	mkdir "$inst" || fail "cannot make the instance $inst"
	echo 16384 >"$inst/buffer_size_kb"
	echo "$clock" >"$inst/trace_clock" || fail "no $clock trace clock"
	echo 0 >"$inst/options/hash-ptr" 2>/dev/null || true # (%p as the value, not hashed)
	echo 1 >"$inst/events/sched/enable"
	echo 1 >"$inst/events/syscalls/sys_enter_openat/enable"
	echo 1 >"$inst/tracing_on"
	# The workload: forks, execs, exits and waits; opens files; is moved
	# between CPUs (taskset); sleeps (switches, wake-ups); then becomes the
	# traced program (a user trace beside the kernel's).
	"$rt" record -q --kernel-all --kernel-buffer 16m -k 'sched:*' -k syscalls:sys_enter_openat \
		-o "$w/t" -- sh -c 'for i in $(seq 30); do
			cat /etc/hostname /proc/self/stat >/dev/null
			taskset -c $((i % 2)) true 2>/dev/null || true
			sleep 0.005 & wait
		done; exec "$0" 20' "$prog" 2>"$w/rec.err" || fail "record -k failed: $(cat "$w/rec.err")"
	echo 0 >"$inst/tracing_on"
	cat "$inst/trace" >"$w/trace.txt"
	echo 1 >"$inst/options/fields"
	cat "$inst/trace" >"$w/fields.txt"
	drop_instance "$inst"
	# ringtrace's instance lost nothing (else the comparison means little)
	lost=$("$rt" stat "$w/t/kernel" | awk '$1 == "overrun" || $1 == "missed" {n += $2} END {print n + 0}')
	[ "$lost" = 0 ] || fail "ringtrace's kernel buffer lost $lost events: raise --kernel-buffer here"
	babeltrace2 --clock-cycles "$w/t/kernel" >"$w/bt.txt" 2>"$w/bt.err" ||
		fail "babeltrace2 cannot read the kernel trace: $(cat "$w/bt.err")"
	python3 "$compare" "$w/bt.txt" "$w/trace.txt" "$w/fields.txt" "$tracing/events" /proc/kallsyms \
		$(events) >"$w/out" 2>&1 || fail "our fields are not the kernel's:
$(cat "$w/out")"
	cat "$w/out"
	# the workload made every event it is there for
	never=$(sed -n 's/^never occurred: //p' "$w/out")
	for e in sched_switch sched_waking sched_wakeup sched_wakeup_new sched_process_fork \
		sched_process_exec sched_process_exit sched_process_wait sched_migrate_task \
		sched_stat_runtime; do
		[ -d "$tracing/events/sched/$e" ] || continue
		case " $never " in *" $e "*) fail "the workload made no $e: $(cat "$w/out")" ;; esac
	done
	grep -q '^sys_enter_openat ' "$w/out" || fail "no sys_enter_openat compared: $(cat "$w/out")"
}

rt_run_cases "$@"
