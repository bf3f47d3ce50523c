/*
 * test_event_hygiene_data: compile-only. An event parameter named
 * ringtrace_data must compile (the generated probe typedef once named its
 * first parameter so, which made this "redefinition of parameter" in C and
 * "conflicting declaration" in C++). CTest compiles this file as C and as
 * C++.
 */
#define RINGTRACE_CREATE_EVENTS
#include <ringtrace/tracepoint.h>

RINGTRACE_EVENT(hy_data, RINGTRACE_PROTO(int ringtrace_data, unsigned rt_o),
		RINGTRACE_ARGS(ringtrace_data, rt_o),
		RINGTRACE_FIELDS(ringtrace_integer(int32_t, data, ringtrace_data)
					 ringtrace_integer(uint32_t, o, rt_o)),
		RINGTRACE_PRINT("data=%d o=%u"))

static void probe(void *d, int data, unsigned o)
{
	(void)d;
	(void)data;
	(void)o;
}

int main(void)
{
	ringtrace_probe_register_hy_data(probe, 0);
	trace_hy_data(1, 2);
	return 0;
}
