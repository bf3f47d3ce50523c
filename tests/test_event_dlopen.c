/*
 * test_event_dlopen: events of a library loaded and unloaded at run time.
 *
 *  1. Before dlopen the library's events are unknown; a rule enabling one
 *     of them by name is kept (-RINGTRACE_ENOENT) and applies at load.
 *  2. After dlopen they are in the registry (lookup, count, get) with
 *     fresh ids; enabled by glob, the library's function records them with
 *     those ids and the right values.
 *  3. After dlclose (the library really unmapped): lookup and enable fail
 *     with -RINGTRACE_ENOENT, but ringtrace_event_by_id() still gives the
 *     schema (loaded == 0), so the events recorded before the unload -
 *     read only now - still decode and format.
 *  4. dlopen again: the same ids; the rules apply again; recording works.
 * These are steps of one library's life in the process: the case for a
 * later step runs the steps before it, and each case needs a process in
 * which the library was never loaded (CHECK_CASE_ALONE).
 */
#include <dlfcn.h>

#include "events_dl.h"
#include "events_util.h"

#ifndef DL_EVENTS_LIB
#error "DL_EVENTS_LIB (the path of the library) must be defined"
#endif

#define CHECK_RC(call, want)                                                              \
	do {                                                                              \
		int rc_ = (call);                                                         \
		CHECKF(rc_ == (want), "%s returned %d (%s), expected %d: %s", #call, rc_, \
		       ringtrace_strerror(rc_), (int)(want), ringtrace_last_error());     \
	} while (0)

static void *load(dl_events_fire_fn *fire)
{
	void *h = dlopen(DL_EVENTS_LIB, RTLD_NOW | RTLD_LOCAL);
	CHECKF(h != NULL, "dlopen(%s): %s", DL_EVENTS_LIB, dlerror());
	void *sym = dlsym(h, "dl_events_fire");
	CHECKF(sym != NULL, "dlsym: %s", dlerror());
	memcpy(fire, &sym, sizeof(*fire));
	return h;
}

static void unload(void *h)
{
	CHECK(dlclose(h) == 0);
	void *again = dlopen(DL_EVENTS_LIB, RTLD_NOW | RTLD_NOLOAD);
	CHECKF(again == NULL, "the library is still loaded after dlclose");
}

/* Checks the events fire(n, s) recorded. */
static void check_fired(const struct evu_list *l, size_t from, int n, const char *s,
			uint32_t id_one, uint32_t id_str)
{
	CHECKF(l->n == from + (size_t)n + 1, "%zu events, expected %zu", l->n - from,
	       (size_t)n + 1);
	struct ringtrace_value v[4];
	struct ringtrace_event_info info;
	char buf[256];
	for (int i = 0; i < n; i++) {
		const struct evu_event *e = &l->ev[from + (size_t)i];
		CHECK_EQ_U64(e->id, id_one);
		CHECK_EQ_U64(evu_decode(e, v, 4, &info), 2);
		CHECK(strcmp(info.name, "dl_ev_one") == 0);
		CHECK(v[0].v.i == i && v[1].v.u == (uint64_t)(1 + (i & 1)));
		int r = ringtrace_record_format(info.print_fmt, info.fields, info.nfields, e->data,
						e->len, buf, sizeof(buf));
		char want[64];
		snprintf(want, sizeof(want), "x=%d color=%s", i, (i & 1) ? "GREEN" : "RED");
		CHECKF(r > 0 && strcmp(buf, want) == 0, "\"%s\", expected \"%s\"", buf, want);
	}
	const struct evu_event *e = &l->ev[from + (size_t)n];
	CHECK_EQ_U64(e->id, id_str);
	CHECK_EQ_U64(evu_decode(e, v, 4, &info), 3);
	CHECK(strcmp(info.name, "dl_ev_str") == 0);
	CHECK(v[0].v.u == 0 && v[1].len == strlen(s) && memcmp(v[1].ptr, s, v[1].len) == 0);
	CHECK(v[2].v.u == (uint64_t)n);
}

