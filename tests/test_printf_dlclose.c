/*
 * test_printf_dlclose: ringtrace_printf records made by a library that is
 * unloaded (dlclose) before the trace is read.
 *
 * dl_events_printf() in dl_events_lib.c calls ringtrace_printf with a
 * format, an int and two strings. After dlclose (the library really
 * unmapped), ringtrace_printf_site_by_id() still gives the site, and its
 * format, file and types - copies kept by the registry, not pointers into
 * the library's unmapped data (the old behaviour: a crash, or a format
 * read from whatever is mapped there now) - format the records exactly as
 * snprintf does. Loading the library again registers its call site
 * afresh; the records of both loads read correctly after the second
 * dlclose. Two cases: the first load, and the second (after the first).
 */
#include <dlfcn.h>

#include "events_util.h"

#ifndef DL_EVENTS_LIB
#error "DL_EVENTS_LIB (the path of the library) must be defined"
#endif

typedef void (*dl_events_printf_fn)(int n, const char *s);

#define LIB_FMT "dl printf n=%d s=%s lit=%s"

static void *load(dl_events_printf_fn *fn)
{
	void *h = dlopen(DL_EVENTS_LIB, RTLD_NOW | RTLD_LOCAL);
	CHECKF(h != NULL, "dlopen(%s): %s", DL_EVENTS_LIB, dlerror());
	void *sym = dlsym(h, "dl_events_printf");
	CHECKF(sym != NULL, "dlsym: %s", dlerror());
	memcpy(fn, &sym, sizeof(*fn));
	return h;
}

static void unload(void *h)
{
	CHECK(dlclose(h) == 0);
	void *again = dlopen(DL_EVENTS_LIB, RTLD_NOW | RTLD_NOLOAD);
	CHECKF(again == NULL, "the library is still loaded after dlclose");
}

/* Checks a printf record of the library's, made with arguments (n, s). */
static uint32_t check_record(const struct evu_event *e, int n, const char *s)
{
	CHECK_EQ_U64(e->id, RINGTRACE_EVENT_ID_PRINTF);
	uint32_t sid;
	memcpy(&sid, e->data, 4);
	const struct ringtrace_printf_site *site = ringtrace_printf_site_by_id(sid);
	CHECKF(site != NULL, "site %u", sid);
	CHECK(site->fmt != NULL && site->types != NULL);
	CHECKF(strcmp(site->fmt, LIB_FMT) == 0, "site %u: format \"%s\"", sid, site->fmt);
	CHECKF(evu_has(site->file, "dl_events_lib"), "site %u: file \"%s\"", sid,
	       site->file ? site->file : "(null)");
	CHECK_EQ_U64(site->nargs, 3);
	CHECK(site->types[0] == RINGTRACE_PF_S64 && site->types[1] == RINGTRACE_PF_STRING &&
	      site->types[2] == RINGTRACE_PF_STRING);
	char buf[256], want[256];
	int r = ringtrace_printf_format(site->fmt, site->types, site->nargs, e->data, e->len, buf,
					sizeof(buf));
	snprintf(want, sizeof(want), LIB_FMT, n, s, "library literal");
	CHECKF(r == (int)strlen(want) && strcmp(buf, want) == 0, "\"%s\" (%d), expected \"%s\"",
	       buf, r, want);
	return sid;
}

static ringtrace_rb *rb;
static struct evu_list l;
static uint32_t sites0, sid1;

/* First load: two records, read only after dlclose. */
static void first_load(void)
{
	rb = evu_buffer(16u << 10, 16);
	memset(&l, 0, sizeof(l));
	CHECK(ringtrace_event_enable("ringtrace_printf") == 1);
	sites0 = ringtrace_printf_site_count();

	/* first load: two records, read only after dlclose */
	dl_events_printf_fn fn;
	void *h = load(&fn);
	fn(7, "first");
	fn(-1, "second");
	CHECK_EQ_U64(ringtrace_printf_site_count(), sites0 + 1);
	ringtrace_rb_writer_release(rb);
	unload(h);

	evu_collect(rb, &l);
	CHECK_EQ_U64(l.n, 2);
	sid1 = check_record(&l.ev[0], 7, "first");
	CHECK_EQ_U64(check_record(&l.ev[1], -1, "second"), sid1);
}

/* Second load: the call site registers again; both read after dlclose. */
static void second_load(void)
{
	dl_events_printf_fn fn;
	void *h;

	/* second load: the call site registers again; both read after dlclose */
	h = load(&fn);
	fn(42, "third");
	ringtrace_rb_writer_release(rb);
	unload(h);
	evu_collect(rb, &l);
	CHECK_EQ_U64(l.n, 3);
	const uint32_t sid2 = check_record(&l.ev[2], 42, "third");
	CHECK(sid2 != 0);
	CHECK_EQ_U64(check_record(&l.ev[0], 7, "first"), sid1);
	CHECK_EQ_U64(ringtrace_printf_site_count(), sites0 + (sid2 != sid1 ? 2 : 1));
}

static void case_first(void)
{
	first_load();
	evu_list_free(&l);
	evu_buffer_done(rb);
}

static void case_second(void)
{
	first_load();
	second_load();
	evu_list_free(&l);
	evu_buffer_done(rb);
}

/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
static const struct check_case cases[] = {
	CHECK_CASE(printf_dlclose_records_of_unloaded_library_format_as_snprintf, case_first),
	CHECK_CASE(printf_dlclose_reloaded_library_site_registers_again_both_read, case_second),
};
/* clang-format on */

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
