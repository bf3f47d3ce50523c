/*
 * A shared library with events of its own (tests/events_dl.h), loaded by
 * test_event_dlopen: its constructors register the events when it is
 * loaded, its destructors unregister them at dlclose().
 */
#define RINGTRACE_CREATE_EVENTS
#include "events_dl.h"

__attribute__((visibility("default"))) int dl_events_fire(int n, const char *s);

int dl_events_fire(int n, const char *s)
{
	for (int i = 0; i < n; i++)
		trace_dl_ev_one(i, 1 + (i & 1));
	trace_dl_ev_str(s, (uint32_t)n);
	return n + 1;
}

/*
 * ringtrace_printf from the library (test_printf_dlclose): the call site's
 * format, file name and argument types are static data of this library,
 * unmapped at dlclose while the trace still holds the records.
 */
__attribute__((visibility("default"))) void dl_events_printf(int n, const char *s);

void dl_events_printf(int n, const char *s)
{
	ringtrace_printf("dl printf n=%d s=%s lit=%s", n, s, "library literal");
}
