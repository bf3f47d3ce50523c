/*
 * tests/events_enable.h - events of test_event_enable (defined in the test
 * itself, which defines RINGTRACE_CREATE_EVENTS).
 */
#ifndef RINGTRACE_TESTS_EVENTS_ENABLE_H
#define RINGTRACE_TESTS_EVENTS_ENABLE_H

#include <stdint.h>

#include <ringtrace/tracepoint.h>

#define EE_SIMPLE(n)                                                        \
	RINGTRACE_EVENT(n, RINGTRACE_PROTO(int x), RINGTRACE_ARGS(x),       \
			RINGTRACE_FIELDS(ringtrace_integer(int32_t, x, x)), \
			RINGTRACE_PRINT("x=%d"))

EE_SIMPLE(ev_a)
EE_SIMPLE(ev_ab)
EE_SIMPLE(ev_b)
EE_SIMPLE(ev_c)
EE_SIMPLE(ev_x)
EE_SIMPLE(cfg_a)
EE_SIMPLE(cfg_b)
EE_SIMPLE(cfg_c1)
EE_SIMPLE(cfg_c2)

/* The two tracepoints the concurrency part hammers. */
#define EE_CHK(th, seq) ((uint64_t)(seq)*0x9E3779B97F4A7C15ull ^ (uint64_t)(th))
RINGTRACE_EVENT(ev_t1, RINGTRACE_PROTO(uint32_t th, uint64_t seq, const char *s),
		RINGTRACE_ARGS(th, seq, s),
		RINGTRACE_FIELDS(ringtrace_integer(uint32_t, th, th) ringtrace_string(s, s)
					 ringtrace_integer(uint64_t, seq, seq)
						 ringtrace_integer(uint64_t, chk, EE_CHK(th, seq))),
		RINGTRACE_PRINT("th=%u s=%s seq=%llu chk=%llx"))
RINGTRACE_EVENT(ev_t2, RINGTRACE_PROTO(uint32_t th, uint64_t seq, const char *s),
		RINGTRACE_ARGS(th, seq, s),
		RINGTRACE_FIELDS(ringtrace_integer(uint64_t, seq, seq)
					 ringtrace_integer(uint32_t, th, th)
						 ringtrace_integer(uint64_t, chk, EE_CHK(th, seq))
							 ringtrace_string(s, s)),
		RINGTRACE_PRINT("seq=%llu th=%u chk=%llx s=%s"))

#endif