/* The steps' state. */
static struct {
	ringtrace_rb *rb;
	struct evu_list l;
	struct ringtrace_event_info info, info2;
	uint32_t count0, id_one, id_str;
	dl_events_fire_fn fire;
	void *h; /* the library, while loaded */
	size_t from;
} d;

/* 1. Not loaded yet: the events are unknown; a rule naming one is kept. */
static void step_not_loaded(void)
{
	memset(&d, 0, sizeof(d));
	d.rb = evu_buffer(16u << 10, 16);
	/* 1. not loaded yet */
	CHECK_RC(ringtrace_event_lookup("dl_ev_one", &d.info), -RINGTRACE_ENOENT);
	CHECK_RC(ringtrace_event_enable("dl_ev_str"), -RINGTRACE_ENOENT);
	d.count0 = ringtrace_event_count();
}

/* 2. Loaded: registered with fresh ids, the rule applied; recorded. */
static void step_loaded(void)
{
	/* 2. loaded */
	d.h = load(&d.fire);
	CHECK_EQ_U64(ringtrace_event_count(), d.count0 + 2);
	CHECK_OK(ringtrace_event_lookup("dl_ev_one", &d.info));
	CHECK_OK(ringtrace_event_lookup("dl_ev_str", &d.info2));
	d.id_one = d.info.id;
	d.id_str = d.info2.id;
	CHECK(d.id_one >= RINGTRACE_EVENT_ID_FIRST && d.id_str >= RINGTRACE_EVENT_ID_FIRST);
	CHECK(d.id_one != d.id_str);
	CHECK(d.info.loaded == 1 && d.info2.loaded == 1);
	CHECK(d.info.enabled == 0);
	CHECKF(d.info2.enabled == 1, "the rule given before the load did not apply");
	CHECK(evu_has(d.info.file, "events_dl"));
	CHECK_EQ_U64(d.info.nfields, 2);
	CHECK(d.info.fields[1].type == RINGTRACE_FT_ENUM && d.info.fields[1].enm != NULL &&
	      d.info.fields[1].enm->count == 2);
	{
		int found = 0;
		for (uint32_t i = 0; i < ringtrace_event_count(); i++) {
			struct ringtrace_event_info e;
			CHECK_OK(ringtrace_event_get(i, &e));
			if (e.id == d.id_one || e.id == d.id_str) {
				CHECK(e.loaded == 1);
				found++;
			} else {
				CHECK(strncmp(e.name, "dl_", 3) != 0);
			}
		}
		CHECK_EQ_U64(found, 2);
	}
	CHECK_RC(ringtrace_event_enable("dl_ev_*"), 2);
	CHECK_EQ_U64(d.fire(3, "first load"), 4);
	evu_collect(d.rb, &d.l);
	check_fired(&d.l, 0, 3, "first load", d.id_one, d.id_str);
}

/* 3. Unloaded: unknown to lookup and enable; the records made before
 * still decode and format (by id). */
static void step_unloaded(void)
{
	/* events still in the buffer at unload: read after dlclose */
	CHECK_EQ_U64(d.fire(2, "before unload"), 3);
	ringtrace_rb_writer_release(d.rb);

	/* 3. unloaded */
	unload(d.h);
	d.h = NULL;
	CHECK_RC(ringtrace_event_lookup("dl_ev_one", &d.info), -RINGTRACE_ENOENT);
	CHECKF(evu_has(ringtrace_last_error(), "dl_ev_one"), "message: %s", ringtrace_last_error());
	CHECK_RC(ringtrace_event_lookup("dl_ev_str", &d.info), -RINGTRACE_ENOENT);
	CHECK_RC(ringtrace_event_enable("dl_ev_one"), -RINGTRACE_ENOENT);
	CHECK_RC(ringtrace_event_disable("dl_*"), -RINGTRACE_ENOENT);
	CHECK_RC(ringtrace_event_enable("dl_ev_*"), -RINGTRACE_ENOENT);
	CHECK_EQ_U64(ringtrace_event_count(), d.count0 + 2);
	CHECK_OK(ringtrace_event_by_id(d.id_one, &d.info));
	CHECK(d.info.loaded == 0 && d.info.enabled == 0 && d.info.probes == 0);
	CHECK(strcmp(d.info.name, "dl_ev_one") == 0 &&
	      strcmp(d.info.print_fmt, "x=%d color=%s") == 0);
	CHECK(d.info.nfields == 2 && strcmp(d.info.fields[0].name, "x") == 0);
	CHECK(d.info.fields[1].enm != NULL &&
	      strcmp(d.info.fields[1].enm->values[1].name, "GREEN") == 0);
	CHECK_OK(ringtrace_event_by_id(d.id_str, &d.info2));
	CHECK(d.info2.loaded == 0 && strcmp(d.info2.name, "dl_ev_str") == 0);
	d.from = d.l.n;
	evu_collect(d.rb, &d.l);
	check_fired(&d.l, d.from, 2, "before unload", d.id_one, d.id_str);
}

