// test_event_cxx_unwind: C++ regressions from the events-layer review.
//
//  1. A probe throws; the thread that called the tracepoint catches the
//     exception (the call is inside try/catch), so the read-side section
//     the tracepoint opened is never closed; then that thread exits. Its
//     reader node is cleaned up at exit: afterwards registering and
//     unregistering probes (a grace period each) on that event and on
//     another one still returns. The old code left the node "inside a
//     section" forever and every later grace period hung; alarm(10) turns
//     a hang into a failure.
//  2. ringtrace_printf("%d", i++) evaluates i++ exactly once, on the first
//     (registering) call of a site too: the old C++ side took the types
//     from the arguments themselves, evaluating them once more.
//  3. Char arrays and string literals are recorded as strings: the text
//     formatted at read time equals snprintf's, and the site's types say
//     RINGTRACE_PF_STRING.
// Each is a case, with its own buffer (unwind_setup).
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#define RINGTRACE_CREATE_EVENTS
#include <ringtrace/tracepoint.h>

#include "events_util.h"

RINGTRACE_EVENT(uw_throw, RINGTRACE_PROTO(int a), RINGTRACE_ARGS(a),
		RINGTRACE_FIELDS(ringtrace_integer(int32_t, a, a)), RINGTRACE_PRINT("a=%d"))

RINGTRACE_EVENT(uw_other, RINGTRACE_PROTO(int a), RINGTRACE_ARGS(a),
		RINGTRACE_FIELDS(ringtrace_integer(int32_t, a, a)), RINGTRACE_PRINT("a=%d"))

