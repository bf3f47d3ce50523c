/*
 * The demo's events: one of each field type, in the shape users write.
 * demo.c includes this with RINGTRACE_CREATE_EVENTS defined.
 */
#ifndef DEMO_EVENTS_H
#define DEMO_EVENTS_H

#include <ringtrace/tracepoint.h>
#include <stdbool.h>

RINGTRACE_ENUM(demo_op, RINGTRACE_ENUM_VALUE("HASH", 0) RINGTRACE_ENUM_VALUE("SORT", 1)
				RINGTRACE_ENUM_VALUE("COPY", 2))

/* One per loop iteration of every worker: seq counts up per thread. */
RINGTRACE_EVENT(demo_tick, RINGTRACE_PROTO(uint64_t seq, uint32_t worker),
		RINGTRACE_ARGS(seq, worker),
		RINGTRACE_FIELDS(ringtrace_integer(uint64_t, seq, seq)
					 ringtrace_integer(uint32_t, worker, worker)),
		RINGTRACE_PRINT("seq=%llu worker=%u"))

RINGTRACE_EVENT_KIND(RINGTRACE_KIND_BEGIN, demo_work_begin,
		     RINGTRACE_PROTO(int op, const char *item, int16_t prio),
		     RINGTRACE_ARGS(op, item, prio),
		     RINGTRACE_FIELDS(ringtrace_enum(demo_op, int32_t, op, op)
					      ringtrace_string(item, item)
						      ringtrace_integer(int16_t, prio, prio)),
		     RINGTRACE_PRINT("op=%s item=%s prio=%d"))

RINGTRACE_EVENT_KIND(
	RINGTRACE_KIND_END, demo_work_end,
	RINGTRACE_PROTO(int op, uint64_t digest, double ms, bool ok, const uint8_t *bytes,
			size_t nbytes, const int32_t *hist, const void *where),
	RINGTRACE_ARGS(op, digest, ms, ok, bytes, nbytes, hist, where),
	RINGTRACE_FIELDS(ringtrace_enum(demo_op, int32_t, op, op) ringtrace_integer(
		uint64_t, digest, digest) ringtrace_float(double, ms, ms) ringtrace_bool(ok, ok)
				 ringtrace_bytes(head, bytes, nbytes) ringtrace_array(
					 int32_t, hist, hist, 4) ringtrace_pointer(where, where)
					 ringtrace_integer(int8_t, small, (int8_t)(digest & 0x7f))
						 ringtrace_float(float, ratio, (float)(ms / 3.0))),
	RINGTRACE_PRINT(
		"op=%s digest=%llx ms=%.3f ok=%d head=%s hist=%s where=%p small=%d ratio=%.2f"))

#endif
