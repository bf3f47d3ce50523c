/*
 * tests/events_comm.h - the event of test_event_comm (defined in the test
 * itself, which defines RINGTRACE_CREATE_EVENTS).
 */
#ifndef RINGTRACE_TESTS_EVENTS_COMM_H
#define RINGTRACE_TESTS_EVENTS_COMM_H

#include <stdint.h>

#include <ringtrace/tracepoint.h>

RINGTRACE_EVENT(comm_step, RINGTRACE_PROTO(uint32_t who, uint32_t step), RINGTRACE_ARGS(who, step),
		RINGTRACE_FIELDS(ringtrace_integer(uint32_t, who, who)
					 ringtrace_integer(uint32_t, step, step)),
		RINGTRACE_PRINT("who=%u step=%u"))

#endif
