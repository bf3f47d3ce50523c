/*
 * bench/cmp/cmp_pair_dpdk.c - cmp-pair's DPDK side: the EAL (started as
 * cmp-dpdk starts it, trace in overwrite mode) and the loops with
 * cmp_trace_ev() inline.
 */
#include <stdio.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_trace.h>

#include "cmp_dpdk_tp.h"
#include "cmp_pair.h"

#define CMP_DPDK_EV_SIZE 16u

CMP_PAIR_LOOPS(dpdk, cmp_trace_ev)

int cmp_pair_dpdk_init(int cpu, const char *dir, uint64_t bufsz)
{
	static char lcore[16], trace_dir[4200], size[48];
	snprintf(lcore, sizeof(lcore), "%d", cpu);
	snprintf(trace_dir, sizeof(trace_dir), "--trace-dir=%s", dir);
	snprintf(size, sizeof(size), "--trace-bufsz=%llu", (unsigned long long)bufsz);
	char *args[] = {(char *)"cmp-pair",
			(char *)"-l",
			lcore,
			(char *)"--no-huge",
			(char *)"-m",
			(char *)"256",
			(char *)"--no-pci",
			(char *)"--no-shconf",
			(char *)"--no-telemetry",
			(char *)"--log-level=*:error",
			(char *)"--trace=^cmp\\.ev$",
			(char *)"--trace-mode=overwrite",
			trace_dir,
			size,
			NULL};
	if (rte_eal_init((int)(sizeof(args) / sizeof(args[0])) - 1, args) < 0) {
		fprintf(stderr, "cmp-pair: rte_eal_init failed: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	if (!rte_trace_is_enabled()) {
		fprintf(stderr, "cmp-pair: rte_trace is not enabled after --trace\n");
		return -1;
	}
	/* The thread's buffer exists after its first event: cover it once
	 * (page faults otherwise land in the first timed chunks; see
	 * cmp_dpdk.c). */
	cmp_trace_ev(0);
	struct __rte_trace_header *h = (struct __rte_trace_header *)RTE_PER_LCORE(trace_mem);
	if (!h) {
		fprintf(stderr, "cmp-pair: rte_trace: no per-thread buffer after an event\n");
		return -1;
	}
	for (uint64_t i = 0; i < h->len / CMP_DPDK_EV_SIZE + 16; i++)
		cmp_trace_ev((int)i);
	return 0;
}

uint32_t cmp_pair_dpdk_buffer_len(void)
{
	struct __rte_trace_header *h = (struct __rte_trace_header *)RTE_PER_LCORE(trace_mem);
	return h ? h->len : 0;
}

/* Save DPDK's trace (as cmp-dpdk does) and stop the EAL: -1 if the save failed. */
int cmp_pair_dpdk_finish(void)
{
	int rc = 0;
	if (rte_trace_save() < 0) {
		fprintf(stderr, "cmp-pair: rte_trace_save failed\n");
		rc = -1;
	}
	rte_eal_cleanup();
	return rc;
}
