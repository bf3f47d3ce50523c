/*
 * ringtrace-startup-{plain,static,shared}: the program whose start
 * bench/startup/startup.py measures. Built three times from this file:
 * without the library, linked with libringtrace.a and linked with
 * libringtrace.so. The linked builds define one event and never call it,
 * as a program that nobody traces would: what they cost more than the
 * plain build is what the library costs a process that starts and exits.
 */
#ifdef STARTUP_LINKED
#define RINGTRACE_CREATE_EVENTS
#include <ringtrace/tracepoint.h>

RINGTRACE_EVENT(startup_never, RINGTRACE_PROTO(int value), RINGTRACE_ARGS(value),
		RINGTRACE_FIELDS(ringtrace_integer(int, value, value)), RINGTRACE_PRINT("value=%d"))
#endif

int main(void)
{
	return 0;
}
