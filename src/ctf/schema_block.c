/*
 * The ringtrace-schema block (docs/format.md, section 7): the comment
 * that follows the TSDL in a trace's metadata and says what ringtrace's
 * reader needs and CTF cannot: print formats, event kinds, printf call
 * sites, filters, triggers and the recorder's accounting. Written and
 * parsed here only.
 *
 * The parser trusts nothing: every line is checked (its keyword, its
 * number of fields, every number against its range, every string's
 * encoding), every count is bounded, and the first damage names the file
 * and the line.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctf/ctf_api.h"
#include "schema/schema_api.h"

/* Bytes a string carries as they are; everything else is %XX. */
static const char rt_pct_safe[] = "_.-:,=()[]{}<>!?#+^~@$&;";

/* ---- writing -------------------------------------------------------------- */

/* A string, percent-encoded ("%" for the empty string). */
static void rt_pct(FILE *f, const char *s)
{
	if (!s || !*s) {
		fputc('%', f);
		return;
	}
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    (c && strchr(rt_pct_safe, c)))
			fputc(c, f);
		else
			fprintf(f, "%%%02X", c);
	}
}

void rt_ctf_uuid_str(char out[37], const uint8_t u[16])
{
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
		 u[13], u[14], u[15]);
}

int rt_ctf_uuid_parse(const char *s, uint8_t u[16])
{
	int k = 0;
	for (int i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return -1;
			continue;
		}
		int v = s[i] >= '0' && s[i] <= '9'   ? s[i] - '0'
			: s[i] >= 'a' && s[i] <= 'f' ? s[i] - 'a' + 10
			: s[i] >= 'A' && s[i] <= 'F' ? s[i] - 'A' + 10
						     : -1;
		if (v < 0)
			return -1;
		if (k % 2 == 0)
			u[k / 2] = (uint8_t)(v << 4);
		else
			u[k / 2] |= (uint8_t)v;
		k++;
	}
	return s[36] == 0 ? 0 : -1;
}

void rt_ctf_write_block(FILE *f, const struct rt_ctf_meta *m)
{
	const struct ringtrace_trace_clock *c = &m->clock;
	fprintf(f, "\n/* ringtrace-schema 1\nclock %s %llu %llu %llu\n",
		c->is_tsc ? "tsc" : "monotonic", (unsigned long long)c->freq,
		(unsigned long long)c->base_ticks, (unsigned long long)c->base_ns);
	if (m->has_realtime_offset)
		fprintf(f, "realtime_offset %lld\n", (long long)m->realtime_offset);
	if (m->has_uuid) {
		char u[37];
		rt_ctf_uuid_str(u, m->uuid);
		fprintf(f, "uuid %s\n", u);
	}
	if (m->has_process) {
		const struct ringtrace_trace_process *pr = &m->process;
		fprintf(f, "process %u ", pr->pid);
		rt_pct(f, pr->procname);
		fputc(' ', f);
		rt_pct(f, pr->executable);
		fputc(' ', f);
		rt_pct(f, pr->hostname);
		fputc('\n', f);
	}
	for (uint32_t i = 0; i < m->nevents; i++) {
		const struct ringtrace_trace_event_def *ev = &m->events[i];
		fprintf(f, "event %u %u ", ev->id, ev->kind);
		rt_pct(f, ev->name);
		fprintf(f, " %u ", ev->nfields);
		rt_pct(f, ev->print_fmt);
		fputc('\n', f);
		for (uint32_t k = 0; k < ev->nfields; k++) {
			const struct ringtrace_field_desc *fd = &ev->fields[k];
			uint32_t ne = fd->enm ? fd->enm->count : 0;
			fputs("field ", f);
			rt_pct(f, fd->name);
			fprintf(f, " %u %u %u %u %u %u\n", fd->type, fd->size, fd->is_signed,
				fd->align, fd->count, ne);
			for (uint32_t e = 0; e < ne; e++) {
				fputs("enum ", f);
				rt_pct(f, fd->enm->values[e].name);
				fprintf(f, " %lld\n", (long long)fd->enm->values[e].value);
			}
		}
	}
	for (uint32_t i = 0; i < m->nsites; i++) {
		const struct ringtrace_trace_site *site = &m->sites[i];
		fprintf(f, "site %u %u ", site->id, site->nargs);
		if (site->nargs == 0)
			fputc('-', f);
		for (uint32_t a = 0; a < site->nargs && a < RINGTRACE_PRINTF_MAX_ARGS; a++)
			fputc('0' + (site->types[a] % 10), f);
		fputc(' ', f);
		rt_pct(f, site->fmt);
		fputc(' ', f);
		rt_pct(f, site->file);
		fprintf(f, " %u\n", site->line);
	}
	for (uint32_t i = 0; i < m->nevents; i++) {
		const struct ringtrace_trace_event_def *ev = &m->events[i];
		if (!ev->filter && !ev->rejected)
			continue;
		fprintf(f, "filter %u %llu ", ev->id, (unsigned long long)ev->rejected);
		if (ev->filter)
			rt_pct(f, ev->filter);
		else
			fputc('-', f); /* no filter now (an expression is never "-") */
		fputc('\n', f);
	}
	for (uint32_t i = 0; i < m->ntriggers; i++) {
		const struct ringtrace_trace_trigger *t = &m->triggers[i];
		fprintf(f, "trigger %llu %llu ", (unsigned long long)t->fired,
			(unsigned long long)t->skipped);
		rt_pct(f, t->spec);
		fputc('\n', f);
	}
	for (uint32_t i = 0; i < m->ndrops; i++)
		fprintf(f, "dropped %llu %llu %u\n", (unsigned long long)m->drops[i].stream,
			(unsigned long long)m->drops[i].dropped, m->drops[i].tid);
	for (uint32_t i = 0; i < m->nunwritten; i++) {
		const struct ringtrace_trace_unwritten *u = &m->unwritten[i];
		fprintf(f, "unwritten %llu %llu %llu %llu %u ", (unsigned long long)u->stream,
			(unsigned long long)u->events, (unsigned long long)u->pages,
			(unsigned long long)u->end, u->tid);
		rt_pct(f, u->reason && u->reason[0] ? u->reason : "EIO");
		fputc('\n', f);
	}
	for (uint32_t i = 0; i < m->nstats; i++) {
		fputs("stat ", f);
		rt_pct(f, m->stats[i].key);
		fprintf(f, " %llu\n", (unsigned long long)m->stats[i].value);
	}
	fputs("end */\n", f);
}

