#!/bin/sh
# scripts/demo.sh BUILD_DIR: what `make demo` shows, from a build of the
# command, the demo program and the benchmark (BUILD_DIR/bin).
#
#  - the demo's 4 worker threads recorded by `ringtrace record`, then
#    `ringtrace stat`, the head of `ringtrace report`, and the event count
#    of the same trace as babeltrace2 (the reference CTF reader) reads it;
#    the slowest work spans asked in SQL (`ringtrace query`) and the work
#    items' latency by operation (`ringtrace latency`);
#  - as root, the same run with the kernel's scheduling events beside the
#    demo's own (`record -k`, docs/kernel.md), `ringtrace sched` of that
#    collection and its thread states in SQL; otherwise a line that says
#    why that part is left out;
#  - the ring buffer benchmark (the kernel ring_buffer_benchmark's shape).
#
# The traces go to out/demo and out/demo-kernel.
set -e
bin=${1:?usage: scripts/demo.sh BUILD_DIR}/bin
rt=$bin/ringtrace
demo=$bin/ringtrace-demo

echo "== ringtrace record: 4 instrumented worker threads of ringtrace-demo, 1 s"
rm -rf out/demo out/demo-kernel
mkdir -p out
"$rt" record -o out/demo -- "$demo" --seconds 1 --threads 4
echo "== ringtrace stat out/demo"
"$rt" stat out/demo
echo "== ringtrace report out/demo | head -20"
# (report stops on the closed pipe: its status is not the demo's)
{ "$rt" report out/demo || true; } | head -20
echo "== the same trace read by babeltrace2, the reference CTF reader (event count)"
if command -v babeltrace2 >/dev/null; then
	babeltrace2 out/demo 2>/dev/null | wc -l
else
	echo "(babeltrace2 not installed: make deps)"
fi

echo "== ringtrace query out/demo: the trace as SQL tables (docs/query.md); the 5 slowest work spans"
"$rt" query out/demo "SELECT s.ts, s.dur, t.name AS thread, e.op, e.item
  FROM slice s JOIN thread t USING (utid) JOIN demo_work_begin e ON e.id = s.arg_set_id
  ORDER BY s.dur DESC LIMIT 5"
echo "== ringtrace latency out/demo: begin to end of each work item, by operation"
"$rt" latency out/demo --from demo_work_begin --to demo_work_end --by op --top 3

# kernel_skip: why the kernel part cannot run here, or nothing if it can.
# Reading the kernel's trace buffers takes root and tracefs; tracefs is
# mounted here when the directory is there but empty (a container, a
# minimal boot), if the kernel lets us.
kernel_skip() {
	if [ "$(id -u)" != 0 ]; then
		echo "not root (the kernel's trace buffers are root's: sudo make demo records them)"
		return
	fi
	t=/sys/kernel/tracing
	if [ ! -d $t ]; then
		echo "no $t (a kernel without tracefs)"
		return
	fi
	if [ ! -e $t/events ]; then
		mount -t tracefs nodev $t 2>/dev/null ||
			{ echo "$t is empty and mounting tracefs there failed"; return; }
		echo "(mounted tracefs on $t)" >&2
	fi
	[ -e $t/events/sched/sched_switch ] || echo "no sched:sched_switch event in $t"
}

echo "== ringtrace record -k: the same demo with the kernel's scheduling events"
why=$(kernel_skip)
if [ -n "$why" ]; then
	echo "(skipped: $why)"
else
	# (where record -k cannot run, a ringtrace built without libtracefs for
	# one, it says why and the demo's own events are still recorded)
	if "$rt" record -k sched:sched_switch -k sched:sched_wakeup -k sched:sched_wakeup_new \
		-o out/demo-kernel -- "$demo" --seconds 1 --threads 4 &&
		[ -d out/demo-kernel/kernel ]; then
		kernel=yes
	else
		echo "(skipped: ringtrace record -k could not record the kernel's events: its message above)"
	fi
fi
if [ "${kernel:-}" = yes ]; then
	echo "== ringtrace sched out/demo-kernel --top 2: each demo thread's running, runnable"
	echo "   and blocked time, wake-up latencies, longest off-CPU stretches"
	"$rt" sched out/demo-kernel --top 2
	echo "== ringtrace query out/demo-kernel: each demo thread's time by state (thread_state)"
	"$rt" query out/demo-kernel "SELECT t.name AS thread, s.state, count(*) AS n,
  sum(s.dur) / 1e6 AS ms FROM thread_state s JOIN thread t USING (utid)
  WHERE t.upid IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 4 DESC"
fi

echo "== ring buffer benchmark (kernel ring_buffer_benchmark shape), reader by pages"
"$bin/ringtrace-bench" rb --seconds 1 --reader page
