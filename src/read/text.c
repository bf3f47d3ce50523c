/*
 * Records as text: an event's fields by its print format, a printf
 * record by its call site's format (both through the schema layer's one
 * formatter, src/schema/format.c), and the lines `ringtrace report`
 * prints. Each event's print format is cut into pieces once and kept.
 */
#include <stdlib.h>
#include <string.h>

#include "read/trace_internal.h"

/* Cut the event's print format once; on failure it is cut as it goes. */
static void rt_plan_cut(const struct ringtrace_trace_event_def *d, struct rt_plan *pl)
{
	pl->state = 2;
	size_t cap = strlen(d->print_fmt) + 1; /* a piece takes at least one byte */
	struct rt_fmt_seg *seg = malloc(cap * sizeof(*seg));
	if (!seg)
		return;
	const char *f = d->print_fmt;
	uint32_t n = 0;
	while (n < cap && rt_fmt_next(&f, &seg[n]))
		n++;
	pl->seg = seg;
	pl->nseg = n;
	pl->state = 1;
}

int ringtrace_trace_format(ringtrace_trace *t, const struct ringtrace_trace_record *rec, char *buf,
			   size_t size)
{
	struct rt_tstream *s = rec->stream_index < t->nstreams ? &t->streams[rec->stream_index]
							       : NULL;
	int r;
	if (size)
		buf[0] = 0;
	if (!s || rec->kind != RINGTRACE_TRACE_EVENT || !rec->def)
		return -RINGTRACE_EINVAL;
	if (rec->id == RINGTRACE_EVENT_ID_PRINTF) {
		uint32_t site = 0;
		if (rec->len >= 4)
			memcpy(&site, rec->data, 4);
		const struct ringtrace_trace_site *ps = site < t->doc.site_by_id_len
								? t->doc.site_by_id[site]
								: NULL;
		if (!ps) {
			rt_damage(t, s, rec->file_offset,
				  "printf record names call site %u, not in the metadata", site);
			return -RINGTRACE_ECORRUPT;
		}
		r = ringtrace_printf_format(ps->fmt, ps->types, ps->nargs, rec->data, rec->len, buf,
					    size);
	} else {
		const struct ringtrace_trace_event_def *d = rec->def;
		struct rt_plan *pl = NULL;
		if (d >= t->doc.events && d < t->doc.events + t->doc.nevents && t->plans) {
			pl = &t->plans[d - t->doc.events];
			if (pl->state == 0)
				rt_plan_cut(d, pl);
		}
		int cut = pl && pl->state == 1;
		/* (the fields were checked when the metadata was parsed) */
		r = rt_record_format(d->print_fmt, cut ? pl->seg : NULL, cut ? pl->nseg : 0,
				     d->fields, d->nfields, 1, rec->data, rec->len, buf, size);
	}
	if (r < 0)
		rt_damage(t, s, rec->file_offset, "event %s: %s", rec->def->name,
			  ringtrace_last_error());
	return r;
}

const char *ringtrace_trace_event_name(const struct ringtrace_trace_record *rec)
{
	if (rec->id == RINGTRACE_EVENT_ID_PRINTF)
		return "ringtrace_printf";
	return rec->def ? rec->def->name : "?";
}

/* v right-aligned in `width`, padded with `pad`. */
static inline char *rt_put_u64_w(char *p, uint64_t v, int width, char pad)
{
	int n = (int)rt_dec_len(v);
	for (int i = n; i < width; i++)
		*p++ = pad;
	p += n;
	rt_dec_back(p, v);
	return p;
}

/* "%16s-%-7u [%03u] " then the timestamp and ": " (at most 80 bytes). */
static char *rt_put_prefix(char *p, const struct ringtrace_trace_record *r, int raw)
{
	size_t cl = strlen(r->comm);
	if (cl > 16)
		cl = 16;
	for (size_t i = cl; i < 16; i++)
		*p++ = ' ';
	memcpy(p, r->comm, cl);
	p += cl;
	*p++ = '-';
	char *s = p;
	p = rt_put_u64_w(p, r->tid, 0, ' ');
	while (p - s < 7)
		*p++ = ' ';
	*p++ = ' ';
	*p++ = '[';
	p = rt_put_u64_w(p, r->cpu, 3, '0');
	*p++ = ']';
	*p++ = ' ';
	if (raw) {
		p = rt_put_u64_w(p, r->ts, 0, ' ');
	} else {
		p = rt_put_u64_w(p, r->ns / 1000000000u, 5, ' ');
		*p++ = '.';
		p = rt_put_u64_w(p, r->ns % 1000000000u / 1000u, 6, '0');
	}
	*p++ = ':';
	*p++ = ' ';
	return p;
}

int ringtrace_trace_format_line(ringtrace_trace *t, const struct ringtrace_trace_record *rec,
				int raw, char *buf, size_t size)
{
	/* The prefix and the name take at most 80 + 130 bytes: straight into
	 * buf when it has room for them, else through a local copy. */
	char local[256];
	char *head = size >= sizeof(local) ? buf : local;
	char *p = rt_put_prefix(head, rec, raw);
	if (rec->kind == RINGTRACE_TRACE_LOST) {
		memcpy(p, "*** ", 4);
		p = rt_put_u64_w(p + 4, rec->lost, 0, ' ');
		memcpy(p, " events lost ***", 16);
		p += 16;
	} else {
		const char *name = ringtrace_trace_event_name(rec);
		size_t nl = strlen(name);
		if (nl > 128)
			nl = 128;
		memcpy(p, name, nl);
		p += nl;
		*p++ = ':';
		*p++ = ' ';
	}
	size_t hl = (size_t)(p - head);
	if (head == local && size) {
		size_t c = hl < size - 1 ? hl : size - 1;
		memcpy(buf, local, c);
		buf[c] = 0;
	} else if (size) {
		buf[hl] = 0;
	}
	if (rec->kind == RINGTRACE_TRACE_LOST)
		return (int)hl;
	int n = ringtrace_trace_format(t, rec, size > hl ? buf + hl : NULL,
				       size > hl ? size - hl : 0);
	if (n < 0)
		return n;
	return n > 0x7FFFFFFF - (int)hl ? 0x7FFFFFFF : (int)hl + n;
}