/* ---- parsing -------------------------------------------------------------- */

/* A `filter` line: checked against the event lines once they are all read. */
struct rt_ctf_filter_line {
	uint32_t id;   /* event id, not yet checked */
	unsigned line; /* in metadata, for the error message */
	uint64_t rejected;
	const char *expr; /* NULL for "-" */
};

struct rt_parse {
	struct rt_ctf_doc *t;
	const char *dir;
	char *err;
	size_t errsize;
	unsigned line;
	char *tok[10];
	int ntok;
	int have_clock;
};

/* Mark id in *bits (max_id + 1 bits, allocated on first use): 1 if it was
 * marked already, 0 if not, -1 out of memory. */
static int rt_seen(uint8_t **bits, uint32_t max_id, uint64_t id)
{
	if (!*bits && !(*bits = calloc(max_id / 8 + 1, 1)))
		return -1;
	uint8_t m = (uint8_t)(1u << (id & 7));
	int was = ((*bits)[id >> 3] & m) != 0;
	(*bits)[id >> 3] |= m;
	return was;
}

/* A message "DIR/metadata: ..." in the caller's buffer; returns -code. */
static int rt_fail(struct rt_parse *p, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int rt_fail(struct rt_parse *p, int code, const char *fmt, ...)
{
	char msg[900];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (p->errsize)
		snprintf(p->err, p->errsize, "%s/metadata: %s", p->dir, msg);
	return -code;
}

#define RT_META_FAIL(P, ...) rt_schema_fail((P), __VA_ARGS__)

static int rt_schema_fail(struct rt_parse *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int rt_schema_fail(struct rt_parse *p, const char *fmt, ...)
{
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return rt_fail(p, RINGTRACE_ECORRUPT, "line %u: %s", p->line, msg);
}

/* Split a line at single spaces; -1 on an empty token or too many. */
static int rt_split(struct rt_parse *p, char *line, int max)
{
	p->ntok = 0;
	char *s = line;
	for (;;) {
		char *sp = strchr(s, ' ');
		if (p->ntok == max)
			return -1;
		p->tok[p->ntok++] = s;
		if (!sp)
			break;
		*sp = 0;
		s = sp + 1;
	}
	for (int i = 0; i < p->ntok; i++)
		if (!p->tok[i][0])
			return -1;
	return 0;
}

static int rt_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Percent-decode a token into the arena; NULL (and *why) if malformed. */
static const char *rt_pct_decode(struct rt_ctf_doc *t, const char *s, const char **why)
{
	size_t n = strlen(s);
	char *out = rt_arena_alloc(&t->arena, n + 1);
	if (!out) {
		*why = "out of memory";
		return NULL;
	}
	if (strcmp(s, "%") == 0) {
		out[0] = 0;
		return out;
	}
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '%') {
			int h = i + 2 < n ? rt_hexval(s[i + 1]) : -1;
			int l = h >= 0 ? rt_hexval(s[i + 2]) : -1;
			if (h < 0 || l < 0) {
				*why = "bad %XX escape";
				return NULL;
			}
			c = (unsigned char)(h * 16 + l);
			if (c == 0) {
				*why = "%00 in a string";
				return NULL;
			}
			i += 2;
		} else if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			     (c >= '0' && c <= '9') || strchr(rt_pct_safe, c))) {
			*why = "character that must be percent-encoded";
			return NULL;
		}
		out[k++] = (char)c;
	}
	out[k] = 0;
	return out;
}

#define RT_STR(P, dst, i, what)                                       \
	do {                                                          \
		const char *why_ = "";                                \
		(dst) = rt_pct_decode((P)->t, (P)->tok[i], &why_);    \
		if (!(dst))                                           \
			return RT_META_FAIL(P, "%s: %s", what, why_); \
	} while (0)