namespace
{

int thrown, caught, other_calls;

void probe_throw(void *, int a)
{
	if (a == 1) {
		__atomic_add_fetch(&thrown, 1, __ATOMIC_RELAXED);
		throw 42;
	}
}
void probe_noop(void *, int)
{
}
void probe_count(void *, int)
{
	__atomic_add_fetch(&other_calls, 1, __ATOMIC_RELAXED);
}

void on_alarm(int)
{
	static const char msg[] = "test_event_cxx_unwind: a grace period hung (alarm)\n";
	ssize_t w = write(2, msg, sizeof(msg) - 1);
	(void)w;
	_exit(1);
}

// ---- 1 ----
void check_exception_through_probe()
{
	thrown = caught = other_calls = 0;
	CHECK(ringtrace_probe_register_uw_throw(probe_throw, nullptr) == 0);
	for (int round = 0; round < 2; round++) {
		std::thread t([] {
			try {
				trace_uw_throw(1);
			} catch (int v) {
				if (v == 42)
					__atomic_add_fetch(&caught, 1, __ATOMIC_RELAXED);
			}
			trace_uw_throw(2); // a nested section now; must not matter either
		});
		t.join();
	}
	CHECK(thrown == 2 && caught == 2);

	alarm(10);
	// the same event: replacing the probe set waits for a grace period
	CHECK(ringtrace_probe_register_uw_throw(probe_noop, nullptr) == 0);
	CHECK(ringtrace_probe_unregister_uw_throw(probe_throw, nullptr) == 0);
	// another event
	CHECK(ringtrace_probe_register_uw_other(probe_count, nullptr) == 0);
	trace_uw_other(5);
	CHECK(other_calls == 1);
	CHECK(ringtrace_probe_unregister_uw_other(probe_count, nullptr) == 0);
	trace_uw_other(6);
	CHECK(other_calls == 1);
	CHECK(ringtrace_probe_unregister_uw_throw(probe_noop, nullptr) == 0);
	ringtrace_synchronize();
	// threads that come and go after that are fine too
	std::thread([] { trace_uw_throw(3); }).join();
	CHECK(ringtrace_probe_register_uw_other(probe_count, nullptr) == 0);
	CHECK(ringtrace_probe_unregister_uw_other(probe_count, nullptr) == 0);
	alarm(0);
}

// ---- 2, 3 ----
struct Expect {
	std::string text;
	std::string fmt;
	std::vector<uint8_t> types;
};
std::vector<Expect> expected;

void exp_add(std::vector<uint8_t> types, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void exp_add(std::vector<uint8_t> types, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	expected.push_back(Expect{buf, fmt, types});
}

int bump(int &i)
{
	ringtrace_printf("bump %d", i++);
	return i;
}

int calls;
int next_value()
{
	return ++calls;
}

int bump2(int &i, long &j)
{
	ringtrace_printf("bump2 %d %ld %d", i++, j += 10, next_value());
	return i;
}

const char *const S = "S";

// 2.
void check_printf_args()
{
	calls = 0;
	int i = 0;
	long j = 0;
	CHECK(bump(i) == 1);
	CHECK(bump(i) == 2);
	CHECK(bump(i) == 3);
	exp_add({RINGTRACE_PF_S64}, "bump %d", 0);
	exp_add({RINGTRACE_PF_S64}, "bump %d", 1);
	exp_add({RINGTRACE_PF_S64}, "bump %d", 2);
	CHECK(bump2(i, j) == 4 && j == 10 && calls == 1);
	CHECK(bump2(i, j) == 5 && j == 20 && calls == 2);
	exp_add({RINGTRACE_PF_S64, RINGTRACE_PF_S64, RINGTRACE_PF_S64}, "bump2 %d %ld %d", 3, 10L,
		1);
	exp_add({RINGTRACE_PF_S64, RINGTRACE_PF_S64, RINGTRACE_PF_S64}, "bump2 %d %ld %d", 4, 20L,
		2);
}

// 3.
void check_printf_strings()
{
	char cbuf[16] = "char array";
	const char carr[] = "const array";
	char(&cref)[16] = cbuf;
	static char sbuf[8] = "static";
	const uint8_t ST = RINGTRACE_PF_STRING;
	ringtrace_printf("a=%s", cbuf);
	exp_add({ST}, "a=%s", cbuf);
	ringtrace_printf("b=%s", carr);
	exp_add({ST}, "b=%s", carr);
	ringtrace_printf("c=%s", "literal");
	exp_add({ST}, "c=%s", "literal");
	ringtrace_printf("d=%s|%s|%s", cref, sbuf, S);
	exp_add({ST, ST, ST}, "d=%s|%s|%s", cref, sbuf, S);
	ringtrace_printf("e=[%8s] [%-6.3s] %d", "lit", cbuf, 5);
	exp_add({ST, ST, RINGTRACE_PF_S64}, "e=[%8s] [%-6.3s] %d", "lit", cbuf, 5);
}

void check_printf_records(ringtrace_rb *rb)
{
	evu_list l = evu_list();
	evu_collect(rb, &l);
	std::vector<const evu_event *> pf;
	for (size_t k = 0; k < l.n; k++)
		if (l.ev[k].id == RINGTRACE_EVENT_ID_PRINTF)
			pf.push_back(&l.ev[k]);
	CHECKF(pf.size() == expected.size(), "%zu printf records, expected %zu", pf.size(),
	       expected.size());
	int bad = 0;
	for (size_t k = 0; k < pf.size(); k++) {
		const evu_event *e = pf[k];
		uint32_t sid;
		std::memcpy(&sid, e->data, 4);
		const ringtrace_printf_site *site = ringtrace_printf_site_by_id(sid);
		CHECK(site != nullptr);
		CHECKF(expected[k].fmt == site->fmt, "record %zu: format \"%s\", expected \"%s\"",
		       k, site->fmt, expected[k].fmt.c_str());
		CHECK_EQ_U64(site->nargs, expected[k].types.size());
		for (uint32_t a = 0; a < site->nargs; a++)
			CHECKF(site->types[a] == expected[k].types[a],
			       "\"%s\": argument %u has type %u, expected %u", site->fmt, a,
			       site->types[a], expected[k].types[a]);
		char buf[512];
		int r = ringtrace_printf_format(site->fmt, site->types, site->nargs, e->data,
						e->len, buf, sizeof(buf));
		CHECK(r >= 0);
		if (expected[k].text != buf) {
			std::fprintf(stderr, "  \"%s\": got \"%s\", snprintf \"%s\"\n", site->fmt,
				     buf, expected[k].text.c_str());
			bad++;
		}
	}
	CHECKF(bad == 0, "%d of %zu printf records differ from snprintf", bad, pf.size());
	evu_list_free(&l);
}

// A buffer, ringtrace_printf and the uw_ events recorded.
ringtrace_rb *unwind_setup()
{
	expected.clear();
	ringtrace_rb *rb = evu_buffer(64u << 10, 8);
	CHECK(ringtrace_event_enable("ringtrace_printf") == 1);
	CHECK(ringtrace_event_enable("uw_*") == 2);
	return rb;
}

void test_exception()
{
	ringtrace_rb *rb = unwind_setup();
	check_exception_through_probe();
	evu_buffer_done(rb);
}

void test_args_once()
{
	ringtrace_rb *rb = unwind_setup();
	check_printf_args();
	check_printf_records(rb);
	evu_buffer_done(rb);
}

void test_char_arrays()
{
	ringtrace_rb *rb = unwind_setup();
	check_printf_strings();
	check_printf_records(rb);
	evu_buffer_done(rb);
}

/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
const check_case cases[] = {
	CHECK_CASE(event_cxx_unwind_probe_exception_then_thread_exit_grace_periods_end, test_exception),
	CHECK_CASE(event_cxx_unwind_printf_arguments_evaluated_once, test_args_once),
	CHECK_CASE(event_cxx_unwind_printf_char_arrays_recorded_as_strings, test_char_arrays),
};
/* clang-format on */

} // namespace

int main(int argc, char **argv)
{
	// a watchdog for the whole run (the exception case sets its own)
	std::signal(SIGALRM, on_alarm);
	alarm(20);
	int rc = CHECK_MAIN(cases, argc, argv);
	alarm(0);
	return rc;
}
