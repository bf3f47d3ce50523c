/*
 * tests/events_util.h - helpers shared by the event-layer tests
 * (test_event_*.c, test_printf.c): a buffer for recorded events, and
 * collecting every recorded event into an array (payloads copied) so
 * that the tests can inspect them after the pages went back.
 *
 * Compiles as C and as C++.
 */
#ifndef RINGTRACE_TESTS_EVENTS_UTIL_H
#define RINGTRACE_TESTS_EVENTS_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ringtrace/event.h"
#include "ringtrace/printf.h"

/* One recorded event, its payload copied (8-aligned, from malloc). */
struct evu_event {
	uint64_t ts;
	uint32_t id;
	uint32_t len;
	uint32_t tid;
	uint32_t page_flags;
	uint64_t stream;
	uint64_t page_seq;
	char comm[17];
	void *data;
};

struct evu_list {
	struct evu_event *ev;
	size_t n, cap;
	size_t pages;
};

/* A buffer (DISCARD mode) attached as the events buffer. */
static CHECK_UNUSED ringtrace_rb *evu_buffer(size_t page_size, uint32_t pages)
{
	struct ringtrace_rb_config cfg;
	ringtrace_rb_config_init(&cfg);
	cfg.page_size = page_size;
	cfg.pool_size = page_size * pages;
	cfg.mode = RINGTRACE_RB_DISCARD;
	ringtrace_rb *rb = NULL;
	int rc = ringtrace_rb_create(&cfg, &rb);
	CHECKF(rc == 0 && rb != NULL, "ringtrace_rb_create: %d (%s): %s", rc,
	       ringtrace_strerror(rc), ringtrace_last_error());
	CHECK_OK(ringtrace_events_set_buffer(rb));
	return rb;
}

/* Detach (waits for writers) and destroy. */
static CHECK_UNUSED void evu_buffer_done(ringtrace_rb *rb)
{
	CHECK_OK(ringtrace_events_set_buffer(NULL));
	ringtrace_rb_destroy(rb);
}

static CHECK_UNUSED void evu_list_add(struct evu_list *l, const struct ringtrace_page_header *p,
				      const struct ringtrace_event *ev)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 256;
		l->ev = (struct evu_event *)realloc(l->ev, l->cap * sizeof(*l->ev));
		CHECK(l->ev != NULL);
	}
	struct evu_event *e = &l->ev[l->n++];
	memset(e, 0, sizeof(*e));
	e->ts = ev->ts;
	e->id = ev->id;
	e->len = ev->len;
	e->tid = ev->tid;
	e->stream = ev->stream;
	e->page_flags = p->flags;
	e->page_seq = p->packet_seq_num;
	memcpy(e->comm, p->comm, 16);
	e->comm[16] = 0;
	e->data = malloc(ev->len ? ev->len : 1);
	CHECK(e->data != NULL);
	if (ev->len)
		memcpy(e->data, ev->data, ev->len);
}

/* Consume every page now readable (no flush) into l; returns pages read. */
static CHECK_UNUSED size_t evu_drain(ringtrace_rb *rb, struct evu_list *l)
{
	size_t pages = 0;
	const struct ringtrace_page_header *p;
	while ((p = ringtrace_rb_get_page(rb)) != NULL) {
		int rc = ringtrace_page_check(p, ringtrace_rb_page_size(rb));
		CHECKF(rc == 0, "page_check: %d: %s", rc, ringtrace_last_error());
		struct ringtrace_page_cursor cur;
		struct ringtrace_event ev;
		ringtrace_page_cursor_init(&cur, p);
		while ((rc = ringtrace_page_next(&cur, &ev)) == 1)
			evu_list_add(l, p, &ev);
		CHECKF(rc == 0, "page_next: %d: %s", rc, ringtrace_last_error());
		CHECK_EQ_U64(cur.index, p->events);
		ringtrace_rb_put_page(rb, p);
		pages++;
	}
	l->pages += pages;
	return pages;
}

/*
 * Publish this thread's page (ringtrace_rb_writer_release) and every
 * other writer's (flush), then consume everything into l.
 */
static CHECK_UNUSED size_t evu_collect(ringtrace_rb *rb, struct evu_list *l)
{
	ringtrace_rb_writer_release(rb);
	CHECK_OK(ringtrace_rb_flush(rb, 0));
	return evu_drain(rb, l);
}

static CHECK_UNUSED void evu_list_free(struct evu_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->ev[i].data);
	free(l->ev);
	memset(l, 0, sizeof(*l));
}

/* Number of events in l with this id. */
static CHECK_UNUSED size_t evu_count_id(const struct evu_list *l, uint32_t id)
{
	size_t n = 0;
	for (size_t i = 0; i < l->n; i++)
		n += l->ev[i].id == id;
	return n;
}

/* The id of a loaded event, checked. */
static CHECK_UNUSED uint32_t evu_id(const char *name)
{
	struct ringtrace_event_info info;
	int rc = ringtrace_event_lookup(name, &info);
	CHECKF(rc == 0, "lookup(%s): %d (%s): %s", name, rc, ringtrace_strerror(rc),
	       ringtrace_last_error());
	return info.id;
}

/* Whether the registry says the event is recorded. */
static CHECK_UNUSED int evu_enabled(const char *name)
{
	struct ringtrace_event_info info;
	int rc = ringtrace_event_lookup(name, &info);
	CHECKF(rc == 0, "lookup(%s): %d (%s): %s", name, rc, ringtrace_strerror(rc),
	       ringtrace_last_error());
	return info.enabled;
}

/* Decode an event with the registry's schema for its id; returns nfields. */
static CHECK_UNUSED uint32_t evu_decode(const struct evu_event *e, struct ringtrace_value *vals,
					uint32_t max, struct ringtrace_event_info *info_out)
{
	struct ringtrace_event_info info;
	int rc = ringtrace_event_by_id(e->id, &info);
	CHECKF(rc == 0, "by_id(%u): %d: %s", e->id, rc, ringtrace_last_error());
	CHECKF(info.nfields <= max, "%s has %u fields", info.name, info.nfields);
	rc = ringtrace_record_decode(info.fields, info.nfields, e->data, e->len, vals);
	CHECKF(rc == (int)info.nfields, "decode %s (len %u): %d (%s): %s", info.name, e->len, rc,
	       ringtrace_strerror(rc), ringtrace_last_error());
	if (info_out)
		*info_out = info;
	return info.nfields;
}

/* Whether s contains sub (NULL-safe). */
static CHECK_UNUSED int evu_has(const char *s, const char *sub)
{
	return s && sub && strstr(s, sub) != NULL;
}

#endif /* RINGTRACE_TESTS_EVENTS_UTIL_H */
