// test_event_cxx: events defined (RINGTRACE_CREATE_EVENTS) and called from
// a C++ translation unit, with every kind of field; typed probes with C++
// callables' plain-function form; ringtrace_printf with C++ argument types
// (its overloads replace C's _Generic), read back and compared with
// snprintf. Every printf mismatch is listed before the test fails.
// Three cases (events, probe, printf) on the records that cxx_record()
// makes for each.
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#define RINGTRACE_CREATE_EVENTS
#include "events_cxx.h"
#include "events_util.h"

static_assert(RINGTRACE_EVENT_ID_FIRST == 2, "ids");

namespace
{

struct Expect {
	std::string text;
	std::string fmt;
	int line;
};
std::vector<Expect> expected;

void exp_add(int line, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void exp_add(int line, const char *fmt, ...)
{
	char buf[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	expected.push_back(Expect{buf, fmt, line});
}

#define PF(...)                                 \
	do {                                    \
		ringtrace_printf(__VA_ARGS__);  \
		exp_add(__LINE__, __VA_ARGS__); \
	} while (0)

int probe_calls;
int16_t probe_a;
std::string probe_s;
void probe(void *data, int16_t a, uint64_t, double, float, bool, const void *, int, const int32_t *,
	   const char *s, const void *, size_t)
{
	*static_cast<int *>(data) += 1;
	probe_a = a;
	probe_s = s ? s : "";
}

// What cxx_record() records, and the records.
int obj;
const int32_t arr[3] = {-1, 0, INT32_MAX};
const std::string s = "from C++";
const unsigned char bytes[4] = {0xde, 0xad, 0xbe, 0xef};
ringtrace_rb *rb;
evu_list l;
int nexp;

// Two cx_all and a cx_small event (a probe on cx_all), then printf calls
// of C++ argument types; all collected into l.
void cxx_record()
{
	expected.clear();
	probe_calls = 0;
	probe_a = 0;
	probe_s.clear();
	rb = evu_buffer(64u << 10, 16);
	l = evu_list();

	CHECK(ringtrace_event_enable("cx_*") == 2);
	CHECK(ringtrace_event_enable("ringtrace_printf") == 1);
	CHECK(ringtrace_probe_register_cx_all(probe, &probe_calls) == 0);

	// ---- events ----
	trace_cx_all(INT16_MIN, UINT64_MAX, -2.5, 0.25f, true, &obj, 1, arr, s.c_str(), bytes, 4);
	trace_cx_all(7, 0, NAN, -INFINITY, false, nullptr, 0, arr, nullptr, nullptr, 0);
	trace_cx_small(255);

	// ---- printf ----
	char cbuf[16] = "array";
	char *cptr = cbuf;
	const char *ccptr = "const";
	int *iptr = &obj;
	void *vptr = &obj;
	long long ll = -1234567890123LL;
	unsigned long ul = 42ul;
	short sh = -3;
	unsigned char uc = 250;
	bool b = true;
	float f = 1.5f;
	PF("no arguments");
	PF("%d %u %lld %lu", -5, 5u, ll, ul);
	PF("%hd %hhu %d %c", sh, uc, b, 'x');
	PF("%f %.2f %e", f, 2.0 / 3, 1e100);
	PF("%s %s", s.c_str(), ccptr);
	PF("%p %p", static_cast<void *>(iptr), vptr);
	PF("[%5d] [%-6d] [%*d] %%", 42, -42, 4, 1);
	PF("%d %d %d %d %d %d %d %d", 1, 2, 3, 4, 5, 6, 7, 8);
	PF("%s", cbuf); // a char array
	PF("%s", cptr); // a char *
	nexp = static_cast<int>(expected.size());
	// any object pointer for %p: recorded as a pointer
	ringtrace_printf("%p", static_cast<void *>(iptr));

	// (what the probe saw: checked by the probe case)
	CHECK(ringtrace_probe_unregister_cx_all(probe, &probe_calls) == 0);

	evu_collect(rb, &l);
	CHECK_EQ_U64(l.n, 3 + static_cast<size_t>(nexp) + 1);
}

void cxx_done()
{
	evu_list_free(&l);
	evu_buffer_done(rb);
}

// Events of every field kind, defined and called in C++, read back.
void test_events()
{
	cxx_record();
	// events
	ringtrace_value v[16];
	ringtrace_event_info info;
	char buf[4096];
	CHECK_EQ_U64(evu_decode(&l.ev[0], v, 16, &info), 11);
	CHECK(std::strcmp(info.name, "cx_all") == 0);
	CHECK(v[0].v.u == 0);
	CHECK(v[1].v.i == INT16_MIN && v[2].v.u == UINT64_MAX && v[3].v.f == -2.5);
	CHECK(v[4].v.f == 0.25 && v[5].v.u == 1);
	CHECK(v[6].v.u == reinterpret_cast<uintptr_t>(&obj) && v[7].v.i == 1);
	CHECK(v[8].len == 3 && std::memcmp(v[8].ptr, arr, sizeof(arr)) == 0);
	CHECK(v[9].len == s.size() && std::memcmp(v[9].ptr, s.data(), s.size()) == 0);
	CHECK(v[10].len == 4 && std::memcmp(v[10].ptr, bytes, 4) == 0);
	int r = ringtrace_record_format(info.print_fmt, info.fields, info.nfields, l.ev[0].data,
					l.ev[0].len, buf, sizeof(buf));
	char want[512];
	std::snprintf(want, sizeof(want),
		      "a=-32768 b=18446744073709551615 d=-2.5 f=0.25 flag=1 p=%p mode=ON "
		      "arr={-1,0,2147483647} s=from C++ bytes=deadbeef",
		      static_cast<void *>(&obj));
	CHECKF(r > 0 && std::strcmp(buf, want) == 0, "\"%s\"\n  expected \"%s\"", buf, want);

	CHECK_EQ_U64(evu_decode(&l.ev[1], v, 16, nullptr), 11);
	CHECK(v[1].v.i == 7 && v[2].v.u == 0 && std::isnan(v[3].v.f));
	CHECK(std::isinf(v[4].v.f) && v[4].v.f < 0 && v[5].v.u == 0 && v[6].v.u == 0);
	CHECK(v[9].len == 0 && v[10].len == 0 && v[0].v.u == 0);

	CHECK_EQ_U64(evu_decode(&l.ev[2], v, 16, &info), 1);
	CHECK(std::strcmp(info.name, "cx_small") == 0 && info.kind == RINGTRACE_KIND_END);
	CHECK(v[0].v.u == 255);
	cxx_done();
}

// A typed probe (a plain function) got the C++ arguments of each call.
void test_probe()
{
	cxx_record();
	CHECK(probe_calls == 2 && probe_a == 7 && probe_s.empty());
	cxx_done();
}

// ringtrace_printf's C++ overloads: every record formats as snprintf does.
void test_printf()
{
	cxx_record();
	int r;
	char buf[4096];
	// printf
	int bad = 0;
	for (int k = 0; k < nexp; k++) {
		const evu_event *e = &l.ev[3 + k];
		CHECK_EQ_U64(e->id, RINGTRACE_EVENT_ID_PRINTF);
		uint32_t sid;
		std::memcpy(&sid, e->data, 4);
		const ringtrace_printf_site *site = ringtrace_printf_site_by_id(sid);
		CHECK(site != nullptr);
		CHECK(expected[k].fmt == site->fmt);
		CHECK_EQ_U64(site->line, expected[k].line);
		r = ringtrace_printf_format(site->fmt, site->types, site->nargs, e->data, e->len,
					    buf, sizeof(buf));
		CHECK(r >= 0);
		if (expected[k].text != buf) {
			std::fprintf(stderr,
				     "  line %d: ringtrace_printf(\"%s\")\n      got      \"%s\"\n"
				     "      snprintf \"%s\"   (argument types:",
				     expected[k].line, site->fmt, buf, expected[k].text.c_str());
			for (uint32_t a = 0; a < site->nargs; a++)
				std::fprintf(stderr, " %u", site->types[a]);
			std::fprintf(stderr, ")\n");
			bad++;
		}
	}
	{
		const evu_event *e = &l.ev[3 + nexp];
		uint32_t sid;
		std::memcpy(&sid, e->data, 4);
		const ringtrace_printf_site *site = ringtrace_printf_site_by_id(sid);
		CHECK(site != nullptr && site->nargs == 1 &&
		      site->types[0] == RINGTRACE_PF_POINTER);
	}
	cxx_done();
	if (bad)
		std::fprintf(stderr,
			     "test_event_cxx: %d of %d printf records differ from snprintf\n", bad,
			     nexp);
	CHECKF(bad == 0, "%d of %d printf records differ from snprintf", bad, nexp);
}

/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
const check_case cases[] = {
	CHECK_CASE(event_cxx_events_of_every_field_kind_round_trip, test_events),
	CHECK_CASE(event_cxx_typed_probe_gets_the_arguments, test_probe),
	CHECK_CASE(event_cxx_printf_overloads_format_as_snprintf_does, test_printf),
};
/* clang-format on */

} // namespace

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
