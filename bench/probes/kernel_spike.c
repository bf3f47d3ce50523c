/*
 * kernel_spike: is the kernel's x86-tsc trace clock the counter ringtrace
 * timestamps user events with, exactly? (docs/kernel.md has what it
 * showed.)
 *
 * A private tracefs instance (libtracefs), trace_clock = x86-tsc,
 * sched_switch and sched_wakeup enabled for one child, limited either by
 * set_event_pid (default) or by per-event filters (USE_FILTER=1:
 * "prev_pid == C || next_pid == C", "pid == C"). The child reads the
 * counter (rdtsc) before and after three 1 ms sleeps; its events are
 * read back from the per-CPU raw buffers (tracefs_cpu_flush), walked with
 * libtraceevent's kbuffer and printed with tep_print_event. Sorted by the
 * timestamp column, each sleep must show: the child's rdtsc, a
 * sched_switch away from it, a sched_wakeup of it, (a sched_switch back
 * to it,) the child's next rdtsc.
 *
 * Built by hand (the command links these libraries; nothing else does):
 *   apt-get install -y libtracefs-dev libtraceevent-dev
 *   gcc -O1 -o /tmp/kernel_spike bench/probes/kernel_spike.c \
 *       $(pkg-config --cflags --libs libtracefs libtraceevent)
 *   /tmp/kernel_spike | sort -k3 -n            (as root)
 *   USE_FILTER=1 /tmp/kernel_spike | sort -k3 -n
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <traceevent/event-parse.h>
#include <traceevent/kbuffer.h>
#include <tracefs/tracefs.h>
#include <unistd.h>
#include <x86intrin.h>

int main(void)
{
	char name[64];
	snprintf(name, sizeof(name), "rt-spike-%d", getpid());
	struct tracefs_instance *in = tracefs_instance_create(name);
	if (!in) {
		perror("kernel_spike: tracefs instance (root? tracefs mounted?)");
		return 1;
	}
	if (tracefs_instance_file_write(in, "trace_clock", "x86-tsc") < 0)
		perror("kernel_spike: trace_clock x86-tsc");
	tracefs_instance_set_buffer_size(in, 256, -1);
	tracefs_event_enable(in, "sched", "sched_switch");
	tracefs_event_enable(in, "sched", "sched_wakeup");
	int p[2];
	if (pipe(p))
		return 1;
	pid_t c = fork();
	if (c == 0) {
		char b;
		if (read(p[0], &b, 1) != 1)
			_exit(1);
		unsigned long long t[6];
		for (int i = 0; i < 3; i++) {
			t[2 * i] = __rdtsc();
			usleep(1000);
			t[2 * i + 1] = __rdtsc();
		}
		for (int i = 0; i < 6; i++)
			printf("child %d rdtsc %llu\n", getpid(), t[i]);
		fflush(stdout);
		_exit(0);
	}
	char f1[128], f2[128], pids[32];
	snprintf(f1, sizeof f1, "prev_pid == %d || next_pid == %d", c, c);
	snprintf(f2, sizeof f2, "pid == %d", c);
	snprintf(pids, sizeof(pids), "%d", c);
	if (getenv("USE_FILTER")) {
		if (tracefs_instance_file_write(in, "events/sched/sched_switch/filter", f1) < 0 ||
		    tracefs_instance_file_write(in, "events/sched/sched_wakeup/filter", f2) < 0)
			perror("kernel_spike: filter");
	} else if (tracefs_instance_file_write(in, "set_event_pid", pids) < 0) {
		perror("kernel_spike: set_event_pid");
	}
	tracefs_trace_on(in);
	if (write(p[1], "x", 1) != 1)
		return 1;
	waitpid(c, NULL, 0);
	const char *sys[] = {"sched", NULL};
	struct tep_handle *tep = tracefs_local_events_system(NULL, sys);
	int ncpu = (int)sysconf(_SC_NPROCESSORS_CONF);
	for (int cpu = 0; cpu < ncpu; cpu++) {
		struct tracefs_cpu *tc = tracefs_cpu_open(in, cpu, true);
		if (!tc)
			continue;
		char *buf = malloc((size_t)tracefs_cpu_read_size(tc));
		while (buf && tracefs_cpu_flush(tc, buf) > 0) {
			struct kbuffer *kb = kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_LITTLE);
			kbuffer_load_subbuffer(kb, buf);
			unsigned long long ts;
			for (void *d = kbuffer_read_event(kb, &ts); d;
			     d = kbuffer_next_event(kb, &ts)) {
				struct tep_record rec = {.ts = ts,
							 .data = d,
							 .size = kbuffer_event_size(kb),
							 .cpu = cpu};
				struct trace_seq s;
				trace_seq_init(&s);
				if (tep && tep_find_event_by_record(tep, &rec))
					tep_print_event(tep, &s, &rec, "%s: %s", TEP_PRINT_NAME,
							TEP_PRINT_INFO);
				trace_seq_terminate(&s);
				printf("cpu%d %llu %s\n", cpu, ts, s.buffer);
				trace_seq_destroy(&s);
			}
			kbuffer_free(kb);
		}
		free(buf);
		tracefs_cpu_close(tc);
	}
	tracefs_instance_destroy(in);
	tracefs_instance_free(in);
	return 0;
}
