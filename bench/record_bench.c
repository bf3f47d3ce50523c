/*
 * ringtrace-bench record: can the recorder keep up?
 *
 * One producer thread emits one-int events (bench_int) at a fixed rate
 * (default 20 M events/s) into an in-process session (discard mode,
 * default buffer), whose consumer thread writes the pages to a trace
 * directory (default on tmpfs, /dev/shm). The producer is pinned to one
 * CPU and the consumer to the other. The rate is held by emitting bursts
 * of 1000 events and waiting for the clock between bursts. At the end the
 * session stops and the recorder's own accounting says what was lost.
 *
 * Output, one `key: value` per line: offered rate, events, recorded,
 * lost (dropped + overrun), bytes written, write throughput, and
 * `result: zero loss` or `result: LOST N events`. --rate 0 runs the
 * producer as fast as it can, to find the recorder's ceiling.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ringtrace/session.h>

#include "bench.h"
#include "bench_common.h"
#include "bench_events.h"

struct rec_opts {
	uint64_t rate;
	double seconds;
	const char *dir;
};

struct producer {
	const struct rec_opts *o;
	uint64_t events;
	uint64_t ns;
};

static void *producer_main(void *arg)
{
	struct producer *p = arg;
	bench_pin_self(0);
	const uint64_t burst = 1000;
	uint64_t t0 = bench_now_ns(), end = t0 + (uint64_t)(p->o->seconds * 1e9);
	uint64_t n = 0, now = t0;
	while (now < end) {
		for (uint64_t i = 0; i < burst; i++)
			trace_bench_int((int)(n + i));
		n += burst;
		now = bench_now_ns();
		if (p->o->rate) {
			/* wait until this many events are due */
			uint64_t due = t0 + (uint64_t)((double)n * 1e9 / (double)p->o->rate);
			while (now < due) {
				bench_cpu_relax();
				now = bench_now_ns();
			}
		}
	}
	p->events = n;
	p->ns = now - t0;
	return NULL;
}

static void record_usage(FILE *f)
{
	fprintf(f,
		"usage: ringtrace-bench record [options]\n\n"
		"A producer emits one-int events at a fixed rate into an in-process recording\n"
		"session writing a trace directory; reports what the recorder kept and lost.\n\n"
		"options:\n"
		"  --rate N        events per second, 0 = as fast as possible (default 20000000)\n"
		"  --seconds S     how long to produce (default 3)\n"
		"  --dir DIR       trace directory, removed first (default /dev/shm/ringtrace-bench-record)\n"
		"  -h, --help      this help\n");
}

int record_bench_main(int argc, char **argv)
{
	struct rec_opts o = {20000000ull, 3.0, "/dev/shm/ringtrace-bench-record"};
	static const struct option longopts[] = {
		{"rate", required_argument, NULL, 'r'},
		{"seconds", required_argument, NULL, 's'},
		{"dir", required_argument, NULL, 'd'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			record_usage(stdout);
			return BENCH_EXIT_OK;
		case 'r':
			if (bench_parse_u64(optarg, 0, 10000000000ull, &o.rate))
				return bench_usage_error("record", "--rate: '%s' is not a rate",
							 optarg);
			break;
		case 's':
			if (bench_parse_seconds(optarg, 600, &o.seconds))
				return bench_usage_error(
					"record", "--seconds: '%s' is not a duration", optarg);
			break;
		case 'd':
			o.dir = optarg;
			break;
		default: /* ':' missing value, '?' unknown option */
			return bench_getopt_error("record", c, argv);
		}
	}
	if (optind < argc)
		return bench_usage_error("record", "unexpected argument '%s'", argv[optind]);
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", o.dir);
	if (system(cmd) != 0) {
		fprintf(stderr, "ringtrace-bench record: cannot remove %s\n", o.dir);
		return BENCH_EXIT_FAIL;
	}
	/* The session's consumer thread inherits this thread's CPU. */
	bench_pin_self(1);
	struct ringtrace_session_config cfg;
	ringtrace_session_config_init(&cfg);
	cfg.output_dir = o.dir;
	cfg.events = "bench_int";
	if (ringtrace_session_start(&cfg) < 0) {
		fprintf(stderr, "ringtrace-bench record: %s\n", ringtrace_last_error());
		return BENCH_EXIT_FAIL;
	}
	struct producer p = {&o, 0, 0};
	pthread_t t;
	if (pthread_create(&t, NULL, producer_main, &p) != 0) {
		fprintf(stderr, "ringtrace-bench record: cannot start the producer\n");
		return BENCH_EXIT_FAIL;
	}
	pthread_join(t, NULL);
	struct ringtrace_trace_stats st;
	ringtrace_session_stats(&st);
	uint64_t t_stop = bench_now_ns();
	if (ringtrace_session_stop() < 0) {
		fprintf(stderr, "ringtrace-bench record: %s\n", ringtrace_last_error());
		return BENCH_EXIT_FAIL;
	}
	double stop_ms = (double)(bench_now_ns() - t_stop) / 1e6;
	/* Final accounting: what the metadata says. */
	char path[4200], line[512];
	snprintf(path, sizeof(path), "%s/metadata", o.dir);
	FILE *f = fopen(path, "r");
	uint64_t hit = 0, missed = 0, overrun = 0, bytes = 0, pages = 0;
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long v;
		if (sscanf(line, "stat hit %llu", &v) == 1)
			hit = v;
		if (sscanf(line, "stat missed %llu", &v) == 1)
			missed = v;
		if (sscanf(line, "stat overrun %llu", &v) == 1)
			overrun = v;
		if (sscanf(line, "stat bytes %llu", &v) == 1)
			bytes = v;
		if (sscanf(line, "stat pages %llu", &v) == 1)
			pages = v;
	}
	if (f)
		fclose(f);
	double secs = (double)p.ns / 1e9;
	printf("offered rate: %.2f M events/s%s\n", (double)p.events / secs / 1e6,
	       o.rate ? "" : " (unpaced)");
	printf("events: %" PRIu64 "\n", p.events);
	printf("recorded: %" PRIu64 "\n", hit);
	printf("lost: %" PRIu64 " (dropped %" PRIu64 ", overrun %" PRIu64 ")\n", missed + overrun,
	       missed, overrun);
	printf("pages written: %" PRIu64 "\n", pages);
	printf("bytes written: %" PRIu64 "\n", bytes);
	printf("write throughput: %.1f MB/s\n", (double)bytes / secs / 1e6);
	printf("stop (flush, drain, metadata): %.1f ms\n", stop_ms);
	int ok = hit + missed == p.events;
	if (!ok)
		printf("WARNING: accounting: recorded %" PRIu64 " + dropped %" PRIu64 " != %" PRIu64
		       " events\n",
		       hit, missed, p.events);
	if (missed + overrun == 0)
		printf("result: zero loss\n");
	else
		printf("result: LOST %" PRIu64 " events\n", missed + overrun);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", o.dir);
	if (system(cmd) != 0)
		fprintf(stderr, "ringtrace-bench record: could not remove %s\n", o.dir);
	return ok ? BENCH_EXIT_OK : BENCH_EXIT_FAIL;
}
