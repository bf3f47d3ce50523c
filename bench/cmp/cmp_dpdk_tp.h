/*
 * bench/cmp/cmp_dpdk_tp.h - the DPDK rte_trace tracepoint of bench/compare:
 * "cmp.ev", one int field. RTE_TRACE_POINT (not _FP: the fast-path class
 * is compiled out unless DPDK itself was built with RTE_ENABLE_TRACE_FP;
 * enabled, both emit the same code). Needs -DALLOW_EXPERIMENTAL_API.
 */
#ifndef CMP_DPDK_TP_H
#define CMP_DPDK_TP_H

#include <rte_trace_point.h>

RTE_TRACE_POINT(cmp_trace_ev, RTE_TRACE_POINT_ARGS(int v), rte_trace_point_emit_int(v);)

#endif /* CMP_DPDK_TP_H */
