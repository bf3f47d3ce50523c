/*
 * bench/cmp/cmp_harness.h - the one measuring program of bench/compare,
 * shared by every tracer.
 *
 * Each cmp-<tracer> program is one backend file (cmp_<tracer>.c) that
 * defines, before including this header:
 *
 *   static inline void cmp_emit(int v);      the event: one int field
 *   static int  backend_init(struct cmp_opts *o);     before anything is timed
 *   static void backend_ready(struct cmp_opts *o, struct cmp_result *r);
 *                                                     after the warm-up,
 *                                                     just before timing
 *   static void backend_finish(struct cmp_opts *o, struct cmp_result *r);
 *   static const char backend_name[];
 *
 * and this header supplies main() and the loops. So every tracer's call
 * site is compiled into the very same loop, inline, exactly as a user of
 * that tracer would write it: nothing is called through an extra function
 * of ours, and no program carries another tracer's runtime (LTTng-UST's
 * listener threads, DPDK's EAL) that could disturb it.
 *
 * What is measured (--what):
 *   micro    N iterations of { cmp_emit(i); } with an opaque counter
 *            (CMP_KEEP: the loop cannot be vectorized or removed), timed
 *            with CLOCK_MONOTONIC around the whole loop: ns per iteration,
 *            loop overhead included (about 0.3 ns here; the "none" program
 *            shows it).
 *   close    perf's close(-1) experiment: N iterations of { close(-1); cmp_emit(i); }: ns per
 *            call.
 *   latency  the cyclictest wake-up latency experiment: a SCHED_FIFO thread wakes up every --interval-us on
 *            clock_nanosleep(TIMER_ABSTIME), emits one event, then reads
 *            the clock: its lateness (now - programmed wake-up) includes
 *            the event, as a scheduler tracepoint on the wake-up path
 *            would be. min/avg/max of N wake-ups. As cyclictest -m: all
 *            memory locked, /dev/cpu_dma_latency held at 0 while it runs.
 *
 * Order: backend_init (the tracer starts; its helper threads inherit the
 * CPU mask the program was started with, the script gives it the other
 * CPU), pin this thread to --cpu, --wait FIFO (block until the script has
 * attached bpftrace and writes a line), warm-up (--warmup events, same
 * loop), backend_ready, the timed loop, backend_finish (stop, save,
 * count). The result is one line on stdout:
 *   RESULT tracer=... what=... n=... warmup=... ns=... [lat_min= lat_avg=
 *   lat_max=] expected=... recorded=... lost=... note="..."
 * recorded/lost are -1 where the program cannot know (the script counts
 * the trace itself).
 */
#ifndef CMP_HARNESS_H
#define CMP_HARNESS_H

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "cmp.h"

static __attribute__((noinline)) void cmp_loop_micro(uint64_t first, uint64_t n)
{
	for (uint64_t i = first; i < first + n; i++) {
		cmp_emit((int)i);
		CMP_KEEP(i);
	}
}

static __attribute__((noinline)) void cmp_loop_close(uint64_t first, uint64_t n)
{
	for (uint64_t i = first; i < first + n; i++) {
		close(-1);
		cmp_emit((int)i);
	}
}

static void cmp_wait_fifo(const char *path)
{
	printf("READY pid=%d\n", (int)getpid());
	fflush(stdout);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		cmp_die("--wait %s: %s", path, strerror(errno));
	char c;
	if (read(fd, &c, 1) != 1)
		cmp_die("--wait %s: no go from the script", path);
	close(fd);
}

