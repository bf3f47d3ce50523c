/*
 * tests/events_fields.h - events of test_event_fields: every field type,
 * defined the way a user does (RINGTRACE_CREATE_EVENTS in one file).
 */
#ifndef RINGTRACE_TESTS_EVENTS_FIELDS_H
#define RINGTRACE_TESTS_EVENTS_FIELDS_H

#include <stdbool.h>
#include <stdint.h>

#include <ringtrace/tracepoint.h>

RINGTRACE_ENUM(fe_state, RINGTRACE_ENUM_VALUE("IDLE", 0) RINGTRACE_ENUM_VALUE("BUSY", 1)
				 RINGTRACE_ENUM_VALUE("NEG", -1) RINGTRACE_ENUM_VALUE("BIG", 100))

RINGTRACE_ENUM(fe_big, RINGTRACE_ENUM_VALUE("ZERO", 0) RINGTRACE_ENUM_VALUE("MAX", UINT32_MAX))

/* Every integer width, signed and unsigned: no variable-length field. */
RINGTRACE_EVENT(fe_ints,
		RINGTRACE_PROTO(int8_t a, int16_t b, int32_t c, int64_t d, uint8_t e, uint16_t f,
				uint32_t g, uint64_t h),
		RINGTRACE_ARGS(a, b, c, d, e, f, g, h),
		RINGTRACE_FIELDS(ringtrace_integer(int8_t, s8v, a) ringtrace_integer(
			int16_t, s16v, b) ringtrace_integer(int32_t, s32v,
							    c) ringtrace_integer(int64_t, s64v, d)
					 ringtrace_integer(uint8_t, u8v,
							   e) ringtrace_integer(uint16_t, u16v, f)
						 ringtrace_integer(uint32_t, u32v, g)
							 ringtrace_integer(uint64_t, u64v, h)),
		RINGTRACE_PRINT("s8=%d s16=%d s32=%d s64=%lld u8=%u u16=%u u32=%u u64=%llu"))

/* Floats, bool, pointer, enums (signed 8-bit and unsigned 32-bit). */
RINGTRACE_EVENT_KIND(
	RINGTRACE_KIND_COUNTER, fe_scalars,
	RINGTRACE_PROTO(float f, double d, int flag, const void *p, int st, uint32_t big),
	RINGTRACE_ARGS(f, d, flag, p, st, big),
	RINGTRACE_FIELDS(ringtrace_float(float, fv, f) ringtrace_bool(bv, flag)
				 ringtrace_float(double, dv, d) ringtrace_pointer(pv, p)
					 ringtrace_enum(fe_state, int8_t, stv, st)
						 ringtrace_enum(fe_big, uint32_t, bigv, big)),
	RINGTRACE_PRINT("f=%g b=%d d=%g p=%p st=%s big=%s"))

/* Arrays of integers and of floats. */
RINGTRACE_EVENT(fe_arrays,
		RINGTRACE_PROTO(const int8_t *a8, const int64_t *a64, const uint16_t *au16,
				const float *af, const double *ad),
		RINGTRACE_ARGS(a8, a64, au16, af, ad),
		RINGTRACE_FIELDS(ringtrace_array(int8_t, a8v, a8, 3) ringtrace_array(int64_t, a64v,
										     a64, 2)
					 ringtrace_array(uint16_t, au16v, au16, 5)
						 ringtrace_array(float, afv, af, 4)
							 ringtrace_array(double, adv, ad, 3)),
		RINGTRACE_PRINT("a8=%s a64=%s au16=%s af=%s ad=%s"))

/*
 * Variable-length fields interleaved with aligned scalars: the scalars
 * after a string or byte sequence must land at their aligned offsets.
 */
RINGTRACE_EVENT_KIND(
	RINGTRACE_KIND_BEGIN, fe_var,
	RINGTRACE_PROTO(uint8_t tag, const char *s, int16_t mid, const void *b, size_t blen,
			double after, const char *s2, uint64_t last),
	RINGTRACE_ARGS(tag, s, mid, b, blen, after, s2, last),
	RINGTRACE_FIELDS(ringtrace_integer(uint8_t, tag, tag) ringtrace_string(str, s)
				 ringtrace_integer(int16_t, mid, mid) ringtrace_bytes(blob, b, blen)
					 ringtrace_float(double, after, after)
						 ringtrace_string(str2, s2)
							 ringtrace_integer(uint64_t, last, last)),
	RINGTRACE_PRINT("tag=%u str=%s mid=%d blob=%s after=%.2f str2=%s last=%llx"))

/* Nine variable-length fields: the 8th and later share bit 7. */
RINGTRACE_EVENT(fe_nine,
		RINGTRACE_PROTO(const char *s0, const char *s1, const char *s2, const char *s3,
				const char *s4, const char *s5, const char *s6, const char *s7,
				const char *s8),
		RINGTRACE_ARGS(s0, s1, s2, s3, s4, s5, s6, s7, s8),
		RINGTRACE_FIELDS(ringtrace_string(v0, s0) ringtrace_string(v1, s1)
					 ringtrace_string(v2, s2) ringtrace_string(v3, s3)
						 ringtrace_string(v4, s4) ringtrace_string(v5, s5)
							 ringtrace_string(v6, s6)
								 ringtrace_string(v7, s7)
									 ringtrace_string(v8, s8)),
		RINGTRACE_PRINT("%s %s %s %s %s %s %s %s %s"))

/* Expressions of the arguments, with a comma wrapped in parentheses. */
RINGTRACE_EVENT(fe_expr, RINGTRACE_PROTO(int x, int y), RINGTRACE_ARGS(x, y),
		RINGTRACE_FIELDS(ringtrace_integer(int32_t, sum, x + y)
					 ringtrace_integer(int64_t, prod, (int64_t)x *y)
						 ringtrace_integer(int32_t, maxv, (x > y ? x : y))),
		RINGTRACE_PRINT("sum=%d prod=%lld max=%d"))

/* Larger fixed-size records: 256 and 264 bytes. */
RINGTRACE_EVENT(fe_fix256, RINGTRACE_PROTO(const uint64_t *a), RINGTRACE_ARGS(a),
		RINGTRACE_FIELDS(ringtrace_array(uint64_t, a, a, 32)), RINGTRACE_PRINT("a=%s"))
RINGTRACE_EVENT(fe_fix264, RINGTRACE_PROTO(int8_t tag, const uint64_t *a), RINGTRACE_ARGS(tag, a),
		RINGTRACE_FIELDS(ringtrace_integer(int8_t, tag, tag)
					 ringtrace_array(uint64_t, a, a, 32)),
		RINGTRACE_PRINT("tag=%d a=%s"))

/* Never enabled: its call must record nothing. */
RINGTRACE_EVENT(fe_off, RINGTRACE_PROTO(int x), RINGTRACE_ARGS(x),
		RINGTRACE_FIELDS(ringtrace_integer(int32_t, x, x)), RINGTRACE_PRINT("x=%d"))

#endif