#define RT_NUM(P, dst, i, max, what)                                                            \
	do {                                                                                    \
		uint64_t v_;                                                                    \
		if (rt_parse_u64((P)->tok[i], (max), &v_) < 0)                                  \
			return RT_META_FAIL(P, "%s \"%.40s\" is not a number in 0..%llu", what, \
					    (P)->tok[i], (unsigned long long)(max));            \
		(dst) = v_;                                                                     \
	} while (0)

static int rt_check_field(struct rt_parse *p, const struct ringtrace_field_desc *f, uint32_t nenum)
{
	char buf[80];
	const char *why;
	if (rt_field_check(f, buf, sizeof(buf), &why) < 0)
		return RT_META_FAIL(p, "field \"%s\": %s", f->name, why);
	if (nenum && f->type != RINGTRACE_FT_ENUM)
		return RT_META_FAIL(p, "field \"%s\": %u enum values on a non-enum field", f->name,
				    nenum);
	return 0;
}

/* State while the field and enum lines of an event are read. */
struct rt_pending {
	struct ringtrace_trace_event_def *ev;
	struct ringtrace_field_desc *fields;
	uint32_t nfields, fields_done;
	struct ringtrace_enum_desc *enm; /* of the last field */
	struct ringtrace_enum_value *values;
	uint32_t nenum, enum_done;
};

static int rt_pending_check(struct rt_parse *p, struct rt_pending *pd)
{
	if (pd->enm && pd->enum_done < pd->nenum)
		return RT_META_FAIL(p, "field \"%s\" declares %u enum values, %u given",
				    pd->fields[pd->fields_done - 1].name, pd->nenum, pd->enum_done);
	if (pd->ev && pd->fields_done < pd->nfields)
		return RT_META_FAIL(p, "event \"%s\" declares %u fields, %u given", pd->ev->name,
				    pd->nfields, pd->fields_done);
	return 0;
}

/* Before a line: close the enum list of the last field unless the line is
 * an enum line, and the event unless it is a field or enum line; a list
 * closed before all its declared lines were read is an error. */
static int rt_pending_close(struct rt_parse *p, struct rt_pending *pd, int in_event, int in_field)
{
	if (!in_field && pd->enm) {
		if (pd->enum_done < pd->nenum)
			return rt_pending_check(p, pd);
		pd->enm = NULL;
	}
	if (!in_event) {
		int r = rt_pending_check(p, pd);
		if (r < 0)
			return r;
		pd->ev = NULL;
	}
	return 0;
}

/* One parse function per line keyword: called once the line is split into
 * exactly the number of tokens its table entry says (p->tok[0] is the
 * keyword), so each only checks and stores its fields. */

static int rt_line_clock(struct rt_parse *p, struct rt_pending *pd)
{
	struct ringtrace_trace_clock *c = &p->t->meta.clock;
	(void)pd;
	if (p->have_clock)
		return RT_META_FAIL(p, "second clock line");
	if (strcmp(p->tok[1], "tsc") == 0)
		c->is_tsc = 1;
	else if (strcmp(p->tok[1], "monotonic") == 0)
		c->is_tsc = 0;
	else
		return RT_META_FAIL(p, "clock: source \"%.40s\" is not tsc or monotonic",
				    p->tok[1]);
	RT_NUM(p, c->freq, 2, UINT64_MAX, "clock frequency");
	if (c->freq == 0)
		return RT_META_FAIL(p, "clock frequency is 0");
	RT_NUM(p, c->base_ticks, 3, UINT64_MAX, "clock base_ticks");
	RT_NUM(p, c->base_ns, 4, UINT64_MAX, "clock base_ns");
	p->have_clock = 1;
	return 0;
}

static int rt_line_realtime_offset(struct rt_parse *p, struct rt_pending *pd)
{
	struct rt_ctf_meta *m = &p->t->meta;
	(void)pd;
	if (m->has_realtime_offset)
		return RT_META_FAIL(p, "second realtime_offset line");
	if (rt_parse_i64(p->tok[1], &m->realtime_offset) < 0)
		return RT_META_FAIL(p, "realtime_offset \"%.40s\" is not a 64-bit integer (ns)",
				    p->tok[1]);
	m->has_realtime_offset = 1;
	return 0;
}

static int rt_line_uuid(struct rt_parse *p, struct rt_pending *pd)
{
	struct rt_ctf_meta *m = &p->t->meta;
	(void)pd;
	if (m->has_uuid)
		return RT_META_FAIL(p, "second uuid line");
	if (rt_ctf_uuid_parse(p->tok[1], m->uuid) < 0)
		return RT_META_FAIL(p, "uuid \"%.40s\" is not 8-4-4-4-12 hex digits", p->tok[1]);
	m->has_uuid = 1;
	return 0;
}

