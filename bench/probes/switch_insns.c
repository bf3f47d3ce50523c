/*
 * bench/probes/switch_insns.c - how many instructions is a page switch?
 *
 * A probe (docs/benchmarks-history.md, "the page switch's warm-up"),
 * to run under callgrind, which counts instructions exactly
 * where a cycle count on this machine moves with its neighbours: a
 * session like bench/compare's (one-int events, 4 MiB pool, 64 KiB pages)
 * and N events from one thread, with no timer around them (callgrind
 * does not run `rdtscp`). A switch is the call that goes out of line
 * (ringtrace_slow_cmp_int: one in 4,089 here); its inclusive count over
 * its call count is the instructions of one switch, the events layer's
 * part included.
 *
 * Build (after `cmake --build build`):
 *   gcc -O2 -g -Iinclude -Ibench/cmp bench/probes/switch_insns.c bench/cmp/cmp_rt_events.c \
 *       build/lib/libringtrace.a -lpthread -o build/switch_insns
 * Run:
 *   valgrind --tool=callgrind --callgrind-out-file=/tmp/sw.out \
 *       build/switch_insns overwrite /dev/shm/sw 1000000
 *   callgrind_annotate --inclusive=yes --threshold=100 /tmp/sw.out | grep slow_cmp_int
 *   callgrind_annotate --tree=calling --threshold=100 /tmp/sw.out | grep -A8 'rt_reserve_untried \['
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ringtrace/session.h>

#include "cmp_rt_events.h"

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: switch_insns discard|overwrite DIR EVENTS\n");
		return 2;
	}
	struct ringtrace_session_config c;
	ringtrace_session_config_init(&c);
	c.output_dir = argv[2];
	c.events = "cmp_int";
	c.mode = strcmp(argv[1], "overwrite") ? RINGTRACE_RB_DISCARD : RINGTRACE_RB_OVERWRITE;
	c.pool_size = c.mode == RINGTRACE_RB_OVERWRITE ? 4u << 20 : 128u << 20;
	long n = atol(argv[3]);
	if (ringtrace_session_start(&c) < 0) {
		fprintf(stderr, "switch_insns: %s\n", ringtrace_last_error());
		return 1;
	}
	for (long i = 0; i < n; i++)
		trace_cmp_int((int)i);
	if (ringtrace_session_stop() < 0) {
		fprintf(stderr, "switch_insns: stop: %s\n", ringtrace_last_error());
		return 1;
	}
	return 0;
}
