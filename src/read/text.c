/*
 * Records as text: an event's fields by its print format, a printf
 * record by its call site's format (both through the schema layer's one
 * formatter, src/schema/format.c), and the lines `ringtrace report`
 * prints. Each event's print format is cut into pieces once and kept.
 */
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

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
static inline char *rt_put_u64_padded(char *p, uint64_t v, int width, char pad)
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
	p = rt_put_u64_padded(p, r->tid, 0, ' ');
	while (p - s < 7)
		*p++ = ' ';
	*p++ = ' ';
	*p++ = '[';
	p = rt_put_u64_padded(p, r->cpu, 3, '0');
	*p++ = ']';
	*p++ = ' ';
	if (raw) {
		p = rt_put_u64_padded(p, r->ts, 0, ' ');
	} else {
		p = rt_put_u64_padded(p, r->ns / 1000000000u, 5, ' ');
		*p++ = '.';
		p = rt_put_u64_padded(p, r->ns % 1000000000u / 1000u, 6, '0');
	}
	*p++ = ':';
	*p++ = ' ';
	return p;
}

/*
 * Whether s[0..n) holds a byte that must not reach a terminal raw: a C0
 * control (below 0x20: a newline would forge a line, an ESC a terminal
 * command), DEL, or 0xC2, which leads the C1 controls U+0080..U+009F in
 * UTF-8 (CSI among them). Sixteen bytes a step with SSE2 (every x86-64),
 * else eight by word arithmetic: report scans millions of lines and the
 * byte loop was a sixth of its time.
 */
#ifdef __SSE2__
/* Whether one of the 16 bytes at p is one of those (SSE2). */
static inline int rt_bad16(const char *p)
{
	const __m128i c1f = _mm_set1_epi8(0x1f), c7f = _mm_set1_epi8(0x7f),
		      cc2 = _mm_set1_epi8((char)0xc2);
	__m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
	/* min(x, 0x1f) == x exactly where x <= 0x1f, unsigned */
	__m128i m = _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(x, c1f), x),
				 _mm_or_si128(_mm_cmpeq_epi8(x, c7f), _mm_cmpeq_epi8(x, cc2)));
	return _mm_movemask_epi8(m) != 0;
}
#endif

static inline __attribute__((always_inline)) int rt_needs_escape(const char *s, size_t n)
{
	size_t i = 0;
#ifdef __SSE2__
	if (n >= 16) {
		for (; i + 16 <= n; i += 16)
			if (rt_bad16(s + i))
				return 1;
		/* the rest: the last 16 bytes, overlapping those before */
		return i < n && rt_bad16(s + n - 16);
	}
#endif
	/* (x - 0x20 each) & ~x & 0x80 each is non-zero exactly when a byte of
	 * x is below 0x20; the same of x ^ c finds a byte equal to c. */
	const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
	for (; i + 8 <= n; i += 8) {
		uint64_t x, d, c;
		memcpy(&x, s + i, 8);
		d = x ^ (ones * 0x7f);
		c = x ^ (ones * 0xc2);
		if (((x - ones * 0x20) & ~x & highs) | ((d - ones) & ~d & highs) |
		    ((c - ones) & ~c & highs))
			return 1;
	}
	for (; i < n; i++) {
		unsigned char b = (unsigned char)s[i];
		if (b < 0x20 || b == 0x7f || b == 0xc2)
			return 1;
	}
	return 0;
}

/*
 * The line in buf[0..have) with every control byte as \xNN (a C1 control
 * as its two UTF-8 bytes, \xc2\xNN; other UTF-8 as it is), cut to fit
 * size (> 0); returns its length: as far as it was formatted, plus
 * `rest`, what was cut from the line before escaping.
 */
static size_t rt_escape_line(char *buf, size_t have, size_t size, size_t rest)
{
	char *src = malloc(have + 1);
	if (!src) { /* no room to work: blank the controls out instead */
		for (size_t i = 0; i < have; i++)
			if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
				buf[i] = '?';
		return have + rest;
	}
	memcpy(src, buf, have);
	src[have] = 0;
	static const char hex[] = "0123456789abcdef";
	size_t o = 0, len = 0;
	for (size_t i = 0; i < have; i++) {
		unsigned char b = (unsigned char)src[i];
		unsigned char b2 = (unsigned char)src[i + 1];
		int c1 = b == 0xc2 && b2 >= 0x80 && b2 <= 0x9f;
		int esc = b < 0x20 || b == 0x7f || c1;
		for (int k = 0; k <= c1; k++) {
			unsigned char v = k ? b2 : b;
			char e[4] = {'\\', 'x', hex[v >> 4], hex[v & 15]};
			size_t w = esc ? 4 : 1;
			if (o + w < size) {
				memcpy(buf + o, esc ? e : (const char *)&src[i], w);
				o += w;
			} else {
				o = size; /* full: only counted from here on */
			}
			len += w;
		}
		i += (size_t)c1;
	}
	buf[o < size ? o : size - 1] = 0;
	free(src);
	return len + rest;
}

/*
 * The line's length, with its control bytes escaped (see above). The
 * prefix's numbers are ours: only its first 16 bytes (the thread name)
 * and what follows the timestamp, from `text` on, can hold one.
 */
static int rt_line_done(char *buf, size_t size, size_t total, size_t text)
{
	size_t have = size && total > size - 1 ? size - 1 : total;
	if (size && (rt_needs_escape(buf, have < 16 ? have : 16) ||
		     (text < have && rt_needs_escape(buf + text, have - text))))
		total = rt_escape_line(buf, have, size, total - have);
	return total > 0x7FFFFFFF ? 0x7FFFFFFF : (int)total;
}

int ringtrace_trace_format_line(ringtrace_trace *t, const struct ringtrace_trace_record *rec,
				int raw, char *buf, size_t size)
{
	/* The prefix and the name take at most 80 + 130 bytes: straight into
	 * buf when it has room for them, else through a local copy. */
	char local[256];
	char *head = size >= sizeof(local) ? buf : local;
	char *p = rt_put_prefix(head, rec, raw);
	size_t text = (size_t)(p - head); /* the name or the loss message */
	if (rec->kind == RINGTRACE_TRACE_LOST) {
		memcpy(p, "*** ", 4);
		p = rt_put_u64_padded(p + 4, rec->lost, 0, ' ');
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
		return rt_line_done(buf, size, hl, text);
	int n = ringtrace_trace_format(t, rec, size > hl ? buf + hl : NULL,
				       size > hl ? size - hl : 0);
	if (n < 0)
		return n;
	return rt_line_done(buf, size, hl + (size_t)n, text);
}