static int rt_line_process(struct rt_parse *p, struct rt_pending *pd)
{
	struct rt_ctf_meta *m = &p->t->meta;
	(void)pd;
	if (m->has_process)
		return RT_META_FAIL(p, "second process line");
	struct ringtrace_trace_process *pr = &m->process;
	uint64_t pid;
	RT_NUM(p, pid, 1, 0x7fffffff, "process id");
	pr->pid = (uint32_t)pid;
	RT_STR(p, pr->procname, 2, "process name");
	RT_STR(p, pr->executable, 3, "process executable");
	RT_STR(p, pr->hostname, 4, "process host name");
	m->has_process = 1;
	return 0;
}

static int rt_line_event(struct rt_parse *p, struct rt_pending *pd)
{
	struct rt_ctf_doc *t = p->t;
	if (rt_grow((void **)&t->events, &t->cap_events, t->nevents + 1, sizeof(*t->events)) < 0)
		return RT_META_FAIL(p, "out of memory");
	struct ringtrace_trace_event_def *ev = &t->events[t->nevents];
	memset(ev, 0, sizeof(*ev));
	uint64_t id, kind, nf;
	RT_NUM(p, id, 1, RINGTRACE_EV_MAX_ID, "event id");
	RT_NUM(p, kind, 2, RINGTRACE_KIND_COUNTER, "event kind");
	RT_STR(p, ev->name, 3, "event name");
	RT_NUM(p, nf, 4, RT_CTF_MAX_FIELDS, "event field count");
	RT_STR(p, ev->print_fmt, 5, "event print format");
	if (!ev->name[0])
		return RT_META_FAIL(p, "event %llu has an empty name", (unsigned long long)id);
	int dup = rt_seen(&t->ev_seen, RINGTRACE_EV_MAX_ID, id);
	if (dup < 0)
		return RT_META_FAIL(p, "out of memory");
	if (dup)
		return RT_META_FAIL(p, "event id %llu defined twice", (unsigned long long)id);
	ev->id = (uint32_t)id;
	ev->kind = (uint32_t)kind;
	ev->nfields = (uint32_t)nf;
	pd->fields = nf ? rt_arena_alloc(&t->arena, nf * sizeof(struct ringtrace_field_desc))
			: NULL;
	if (nf && !pd->fields)
		return RT_META_FAIL(p, "out of memory");
	ev->fields = pd->fields;
	/* events[] may move when it grows, but only at the next event line,
	 * which closes this one first (rt_pending_close) */
	pd->ev = ev;
	pd->nfields = (uint32_t)nf;
	pd->fields_done = 0;
	t->nevents++;
	return 0;
}

/* The enum list of an enum field: its enum lines follow the field line. */
static int rt_field_enum(struct rt_parse *p, struct rt_pending *pd, struct ringtrace_field_desc *f,
			 uint32_t nenum)
{
	struct rt_ctf_doc *t = p->t;
	pd->enm = rt_arena_alloc(&t->arena, sizeof(*pd->enm));
	pd->values = nenum ? rt_arena_alloc(&t->arena, nenum * sizeof(*pd->values)) : NULL;
	if (!pd->enm || (nenum && !pd->values))
		return RT_META_FAIL(p, "out of memory");
	pd->enm->name = f->name;
	pd->enm->values = pd->values;
	pd->enm->count = nenum;
	pd->nenum = nenum;
	pd->enum_done = 0;
	f->enm = pd->enm;
	return 0;
}

static int rt_line_field(struct rt_parse *p, struct rt_pending *pd)
{
	if (!pd->ev || pd->fields_done >= pd->nfields)
		return RT_META_FAIL(p, "field line without an event that expects one");
	struct ringtrace_field_desc *f = &pd->fields[pd->fields_done];
	memset(f, 0, sizeof(*f));
	uint64_t type, size, sgn, align, count, nenum;
	RT_STR(p, f->name, 1, "field name");
	if (!f->name[0])
		return RT_META_FAIL(p, "field with an empty name");
	RT_NUM(p, type, 2, 255, "field type");
	RT_NUM(p, size, 3, 255, "field size");
	RT_NUM(p, sgn, 4, 255, "field is_signed");
	RT_NUM(p, align, 5, 255, "field alignment");
	RT_NUM(p, count, 6, UINT32_MAX, "field count");
	RT_NUM(p, nenum, 7, RT_CTF_MAX_ENUMS, "field enum count");
	f->type = (uint8_t)type;
	f->size = (uint8_t)size;
	f->is_signed = (uint8_t)sgn;
	f->align = (uint8_t)align;
	f->count = (uint32_t)count;
	int r = rt_check_field(p, f, (uint32_t)nenum);
	if (r < 0)
		return r;
	pd->fields_done++;
	pd->enm = NULL;
	if (f->type == RINGTRACE_FT_ENUM)
		return rt_field_enum(p, pd, f, (uint32_t)nenum);
	return 0;
}

static int rt_line_enum(struct rt_parse *p, struct rt_pending *pd)
{
	if (!pd->enm || pd->enum_done >= pd->nenum)
		return RT_META_FAIL(p, "enum line without a field that expects one");
	struct ringtrace_enum_value *v = &pd->values[pd->enum_done];
	RT_STR(p, v->name, 1, "enum name");
	if (rt_parse_i64(p->tok[2], &v->value) < 0)
		return RT_META_FAIL(p, "enum value \"%.40s\" is not a 64-bit integer", p->tok[2]);
	pd->enum_done++;
	return 0;
}

