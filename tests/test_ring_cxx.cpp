// test_ring_cxx: the public headers compile as C++ and the library links
// from a C++ translation unit; one event round trip.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ringtrace/attach.h"
#include "ringtrace/format.h"
#include "ringtrace/ring.h"

#include "check.h" // the case runner (after the public headers: they compile alone)

#define CXX_CHECK(e)                                                                               \
	do {                                                                                       \
		if (!(e)) {                                                                        \
			std::fprintf(stderr, "%s:%d: CHECK FAILED: %s (%s)\n", __FILE__, __LINE__, \
				     #e, ringtrace_last_error());                                  \
			std::exit(1);                                                              \
		}                                                                                  \
	} while (0)

static_assert(sizeof(ringtrace_page_header) == RINGTRACE_PAGE_HEADER_SIZE,
	      "page header is 96 bytes in C++ too");

// ring.h and format.h compile as C++; one event written and read back.
static void round_trip()
{
	ringtrace_rb_config cfg;
	ringtrace_rb_config_init(&cfg);
	cfg.page_size = 4096;
	cfg.pool_size = 4096 * 4;
	ringtrace_rb *rb = nullptr;
	CXX_CHECK(ringtrace_rb_create(&cfg, &rb) == 0 && rb != nullptr);

	const char msg[] = "hello from C++";
	CXX_CHECK(ringtrace_rb_write(rb, 123, msg, sizeof msg) == 0);
	void *p = ringtrace_rb_reserve(rb, 124, 8);
	CXX_CHECK(p != nullptr);
	const unsigned long long v = 0x0123456789abcdefULL;
	std::memcpy(p, &v, sizeof v);
	ringtrace_rb_commit(rb);
	ringtrace_rb_writer_release(rb);

	const ringtrace_page_header *page = ringtrace_rb_get_page(rb);
	CXX_CHECK(page != nullptr);
	CXX_CHECK(page->magic == RINGTRACE_PAGE_MAGIC);
	CXX_CHECK(ringtrace_page_check(page, 4096) == 0);
	CXX_CHECK(page->events == 2);
	ringtrace_page_cursor c;
	ringtrace_event ev;
	ringtrace_page_cursor_init(&c, page);
	CXX_CHECK(ringtrace_page_next(&c, &ev) == 1);
	CXX_CHECK(ev.id == 123 && ev.len == sizeof msg);
	CXX_CHECK(std::memcmp(ev.data, msg, sizeof msg) == 0);
	CXX_CHECK(ringtrace_page_next(&c, &ev) == 1);
	CXX_CHECK(ev.id == 124 && ev.len == 8);
	CXX_CHECK(std::memcmp(ev.data, &v, 8) == 0);
	CXX_CHECK(ringtrace_page_next(&c, &ev) == 0);
	ringtrace_rb_put_page(rb, page);

	// The struct shares its name with the function ringtrace_rb_get_stats(), so
	// C++ needs the elaborated type specifier here.
	struct ringtrace_rb_stats st;
	CXX_CHECK(ringtrace_rb_get_stats(rb, &st) == 0);
	CXX_CHECK(st.hit == 2 && st.read == 2 && st.entries == 0 && st.missed == 0);
	CXX_CHECK(std::strlen(ringtrace_strerror(-RINGTRACE_EINVAL)) > 0);
	ringtrace_rb_destroy(rb);
}

/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
static const check_case cases[] = {
	CHECK_CASE(ring_cxx_headers_compile_and_an_event_round_trips, round_trip),
};
/* clang-format on */

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
