/*
 * tests/events_filter.h - events of test_event_filter (defined in the test,
 * which defines RINGTRACE_CREATE_EVENTS).
 */
#ifndef RINGTRACE_TESTS_EVENTS_FILTER_H
#define RINGTRACE_TESTS_EVENTS_FILTER_H

#include <stdint.h>

#include <ringtrace/tracepoint.h>

/* Fixed size: filtered in the call's fast path when the filter is simple. */
RINGTRACE_EVENT(ft_int, RINGTRACE_PROTO(int32_t value, uint8_t small, int64_t big, uint64_t seq),
		RINGTRACE_ARGS(value, small, big, seq),
		RINGTRACE_FIELDS(ringtrace_integer(int32_t, value, value) ringtrace_integer(
			uint8_t, small, small) ringtrace_integer(int64_t, big, big)
					 ringtrace_integer(uint64_t, seq, seq)
						 ringtrace_float(double, half, value / 2.0)),
		RINGTRACE_PRINT("value=%d small=%u big=%lld seq=%llu half=%g"))

/* Variable size: always the general path. */
RINGTRACE_EVENT(ft_str, RINGTRACE_PROTO(int32_t id, const char *name), RINGTRACE_ARGS(id, name),
		RINGTRACE_FIELDS(ringtrace_integer(int32_t, id, id) ringtrace_string(name, name)
					 ringtrace_integer(uint32_t, after, (uint32_t)id * 3u)),
		RINGTRACE_PRINT("id=%d name=%s after=%u"))

RINGTRACE_EVENT(ft_other, RINGTRACE_PROTO(int v), RINGTRACE_ARGS(v),
		RINGTRACE_FIELDS(ringtrace_integer(int32_t, v, v)), RINGTRACE_PRINT("v=%d"))

RINGTRACE_EVENT(ft_target, RINGTRACE_PROTO(int v), RINGTRACE_ARGS(v),
		RINGTRACE_FIELDS(ringtrace_integer(int32_t, v, v)), RINGTRACE_PRINT("v=%d"))

#endif
