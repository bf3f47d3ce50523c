/*
 * bench/cmp/cmp_lttng_tp.h - the LTTng-UST tracepoint provider of
 * bench/compare: provider "cmp", event "ev", one int field (the same
 * payload as every other tracer's event). LTTng-UST 2.13 API.
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER cmp

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "cmp_lttng_tp.h"

#if !defined(CMP_LTTNG_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define CMP_LTTNG_TP_H

#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(cmp, ev, LTTNG_UST_TP_ARGS(int, v),
			   LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(int, v, v)))

#endif /* CMP_LTTNG_TP_H */

#include <lttng/tracepoint-event.h>
