/*
 * bench/cmp/cmp_dpdk_tp.c - registers the tracepoint of cmp_dpdk_tp.h
 * (a translation unit of its own: with rte_trace_point_register.h included
 * first, the tracepoint function only describes its fields).
 */
#include <rte_trace_point_register.h>

#include "cmp_dpdk_tp.h"

RTE_TRACE_POINT_REGISTER(cmp_trace_ev, cmp.ev)
