/*
 * tests/layout_lock_prog.c - a program that compiles the inline code of
 * ringtrace/static/: an event (its call site and generated recording
 * functions) and a ringtrace_printf() call site. test_layout_lock.sh
 * builds it against the headers, and against a copy of them with another
 * layout version.
 */
#define RINGTRACE_CREATE_EVENTS
#include <ringtrace/printf.h>
#include <ringtrace/tracepoint.h>

RINGTRACE_EVENT(layout_lock_hello, RINGTRACE_PROTO(int i), RINGTRACE_ARGS(i),
		RINGTRACE_FIELDS(ringtrace_integer(int32_t, i, i)), RINGTRACE_PRINT("i=%d"))

int main(void)
{
	for (int i = 0; i < 3; i++) {
		trace_layout_lock_hello(i);
		ringtrace_printf("i=%d", i);
	}
	return 0;
}
