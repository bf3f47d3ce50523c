/*
 * tests/test_trace_util.h - events and a trace-directory writer shared by
 * the test_trace_* tests. Each test is one translation unit that defines
 * RINGTRACE_CREATE_EVENTS before including this header.
 *
 * tt_write_trace() drains a ring buffer page by page into stream_<N>
 * files (as the recorder does) and writes the metadata; while doing so it
 * decodes every event with the library's own decoder and formatter and
 * keeps the expected text, for comparison with what the reader finds.
 */
#ifndef RINGTRACE_TESTS_TEST_TRACE_UTIL_H
#define RINGTRACE_TESTS_TEST_TRACE_UTIL_H

#include <dirent.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ringtrace/ctf.h>
#include <ringtrace/trace.h>
#include <ringtrace/tracepoint.h>

#include "check.h"

RINGTRACE_EVENT(tr_num, RINGTRACE_PROTO(int32_t v, uint64_t x), RINGTRACE_ARGS(v, x),
		RINGTRACE_FIELDS(ringtrace_integer(int32_t, v, v)
					 ringtrace_integer(uint64_t, x, x)),
		RINGTRACE_PRINT("v=%d x=%llu"))

RINGTRACE_EVENT(tr_str, RINGTRACE_PROTO(int16_t k, const char *s), RINGTRACE_ARGS(k, s),
		RINGTRACE_FIELDS(ringtrace_integer(int16_t, k, k) ringtrace_string(s, s)),
		RINGTRACE_PRINT("k=%d s=%s"))

RINGTRACE_ENUM(tr_color, RINGTRACE_ENUM_VALUE("RED", 1) RINGTRACE_ENUM_VALUE("GREEN", 2))

RINGTRACE_EVENT(
	tr_mix, RINGTRACE_PROTO(int v), RINGTRACE_ARGS(v),
	RINGTRACE_FIELDS(ringtrace_enum(tr_color, int32_t, color, 1 + (v & 1)) ringtrace_bool(
		odd, v & 1) ringtrace_float(double, half, (double)v / 2)
				 ringtrace_array(int16_t, arr,
						 ((const int16_t[3]){(int16_t)v, -2, 3}), 3)
					 ringtrace_bytes(raw, "\x01\x02\x03", (uint32_t)(v % 4))),
	RINGTRACE_PRINT("color=%s odd=%d half=%g arr=%s raw=%s"))

/* Integer conversions with length modifiers, %% and hex (the reader's
 * compiled formats must print what ringtrace_record_format prints). */
RINGTRACE_EVENT(tr_fmt, RINGTRACE_PROTO(int64_t v), RINGTRACE_ARGS(v),
		RINGTRACE_FIELDS(
			ringtrace_integer(int8_t, a, (int8_t)v) ringtrace_integer(uint16_t, b,
										  (uint16_t)(v * 7))
				ringtrace_integer(int64_t, c,
						  v * -1000000007ll) ringtrace_bool(d, v & 1)
					ringtrace_integer(uint32_t, e, (uint32_t)(v * 2654435761u))
						ringtrace_integer(int32_t, f, (int32_t)(v * -3))
							ringtrace_string(s, (v & 2) ? "" : "text")),
		RINGTRACE_PRINT("a=%hhd b=%hx c=%lld d=%u e=%X f=%i %% f=%hu s=[%s]"))

struct tt_expect {
	uint64_t ts;
	uint64_t stream;
	uint32_t seq; /* order of decoding: in-stream order */
	uint32_t tid;
	uint32_t cpu;
	char comm[17];
	char name[32];
	char text[256];
};

struct tt_trace {
	struct tt_expect *ev;
	size_t n, cap;
	uint32_t pages;
	size_t page_size;
};