/* A site's argument types: one digit per argument, or "-" for none. */
static int rt_site_types(struct rt_parse *p, struct ringtrace_trace_site *s, const char *ty,
			 uint64_t nargs)
{
	if (nargs == 0) {
		if (strcmp(ty, "-") != 0)
			return RT_META_FAIL(p, "site with no arguments: types must be \"-\"");
		return 0;
	}
	if (strlen(ty) != nargs)
		return RT_META_FAIL(p, "site: %llu types for %llu arguments",
				    (unsigned long long)strlen(ty), (unsigned long long)nargs);
	for (uint64_t i = 0; i < nargs; i++) {
		if (ty[i] < '0' + RINGTRACE_PF_S64 || ty[i] > '0' + RINGTRACE_PF_POINTER)
			return RT_META_FAIL(p, "site: argument type '%c' is not 1..5", ty[i]);
		s->types[i] = (uint8_t)(ty[i] - '0');
	}
	return 0;
}

static int rt_line_site(struct rt_parse *p, struct rt_pending *pd)
{
	struct rt_ctf_doc *t = p->t;
	(void)pd;
	if (rt_grow((void **)&t->sites, &t->cap_sites, t->nsites + 1, sizeof(*t->sites)) < 0)
		return RT_META_FAIL(p, "out of memory");
	struct ringtrace_trace_site *s = &t->sites[t->nsites];
	memset(s, 0, sizeof(*s));
	uint64_t id, nargs, ln;
	RT_NUM(p, id, 1, RT_CTF_MAX_SITE_ID, "site id");
	if (id == 0)
		return RT_META_FAIL(p, "site id 0 (ids start at 1)");
	RT_NUM(p, nargs, 2, RINGTRACE_PRINTF_MAX_ARGS, "site argument count");
	int r = rt_site_types(p, s, p->tok[3], nargs);
	if (r < 0)
		return r;
	RT_STR(p, s->fmt, 4, "site format");
	RT_STR(p, s->file, 5, "site file");
	RT_NUM(p, ln, 6, UINT32_MAX, "site line");
	int dup = rt_seen(&t->site_seen, RT_CTF_MAX_SITE_ID, id);
	if (dup < 0)
		return RT_META_FAIL(p, "out of memory");
	if (dup)
		return RT_META_FAIL(p, "site id %llu defined twice", (unsigned long long)id);
	s->id = (uint32_t)id;
	s->nargs = (uint32_t)nargs;
	s->line = (uint32_t)ln;
	t->nsites++;
	return 0;
}

static int rt_line_filter(struct rt_parse *p, struct rt_pending *pd)
{
	struct rt_ctf_doc *t = p->t;
	(void)pd;
	if (rt_grow((void **)&t->filters, &t->cap_filters, t->nfilters + 1, sizeof(*t->filters)) <
	    0)
		return RT_META_FAIL(p, "out of memory");
	struct rt_ctf_filter_line *fl = &t->filters[t->nfilters];
	uint64_t id;
	RT_NUM(p, id, 1, RINGTRACE_EV_MAX_ID, "filter event id");
	RT_NUM(p, fl->rejected, 2, UINT64_MAX, "filter rejected count");
	/* "-" is never an expression (the filter grammar starts with a
	 * field name, '!' or '('), so it can stand for "none". */
	if (strcmp(p->tok[3], "-") == 0) {
		fl->expr = NULL;
	} else {
		RT_STR(p, fl->expr, 3, "filter expression");
		if (!fl->expr[0])
			return RT_META_FAIL(p, "filter: empty expression (\"-\" stands for none)");
	}
	fl->id = (uint32_t)id;
	fl->line = p->line;
	t->nfilters++;
	return 0;
}

static int rt_line_trigger(struct rt_parse *p, struct rt_pending *pd)
{
	struct rt_ctf_doc *t = p->t;
	(void)pd;
	if (rt_grow((void **)&t->triggers, &t->cap_triggers, t->ntriggers + 1,
		    sizeof(*t->triggers)) < 0)
		return RT_META_FAIL(p, "out of memory");
	struct ringtrace_trace_trigger *tg = &t->triggers[t->ntriggers];
	RT_NUM(p, tg->fired, 1, UINT64_MAX, "trigger fired count");
	RT_NUM(p, tg->skipped, 2, UINT64_MAX, "trigger skipped count");
	RT_STR(p, tg->spec, 3, "trigger spec");
	if (!tg->spec[0])
		return RT_META_FAIL(p, "trigger with an empty spec");
	t->ntriggers++;
	return 0;
}

