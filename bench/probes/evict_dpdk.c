/*
 * bench/probes/evict_dpdk.c - the eviction probe's DPDK loop, with
 * cmp_trace_ev() inline as a DPDK user writes it (the EAL is started by
 * bench/cmp/cmp_pair_dpdk.c's cmp_pair_dpdk_init, as cmp-pair starts it).
 */
#include <rte_trace.h>

#include "cmp_dpdk_tp.h"
#include "evict.h"

EVICT_LOOP(dpdk, cmp_trace_ev)