static void cmp_latency(const struct cmp_opts *o, struct cmp_result *r, uint64_t n, int record)
{
	uint64_t interval = (uint64_t)o->interval_us * 1000u;
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	uint64_t sum = 0, mn = UINT64_MAX, mx = 0;
	for (uint64_t i = 0; i < n; i++) {
		next.tv_nsec += (long)interval;
		while (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
		cmp_emit((int)i);
		uint64_t now = cmp_now_ns();
		uint64_t due = (uint64_t)next.tv_sec * 1000000000ull + (uint64_t)next.tv_nsec;
		uint64_t lat = now > due ? now - due : 0;
		if (record) {
			sum += lat;
			if (lat < mn)
				mn = lat;
			if (lat > mx)
				mx = lat;
		}
	}
	if (record) {
		r->lat_min = (double)mn;
		r->lat_avg = (double)sum / (double)n;
		r->lat_max = (double)mx;
	}
}

static void cmp_usage(FILE *f)
{
	fprintf(f,
		"usage: cmp-%s [options]   (run by bench/compare)\n"
		"  --what micro|close|latency   the experiment (default micro)\n"
		"  --n N            events (iterations, calls, wake-ups) timed\n"
		"  --warmup N       events emitted first, not timed (default 100000)\n"
		"  --cpu C          CPU of the measured thread (default 0)\n"
		"  --mode discard|overwrite     the tracer's buffer mode\n"
		"  --off            tracer present, its tracepoint disabled\n"
		"  --dir DIR        trace output directory (ringtrace, dpdk)\n"
		"  --file PATH      file written by write() (ftrace: trace_marker_raw)\n"
		"  --buffer BYTES   buffer size (ringtrace pool, dpdk per-thread buffer)\n"
		"  --wait FIFO      print READY, then wait for a line on FIFO before the warm-up\n"
		"  --interval-us U  latency: wake-up interval (default 200)\n"
		"  --prio P         latency: SCHED_FIFO priority (default 95, 0 = none)\n",
		backend_name);
}

int main(int argc, char **argv)
{
	struct cmp_opts o = {
		.what = "micro",
		.n = 1000000,
		.warmup = 100000,
		.cpu = 0,
		.mode = "discard",
		.interval_us = 200,
		.prio = 95,
	};
	static const struct option longopts[] = {
		{"what", required_argument, NULL, 'w'},
		{"n", required_argument, NULL, 'n'},
		{"warmup", required_argument, NULL, 'W'},
		{"cpu", required_argument, NULL, 'c'},
		{"mode", required_argument, NULL, 'm'},
		{"off", no_argument, NULL, 'o'},
		{"dir", required_argument, NULL, 'd'},
		{"file", required_argument, NULL, 'f'},
		{"buffer", required_argument, NULL, 'b'},
		{"wait", required_argument, NULL, 'a'},
		{"interval-us", required_argument, NULL, 'i'},
		{"prio", required_argument, NULL, 'p'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'w':
			o.what = optarg;
			break;
		case 'n':
			o.n = strtoull(optarg, NULL, 0);
			break;
		case 'W':
			o.warmup = strtoull(optarg, NULL, 0);
			break;
		case 'c':
			o.cpu = atoi(optarg);
			break;
		case 'm':
			o.mode = optarg;
			break;
		case 'o':
			o.off = 1;
			break;
		case 'd':
			o.dir = optarg;
			break;
		case 'f':
			o.file = optarg;
			break;
		case 'b':
			o.buffer = strtoull(optarg, NULL, 0);
			break;
		case 'a':
			o.wait = optarg;
			break;
		case 'i':
			o.interval_us = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'p':
			o.prio = atoi(optarg);
			break;
		case 'h':
			cmp_usage(stdout);
			return 0;
		default:
			cmp_usage(stderr);
			return 2;
		}
	}
	if (optind < argc || !o.n ||
	    (strcmp(o.what, "micro") && strcmp(o.what, "close") && strcmp(o.what, "latency")) ||
	    (strcmp(o.mode, "discard") && strcmp(o.mode, "overwrite")) || !o.interval_us) {
		cmp_usage(stderr);
		return 2;
	}
	o.overwrite = strcmp(o.mode, "overwrite") == 0;
	int latency = strcmp(o.what, "latency") == 0;
	int dma_fd = -1;
	if (latency) {
		mlockall(MCL_CURRENT | MCL_FUTURE); /* as cyclictest -m */
		/* As cyclictest: a PM QoS request for zero exit latency (no deep
		 * C-state) while the file is open; released when it closes. */
		int32_t zero = 0;
		dma_fd = open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);
		if (dma_fd >= 0 && write(dma_fd, &zero, sizeof(zero)) != (ssize_t)sizeof(zero)) {
			close(dma_fd);
			dma_fd = -1;
		}
	}

	if (backend_init(&o) != 0)
		return 1;
	cmp_pin(o.cpu);
	if (o.wait)
		cmp_wait_fifo(o.wait);
	if (latency && o.prio > 0) {
		struct sched_param sp = {.sched_priority = o.prio};
		if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0)
			cmp_die("SCHED_FIFO %d: %s", o.prio, strerror(errno));
	}

	struct cmp_result r = {.recorded = -1, .lost = -1, .expected = o.warmup + o.n};
	/* Warm-up: the same code, so the call path, the tracer's per-thread
	 * state and the first pages of its buffer are ready before timing. */
	if (!strcmp(o.what, "micro"))
		cmp_loop_micro(0, o.warmup);
	else if (!strcmp(o.what, "close"))
		cmp_loop_close(0, o.warmup);
	else
		cmp_latency(&o, &r, o.warmup, 0);
	backend_ready(&o, &r);

	uint64_t t0 = cmp_now_ns();
	if (!strcmp(o.what, "micro"))
		cmp_loop_micro(o.warmup, o.n);
	else if (!strcmp(o.what, "close"))
		cmp_loop_close(o.warmup, o.n);
	else
		cmp_latency(&o, &r, o.n, 1);
	uint64_t t1 = cmp_now_ns();
	r.ns = (double)(t1 - t0) / (double)o.n;

	if (latency && o.prio > 0) {
		struct sched_param sp = {.sched_priority = 0};
		sched_setscheduler(0, SCHED_OTHER, &sp);
	}
	if (dma_fd >= 0)
		close(dma_fd);
	backend_finish(&o, &r);
	printf("RESULT tracer=%s what=%s mode=%s off=%d n=%" PRIu64 " warmup=%" PRIu64
	       " ns=%.3f lat_min=%.0f lat_avg=%.1f lat_max=%.0f expected=%" PRIu64
	       " recorded=%" PRId64 " lost=%" PRId64 " note=\"%s\"\n",
	       backend_name, o.what, o.mode, o.off, o.n, o.warmup, r.ns, r.lat_min, r.lat_avg,
	       r.lat_max, r.expected, r.recorded, r.lost, r.note);
	return 0;
}

#endif /* CMP_HARNESS_H */