static int rt_line_dropped(struct rt_parse *p, struct rt_pending *pd)
{
	struct rt_ctf_doc *t = p->t;
	(void)pd;
	if (rt_grow((void **)&t->drops, &t->cap_drops, t->ndrops + 1, sizeof(*t->drops)) < 0)
		return RT_META_FAIL(p, "out of memory");
	struct ringtrace_trace_drops *d = &t->drops[t->ndrops];
	RT_NUM(p, d->stream, 1, UINT64_MAX, "dropped stream");
	RT_NUM(p, d->dropped, 2, UINT64_MAX, "dropped count");
	RT_NUM(p, d->tid, 3, UINT32_MAX, "dropped tid");
	t->ndrops++;
	return 0;
}

/* unwritten <stream> <events> <pages> <end> <tid> <reason> */
static int rt_line_unwritten(struct rt_parse *p, struct rt_pending *pd)
{
	struct rt_ctf_doc *t = p->t;
	(void)pd;
	if (rt_grow((void **)&t->unwritten, &t->cap_unwritten, t->nunwritten + 1,
		    sizeof(*t->unwritten)) < 0)
		return RT_META_FAIL(p, "out of memory");
	struct ringtrace_trace_unwritten *u = &t->unwritten[t->nunwritten];
	RT_NUM(p, u->stream, 1, UINT64_MAX, "unwritten stream");
	RT_NUM(p, u->events, 2, UINT64_MAX, "unwritten events");
	RT_NUM(p, u->pages, 3, UINT64_MAX, "unwritten pages");
	RT_NUM(p, u->end, 4, UINT64_MAX, "unwritten end");
	RT_NUM(p, u->tid, 5, UINT32_MAX, "unwritten tid");
	if (u->pages == 0)
		return RT_META_FAIL(p, "unwritten: 0 pages (a line says at least one)");
	if (u->events > u->end)
		return RT_META_FAIL(p,
				    "unwritten: %llu events, more than the stream's %llu up to the "
				    "end of its last page not written",
				    (unsigned long long)u->events, (unsigned long long)u->end);
	/* an error's name, as errno names are: what a reader shows */
	const char *r = p->tok[6];
	size_t n = strlen(r);
	if (n == 0 || n > 31 || strspn(r, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != n)
		return RT_META_FAIL(p,
				    "unwritten: reason \"%.40s\" is not an error name (ENOSPC, "
				    "EIO, ...: 1 to 31 of A-Z 0-9 _)",
				    r);
	RT_STR(p, u->reason, 6, "unwritten reason");
	t->nunwritten++;
	return 0;
}

static int rt_line_stat(struct rt_parse *p, struct rt_pending *pd)
{
	struct rt_ctf_doc *t = p->t;
	(void)pd;
	if (rt_grow((void **)&t->stats, &t->cap_stats, t->nstats + 1, sizeof(*t->stats)) < 0)
		return RT_META_FAIL(p, "out of memory");
	struct ringtrace_trace_stat *st = &t->stats[t->nstats];
	RT_STR(p, st->key, 1, "stat key");
	if (!st->key[0])
		return RT_META_FAIL(p, "stat with an empty key");
	RT_NUM(p, st->value, 2, UINT64_MAX, "stat value");
	t->nstats++;
	return 0;
}

/* The lines of the block: keyword, number of tokens (keyword included),
 * the line's shape for the error message, whether it continues the event
 * above it (field) or the field above it (enum), and its parse function. */
static const struct rt_line_kind {
	const char *kw;
	int ntok;
	uint8_t in_event, in_field;
	const char *usage;
	int (*parse)(struct rt_parse *p, struct rt_pending *pd);
} rt_line_kinds[] = {
	{"clock", 5, 0, 0, "clock <tsc|monotonic> <freq> <base_ticks> <base_ns>", rt_line_clock},
	{"realtime_offset", 2, 0, 0, "realtime_offset <ns>", rt_line_realtime_offset},
	{"uuid", 2, 0, 0, "uuid <8-4-4-4-12 hex digits>", rt_line_uuid},
	{"process", 5, 0, 0, "process <pid> <procname> <executable> <hostname>", rt_line_process},
	{"event", 6, 0, 0, "event <id> <kind> <name> <nfields> <print_fmt>", rt_line_event},
	{"field", 8, 1, 0, "field <name> <type> <size> <is_signed> <align> <count> <nenum>",
	 rt_line_field},
	{"enum", 3, 1, 1, "enum <name> <value>", rt_line_enum},
	{"site", 7, 0, 0, "site <id> <nargs> <types> <fmt> <file> <line>", rt_line_site},
	{"filter", 4, 0, 0, "filter <event id> <rejected> <expression|->", rt_line_filter},
	{"trigger", 4, 0, 0, "trigger <fired> <skipped> <spec>", rt_line_trigger},
	{"dropped", 4, 0, 0, "dropped <stream> <count> <tid>", rt_line_dropped},
	{"unwritten", 7, 0, 0, "unwritten <stream> <events> <pages> <end> <tid> <reason>",
	 rt_line_unwritten},
	{"stat", 3, 0, 0, "stat <key> <value>", rt_line_stat},
};

static int rt_parse_line(struct rt_parse *p, char *line, struct rt_pending *pd)
{
	const char *sp = strchr(line, ' ');
	size_t kwl = sp ? (size_t)(sp - line) : strlen(line);
	const struct rt_line_kind *k = NULL;
	for (size_t i = 0; i < sizeof(rt_line_kinds) / sizeof(rt_line_kinds[0]); i++)
		if (strlen(rt_line_kinds[i].kw) == kwl &&
		    memcmp(rt_line_kinds[i].kw, line, kwl) == 0)
			k = &rt_line_kinds[i];
	int r = rt_pending_close(p, pd, k && k->in_event, k && k->in_field);
	if (r < 0)
		return r;
	if (!k)
		return RT_META_FAIL(p, "unknown line \"%.40s\"", line);
	if (rt_split(p, line, 10) < 0 || p->ntok != k->ntok)
		return RT_META_FAIL(p, "%s: expected \"%s\"", k->kw, k->usage);
	return k->parse(p, pd);
}

static int rt_cmp_drops(const void *a, const void *b)
{
	uint64_t x = ((const struct ringtrace_trace_drops *)a)->stream,
		 y = ((const struct ringtrace_trace_drops *)b)->stream;
	return x < y ? -1 : x > y;
}

static int rt_cmp_unwritten(const void *a, const void *b)
{
	uint64_t x = ((const struct ringtrace_trace_unwritten *)a)->stream,
		 y = ((const struct ringtrace_trace_unwritten *)b)->stream;
	return x < y ? -1 : x > y;
}

/* The block's first line: the last line that starts with start[] below,
 * of version 1. *body: the line after it; p->line: its number. */
static int rt_block_start(struct rt_parse *p, char *text, char **body)
{
	static const char start[] = "/* ringtrace-schema ";
	char *blk = NULL;
	for (char *s = text; (s = strstr(s, start)) != NULL; s++)
		if (s == text || s[-1] == '\n')
			blk = s;
	if (!blk)
		return rt_fail(p, RINGTRACE_ECORRUPT,
			       "no \"/* ringtrace-schema 1\" block (not a ringtrace trace?)");
	for (char *s = text; s < blk; s++)
		p->line += *s == '\n';
	char *nl = strchr(blk, '\n');
	if (!nl)
		return RT_META_FAIL(p, "schema block has no lines");
	*nl = 0;
	if (strcmp(blk + sizeof(start) - 1, "1") != 0)
		return RT_META_FAIL(p, "schema version \"%.20s\" is not 1",
				    blk + sizeof(start) - 1);
	*body = nl + 1;
	return 0;
}

/* The lines of the block up to its end line, then nothing but white space. */
static int rt_block_lines(struct rt_parse *p, char *s)
{
	struct rt_pending pd;
	memset(&pd, 0, sizeof(pd));
	int ended = 0;
	while (*s) {
		p->line++;
		char *e = strchr(s, '\n');
		if (!e)
			return RT_META_FAIL(p,
					    "line not terminated by a newline (file truncated?)");
		*e = 0;
		if (strcmp(s, "end */") == 0) {
			int r = rt_pending_close(p, &pd, 0, 0);
			if (r < 0)
				return r;
			ended = 1;
			s = e + 1;
			break;
		}
		for (char *c = s; c < e; c++)
			if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7F)
				return RT_META_FAIL(p, "control or non-ASCII byte 0x%02x",
						    (unsigned char)*c);
		int r = rt_parse_line(p, s, &pd);
		if (r < 0)
			return r;
		s = e + 1;
	}
	if (!ended)
		return RT_META_FAIL(p,
				    "schema block not terminated by \"end */\" (file truncated?)");
	for (; *s; s++) {
		if (*s == '\n')
			p->line++;
		else if (!isspace((unsigned char)*s))
			return RT_META_FAIL(p, "text after the end of the schema block");
	}
	return 0;
}