/* 4. Loaded again: the same ids, the rules apply again. */
static void step_reloaded(void)
{
	/* 4. loaded again: same ids, rules apply again */
	d.h = load(&d.fire);
	CHECK_EQ_U64(ringtrace_event_count(), d.count0 + 2);
	CHECK_OK(ringtrace_event_lookup("dl_ev_one", &d.info));
	CHECK_OK(ringtrace_event_lookup("dl_ev_str", &d.info2));
	CHECK_EQ_U64(d.info.id, d.id_one);
	CHECK_EQ_U64(d.info2.id, d.id_str);
	CHECK(d.info.loaded == 1 && d.info.enabled == 1 && d.info2.enabled == 1);
	d.from = d.l.n;
	CHECK_EQ_U64(d.fire(5, "second load"), 6);
	evu_collect(d.rb, &d.l);
	check_fired(&d.l, d.from, 5, "second load", d.id_one, d.id_str);
	CHECK_RC(ringtrace_event_disable("dl_ev_one"), 1);
	d.from = d.l.n;
	d.fire(4, "one disabled");
	evu_collect(d.rb, &d.l);
	CHECK_EQ_U64(d.l.n, d.from + 1);
	CHECK_EQ_U64(d.l.ev[d.from].id, d.id_str);
}

/* Unloaded while enabled, loaded a third time: the rules decide. */
static void step_third_load(void)
{
	/* unloaded while enabled, loaded a third time */
	unload(d.h);
	d.h = NULL;
	CHECK_OK(ringtrace_event_by_id(d.id_str, &d.info2));
	CHECK(d.info2.loaded == 0 && d.info2.enabled == 0);
	d.h = load(&d.fire);
	CHECK_EQ_U64(evu_id("dl_ev_str"), d.id_str);
	CHECK(!evu_enabled("dl_ev_one") && evu_enabled("dl_ev_str"));
	unload(d.h);
	d.h = NULL;
	CHECK_EQ_U64(ringtrace_event_count(), d.count0 + 2);
}

static void steps_done(void)
{
	if (d.h) {
		unload(d.h);
		d.h = NULL;
	}
	evu_list_free(&d.l);
	evu_buffer_done(d.rb);
}

static void case_loaded(void)
{
	step_not_loaded();
	step_loaded();
	steps_done();
}

static void case_unloaded(void)
{
	step_not_loaded();
	step_loaded();
	step_unloaded();
	steps_done();
}

static void case_reloaded(void)
{
	step_not_loaded();
	step_loaded();
	step_unloaded();
	step_reloaded();
	steps_done();
}

static void case_third_load(void)
{
	step_not_loaded();
	step_loaded();
	step_unloaded();
	step_reloaded();
	step_third_load();
	steps_done();
}

/* Each needs a process in which the library was never loaded. */
/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
static const struct check_case cases[] = {
	CHECK_CASE_ALONE(event_dlopen_loaded_events_registered_and_rule_given_before_applied, case_loaded),
	CHECK_CASE_ALONE(event_dlopen_unloaded_events_unknown_but_their_records_decode, case_unloaded),
	CHECK_CASE_ALONE(event_dlopen_reloaded_library_gets_same_ids_and_rules, case_reloaded),
	CHECK_CASE_ALONE(event_dlopen_unloaded_while_enabled_then_reloaded_follows_rules, case_third_load),
};
/* clang-format on */

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