static CHECK_UNUSED int tt_cmp(const void *a, const void *b)
{
	const struct tt_expect *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static CHECK_UNUSED void tt_rm_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	char path[512];
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

/*
 * Drain every page of rb into dir (stream_<N> files, appended) and write
 * the metadata; fill tt with the expected events, sorted as the reader
 * must merge them.
 */
static CHECK_UNUSED void tt_write_trace(ringtrace_rb *rb, const char *dir, struct tt_trace *tt,
					const struct ringtrace_trace_stats *stats)
{
	const struct ringtrace_page_header *p;
	uint32_t seq = 0;
	size_t psz = ringtrace_rb_page_size(rb);
	tt->page_size = psz;
	CHECK(ringtrace_rb_flush(rb, 0) >= 0);
	while ((p = ringtrace_rb_get_page(rb)) != NULL) {
		char path[512];
		snprintf(path, sizeof(path), "%s/stream_%" PRIu64, dir, p->stream_instance_id);
		FILE *f = fopen(path, "ab");
		CHECK(f != NULL);
		CHECK(fwrite(p, 1, psz, f) == psz);
		fclose(f);
		tt->pages++;
		struct ringtrace_page_cursor c;
		struct ringtrace_event ev;
		ringtrace_page_cursor_init(&c, p);
		while (ringtrace_page_next(&c, &ev) == 1) {
			if (tt->n == tt->cap) {
				tt->cap = tt->cap ? tt->cap * 2 : 1024;
				tt->ev = realloc(tt->ev, tt->cap * sizeof(*tt->ev));
				CHECK(tt->ev != NULL);
			}
			struct tt_expect *e = &tt->ev[tt->n++];
			memset(e, 0, sizeof(*e));
			e->ts = ev.ts;
			e->stream = ev.stream;
			e->seq = seq++;
			e->tid = ev.tid;
			e->cpu = p->cpu;
			memcpy(e->comm, p->comm, 16);
			if (ev.id == RINGTRACE_EVENT_ID_PRINTF) {
				uint32_t site;
				memcpy(&site, ev.data, 4);
				const struct ringtrace_printf_site *s = ringtrace_printf_site_by_id(
					site);
				CHECK(s != NULL);
				snprintf(e->name, sizeof(e->name), "ringtrace_printf");
				CHECK(ringtrace_printf_format(s->fmt, s->types, s->nargs, ev.data,
							      ev.len, e->text,
							      sizeof(e->text)) >= 0);
			} else {
				struct ringtrace_event_info info;
				CHECK(ringtrace_event_by_id(ev.id, &info) == 0);
				snprintf(e->name, sizeof(e->name), "%s", info.name);
				CHECK(ringtrace_record_format(info.print_fmt, info.fields,
							      info.nfields, ev.data, ev.len,
							      e->text, sizeof(e->text)) >= 0);
			}
		}
		ringtrace_rb_put_page(rb, p);
	}
	qsort(tt->ev, tt->n, sizeof(*tt->ev), tt_cmp);
	char path[512];
	snprintf(path, sizeof(path), "%s/metadata", dir);
	FILE *mf = fopen(path, "w");
	CHECK(mf != NULL);
	CHECKF(ringtrace_ctf_write_metadata(rb, mf, stats) == 0, "%s", ringtrace_last_error());
	fclose(mf);
}

/* Errors collected from the reader. */
struct tt_errs {
	unsigned n;
	char first[512];
	char last[512];
};

static CHECK_UNUSED void tt_on_error(void *arg, const char *msg)
{
	struct tt_errs *e = arg;
	if (!e->n)
		snprintf(e->first, sizeof(e->first), "%s", msg);
	snprintf(e->last, sizeof(e->last), "%s", msg);
	e->n++;
}

static CHECK_UNUSED void tt_read_file(const char *path, char **data, size_t *len)
{
	FILE *f = fopen(path, "rb");
	CHECK(f != NULL);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	*data = malloc((size_t)n + 1);
	CHECK(*data != NULL);
	CHECK(fread(*data, 1, (size_t)n, f) == (size_t)n);
	(*data)[n] = 0;
	*len = (size_t)n;
	fclose(f);
}

static CHECK_UNUSED void tt_write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	CHECK(f != NULL);
	CHECK(fwrite(data, 1, len, f) == len);
	CHECK(fclose(f) == 0);
}

#endif