/* by_id and site_by_id: the events and sites indexed by their ids. */
static int rt_index_ids(struct rt_parse *p)
{
	struct rt_ctf_doc *t = p->t;
	uint32_t maxid = 0;
	for (uint32_t i = 0; i < t->nevents; i++)
		if (t->events[i].id > maxid)
			maxid = t->events[i].id;
	t->by_id_len = maxid + 1;
	t->by_id = calloc(t->by_id_len, sizeof(*t->by_id));
	uint32_t maxsite = 0;
	for (uint32_t i = 0; i < t->nsites; i++)
		if (t->sites[i].id > maxsite)
			maxsite = t->sites[i].id;
	t->site_by_id_len = maxsite + 1;
	t->site_by_id = calloc(t->site_by_id_len, sizeof(*t->site_by_id));
	if (!t->by_id || !t->site_by_id)
		return rt_fail(p, RINGTRACE_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < t->nevents; i++)
		t->by_id[t->events[i].id] = &t->events[i];
	for (uint32_t i = 0; i < t->nsites; i++)
		t->site_by_id[t->sites[i].id] = &t->sites[i];
	return 0;
}

/* Each filter line onto its event. Before the printf fallback that the
 * caller adds: a filter line must name an event of the schema block
 * itself, once. */
static int rt_attach_filters(struct rt_parse *p)
{
	struct rt_ctf_doc *t = p->t;
	if (!t->nfilters)
		return 0;
	unsigned char *seen = calloc(t->by_id_len, 1);
	if (!seen)
		return rt_fail(p, RINGTRACE_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < t->nfilters; i++) {
		const struct rt_ctf_filter_line *fl = &t->filters[i];
		struct ringtrace_trace_event_def *ev = fl->id < t->by_id_len ? t->by_id[fl->id]
									     : NULL;
		p->line = fl->line;
		if (!ev || seen[fl->id]) {
			free(seen);
			if (!ev)
				return RT_META_FAIL(
					p, "filter: event id %u is not defined by an event line",
					fl->id);
			return RT_META_FAIL(p, "filter: second filter line for event %u (%s)",
					    fl->id, ev->name);
		}
		seen[fl->id] = 1;
		ev->filter = fl->expr;
		ev->rejected = fl->rejected;
	}
	free(seen);
	return 0;
}

