/*
 * bench/cmp/cmp_rt_events.h - the ringtrace event of bench/compare: one
 * int, the same payload as every other tracer's event. Defined
 * (RINGTRACE_CREATE_EVENTS) in cmp_rt_events.c only.
 */
#ifndef CMP_RT_EVENTS_H
#define CMP_RT_EVENTS_H

#include <stdint.h>

#include "ringtrace/tracepoint.h"

RINGTRACE_EVENT(cmp_int, RINGTRACE_PROTO(int v), RINGTRACE_ARGS(v),
		RINGTRACE_FIELDS(ringtrace_integer(int32_t, v, v)), RINGTRACE_PRINT("v=%d"))

#endif /* CMP_RT_EVENTS_H */
