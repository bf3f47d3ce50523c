/*
 * tests/events_cxx.h - events of test_event_cxx.cpp, defined and called
 * from C++ (the test defines RINGTRACE_CREATE_EVENTS).
 */
#ifndef RINGTRACE_TESTS_EVENTS_CXX_H
#define RINGTRACE_TESTS_EVENTS_CXX_H

#include <stdint.h>

#include <ringtrace/tracepoint.h>

RINGTRACE_ENUM(cx_mode, RINGTRACE_ENUM_VALUE("OFF", 0) RINGTRACE_ENUM_VALUE("ON", 1))

RINGTRACE_EVENT(cx_all,
		RINGTRACE_PROTO(int16_t a, uint64_t b, double d, float f, bool flag, const void *p,
				int mode, const int32_t *arr, const char *s, const void *bytes,
				size_t blen),
		RINGTRACE_ARGS(a, b, d, f, flag, p, mode, arr, s, bytes, blen),
		RINGTRACE_FIELDS(ringtrace_integer(int16_t, a, a) ringtrace_integer(
			uint64_t, b, b) ringtrace_float(double, d, d) ringtrace_float(float, f, f)
					 ringtrace_bool(flag, flag) ringtrace_pointer(p, p)
						 ringtrace_enum(cx_mode, int32_t, mode, mode)
							 ringtrace_array(int32_t, arr, arr,
									 3) ringtrace_string(s, s)
								 ringtrace_bytes(bytes, bytes,
										 blen)),
		RINGTRACE_PRINT("a=%d b=%llu d=%g f=%g flag=%d p=%p mode=%s arr=%s s=%s bytes=%s"))

RINGTRACE_EVENT_KIND(RINGTRACE_KIND_END, cx_small, RINGTRACE_PROTO(uint8_t v), RINGTRACE_ARGS(v),
		     RINGTRACE_FIELDS(ringtrace_integer(uint8_t, v, v)), RINGTRACE_PRINT("v=%u"))

#endif