int rt_ctf_parse(struct rt_ctf_doc *t, const char *dir, char *text, size_t len, char *err,
		 size_t errsize)
{
	struct rt_parse p = {.t = t, .dir = dir, .err = err, .errsize = errsize, .line = 1};
	if (memchr(text, 0, len))
		return rt_fail(&p, RINGTRACE_ECORRUPT, "byte %zu: NUL byte in the text",
			       (size_t)((char *)memchr(text, 0, len) - text));
	char *body = NULL;
	int r;
	if ((r = rt_block_start(&p, text, &body)) < 0 || (r = rt_block_lines(&p, body)) < 0)
		return r;
	if (!p.have_clock)
		return rt_fail(&p, RINGTRACE_ECORRUPT, "schema block has no clock line");
	if ((r = rt_index_ids(&p)) < 0 || (r = rt_attach_filters(&p)) < 0)
		return r;
	t->meta.events = t->events;
	t->meta.nevents = t->nevents;
	t->meta.sites = t->sites;
	t->meta.nsites = t->nsites;
	t->meta.triggers = t->triggers;
	t->meta.ntriggers = t->ntriggers;
	t->meta.stats = t->stats;
	t->meta.nstats = t->nstats;
	/* dropped lines: sorted for lookup, one per stream (O(n log n)) */
	if (t->ndrops) {
		qsort(t->drops, t->ndrops, sizeof(*t->drops), rt_cmp_drops);
		for (uint32_t i = 1; i < t->ndrops; i++)
			if (t->drops[i].stream == t->drops[i - 1].stream)
				return rt_fail(&p, RINGTRACE_ECORRUPT,
					       "two dropped lines for stream %llu",
					       (unsigned long long)t->drops[i].stream);
	}
	t->meta.drops = t->drops;
	t->meta.ndrops = t->ndrops;
	if (t->nunwritten) {
		qsort(t->unwritten, t->nunwritten, sizeof(*t->unwritten), rt_cmp_unwritten);
		for (uint32_t i = 1; i < t->nunwritten; i++)
			if (t->unwritten[i].stream == t->unwritten[i - 1].stream)
				return rt_fail(&p, RINGTRACE_ECORRUPT,
					       "two unwritten lines for stream %llu",
					       (unsigned long long)t->unwritten[i].stream);
	}
	t->meta.unwritten = t->unwritten;
	t->meta.nunwritten = t->nunwritten;
	return 0;
}

uint32_t rt_ctf_drops_normalize(struct ringtrace_trace_drops *d, uint32_t n)
{
	if (n == 0)
		return 0;
	qsort(d, n, sizeof(*d), rt_cmp_drops);
	uint32_t k = 0;
	for (uint32_t i = 1; i < n; i++) {
		if (d[i].stream == d[k].stream) {
			if (d[i].dropped > d[k].dropped) {
				d[k].dropped = d[i].dropped;
				d[k].tid = d[i].tid;
			}
		} else {
			d[++k] = d[i];
		}
	}
	return k + 1;
}

uint64_t rt_ctf_stream_dropped(const struct rt_ctf_meta *m, uint64_t stream)
{
	uint32_t lo = 0, hi = m->ndrops;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (m->drops[mid].stream == stream)
			return m->drops[mid].dropped;
		if (m->drops[mid].stream < stream)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

const struct ringtrace_trace_unwritten *rt_ctf_stream_unwritten(const struct rt_ctf_meta *m,
								uint64_t stream)
{
	uint32_t lo = 0, hi = m->nunwritten;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (m->unwritten[mid].stream == stream)
			return &m->unwritten[mid];
		if (m->unwritten[mid].stream < stream)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

void rt_ctf_doc_free(struct rt_ctf_doc *doc)
{
	free(doc->drops);
	free(doc->unwritten);
	free(doc->events);
	free(doc->sites);
	free(doc->triggers);
	free(doc->stats);
	free(doc->filters);
	free(doc->by_id);
	free(doc->site_by_id);
	free(doc->ev_seen);
	free(doc->site_seen);
	rt_arena_free(&doc->arena);
	memset(doc, 0, sizeof(*doc));
}
