/*
 * tests/events_dl.h - events of the shared library dl_events_lib.c, which
 * test_event_dlopen loads and unloads with dlopen()/dlclose().
 */
#ifndef RINGTRACE_TESTS_EVENTS_DL_H
#define RINGTRACE_TESTS_EVENTS_DL_H

#include <stdint.h>

#include <ringtrace/tracepoint.h>

RINGTRACE_ENUM(dl_color, RINGTRACE_ENUM_VALUE("RED", 1) RINGTRACE_ENUM_VALUE("GREEN", 2))

RINGTRACE_EVENT(dl_ev_one, RINGTRACE_PROTO(int x, int color), RINGTRACE_ARGS(x, color),
		RINGTRACE_FIELDS(ringtrace_integer(int32_t, x, x)
					 ringtrace_enum(dl_color, uint8_t, color, color)),
		RINGTRACE_PRINT("x=%d color=%s"))

RINGTRACE_EVENT(dl_ev_str, RINGTRACE_PROTO(const char *s, uint32_t n), RINGTRACE_ARGS(s, n),
		RINGTRACE_FIELDS(ringtrace_string(s, s) ringtrace_integer(uint32_t, n, n)),
		RINGTRACE_PRINT("s=%s n=%u"))

/* The library's entry point: n dl_ev_one events, then one dl_ev_str. */
typedef int (*dl_events_fire_fn)(int n, const char *s);

#endif
