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
		CHECKF(rc_ == (want), "%s returned %d (%s), expected %d: %s", #call, rc_,  \
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

int main(void)
{
	struct ringtrace_event_info info, info2;
	ringtrace_rb *rb = evu_buffer(16u << 10, 16);
	struct evu_list l = {0};

	/* 1. not loaded yet */
	CHECK_RC(ringtrace_event_lookup("dl_ev_one", &info), -RINGTRACE_ENOENT);
	CHECK_RC(ringtrace_event_enable("dl_ev_str"), -RINGTRACE_ENOENT);
	const uint32_t count0 = ringtrace_event_count();

	/* 2. loaded */
	dl_events_fire_fn fire;
	void *h = load(&fire);
	CHECK_EQ_U64(ringtrace_event_count(), count0 + 2);
	CHECK_OK(ringtrace_event_lookup("dl_ev_one", &info));
	CHECK_OK(ringtrace_event_lookup("dl_ev_str", &info2));
	const uint32_t id_one = info.id, id_str = info2.id;
	CHECK(id_one >= RINGTRACE_EVENT_ID_FIRST && id_str >= RINGTRACE_EVENT_ID_FIRST);
	CHECK(id_one != id_str);
	CHECK(info.loaded == 1 && info2.loaded == 1);
	CHECK(info.enabled == 0);
	CHECKF(info2.enabled == 1, "the rule given before the load did not apply");
	CHECK(evu_has(info.file, "events_dl"));
	CHECK_EQ_U64(info.nfields, 2);
	CHECK(info.fields[1].type == RINGTRACE_FT_ENUM && info.fields[1].enm != NULL &&
	      info.fields[1].enm->count == 2);
	{
		int found = 0;
		for (uint32_t i = 0; i < ringtrace_event_count(); i++) {
			struct ringtrace_event_info e;
			CHECK_OK(ringtrace_event_get(i, &e));
			if (e.id == id_one || e.id == id_str) {
				CHECK(e.loaded == 1);
				found++;
			} else {
				CHECK(strncmp(e.name, "dl_", 3) != 0);
			}
		}
		CHECK_EQ_U64(found, 2);
	}
	CHECK_RC(ringtrace_event_enable("dl_ev_*"), 2);
	CHECK_EQ_U64(fire(3, "first load"), 4);
	evu_collect(rb, &l);
	check_fired(&l, 0, 3, "first load", id_one, id_str);

	/* events still in the buffer at unload: read after dlclose */
	CHECK_EQ_U64(fire(2, "before unload"), 3);
	ringtrace_rb_writer_release(rb);

	/* 3. unloaded */
	unload(h);
	CHECK_RC(ringtrace_event_lookup("dl_ev_one", &info), -RINGTRACE_ENOENT);
	CHECKF(evu_has(ringtrace_last_error(), "dl_ev_one"), "message: %s", ringtrace_last_error());
	CHECK_RC(ringtrace_event_lookup("dl_ev_str", &info), -RINGTRACE_ENOENT);
	CHECK_RC(ringtrace_event_enable("dl_ev_one"), -RINGTRACE_ENOENT);
	CHECK_RC(ringtrace_event_disable("dl_*"), -RINGTRACE_ENOENT);
	CHECK_RC(ringtrace_event_enable("dl_ev_*"), -RINGTRACE_ENOENT);
	CHECK_EQ_U64(ringtrace_event_count(), count0 + 2);
	CHECK_OK(ringtrace_event_by_id(id_one, &info));
	CHECK(info.loaded == 0 && info.enabled == 0 && info.probes == 0);
	CHECK(strcmp(info.name, "dl_ev_one") == 0 && strcmp(info.print_fmt, "x=%d color=%s") == 0);
	CHECK(info.nfields == 2 && strcmp(info.fields[0].name, "x") == 0);
	CHECK(info.fields[1].enm != NULL && strcmp(info.fields[1].enm->values[1].name, "GREEN") == 0);
	CHECK_OK(ringtrace_event_by_id(id_str, &info2));
	CHECK(info2.loaded == 0 && strcmp(info2.name, "dl_ev_str") == 0);
	size_t from = l.n;
	evu_collect(rb, &l);
	check_fired(&l, from, 2, "before unload", id_one, id_str);

	/* 4. loaded again: same ids, rules apply again */
	h = load(&fire);
	CHECK_EQ_U64(ringtrace_event_count(), count0 + 2);
	CHECK_OK(ringtrace_event_lookup("dl_ev_one", &info));
	CHECK_OK(ringtrace_event_lookup("dl_ev_str", &info2));
	CHECK_EQ_U64(info.id, id_one);
	CHECK_EQ_U64(info2.id, id_str);
	CHECK(info.loaded == 1 && info.enabled == 1 && info2.enabled == 1);
	from = l.n;
	CHECK_EQ_U64(fire(5, "second load"), 6);
	evu_collect(rb, &l);
	check_fired(&l, from, 5, "second load", id_one, id_str);
	CHECK_RC(ringtrace_event_disable("dl_ev_one"), 1);
	from = l.n;
	fire(4, "one disabled");
	evu_collect(rb, &l);
	CHECK_EQ_U64(l.n, from + 1);
	CHECK_EQ_U64(l.ev[from].id, id_str);

	/* unloaded while enabled, loaded a third time */
	unload(h);
	CHECK_OK(ringtrace_event_by_id(id_str, &info2));
	CHECK(info2.loaded == 0 && info2.enabled == 0);
	h = load(&fire);
	CHECK_EQ_U64(evu_id("dl_ev_str"), id_str);
	CHECK(!evu_enabled("dl_ev_one") && evu_enabled("dl_ev_str"));
	unload(h);
	CHECK_EQ_U64(ringtrace_event_count(), count0 + 2);

	evu_list_free(&l);
	evu_buffer_done(rb);
	printf("test_event_dlopen: OK\n");
	return 0;
}
