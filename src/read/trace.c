/*
 * Reading a trace directory (docs/format.md, section 7): the schema block
 * of `metadata`, the packets of every `stream_<N>`, merged by timestamp.
 *
 * Nothing from the directory is trusted. The schema block is parsed
 * strictly (every line, every number); a packet header is checked with
 * ringtrace_page_check() against the packet size it declares and the size
 * of the file; events are walked with ringtrace_page_next(), whose every
 * step is bounded by the content end (itself bounded by the file). Damage
 * is reported with the file and byte offset and the stream goes on at the
 * next packet when the damaged packet's size is known, else it ends.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "read/trace_internal.h"
#include "ringtrace/printf.h"

static __thread char rt_open_err[1024];

const char *ringtrace_trace_open_error(void)
{
	return rt_open_err;
}

static int rt_open_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int rt_open_fail(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rt_open_err, sizeof(rt_open_err), fmt, ap);
	va_end(ap);
	return -code;
}

static void rt_damage(ringtrace_trace *t, struct rt_tstream *s, uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void rt_damage(ringtrace_trace *t, struct rt_tstream *s, uint64_t off, const char *fmt, ...)
{
	char msg[1024];
	int n = snprintf(msg, sizeof(msg), "%s: byte %" PRIu64 ": ", s->info.path, off);
	va_list ap;
	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof(msg))
		vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	t->errors++;
	s->info.errors++;
	if (t->err)
		t->err(t->err_arg, msg);
}

/* ---- arena --------------------------------------------------------------- */

static void *rt_alloc(ringtrace_trace *t, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	struct rt_arena_chunk *c = t->arena;
	if (!c || c->size - c->used < n) {
		size_t sz = n > 65536 ? n : 65536;
		c = malloc(sizeof(*c) + sz);
		if (!c)
			return NULL;
		c->size = sz;
		c->used = 0;
		c->next = t->arena;
		t->arena = c;
	}
	void *p = (char *)c->data + c->used;
	c->used += n;
	return p;
}

static int rt_grow(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	uint32_t nc = *cap ? *cap * 2 : 16;
	while (nc < need)
		nc *= 2;
	void *p = realloc(*arr, (size_t)nc * elem);
	if (!p)
		return -1;
	*arr = p;
	*cap = nc;
	return 0;
}

/* ---- schema block ------------------------------------------------------- */

struct rt_parse {
	ringtrace_trace *t;
	unsigned line;
	char *tok[10];
	int ntok;
};

#define RT_META_FAIL(P, ...)                                                                       \
	rt_schema_fail((P), __VA_ARGS__)

static int rt_schema_fail(struct rt_parse *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int rt_schema_fail(struct rt_parse *p, const char *fmt, ...)
{
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return rt_open_fail(RINGTRACE_ECORRUPT, "%s/metadata: line %u: %s", p->t->dir, p->line, msg);
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

static int rt_u64(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	if (!*s || (s[0] == '0' && s[1]))
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		unsigned d = (unsigned)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	if (v > max)
		return -1;
	*out = v;
	return 0;
}

static int rt_i64(const char *s, int64_t *out)
{
	uint64_t u;
	if (s[0] == '-') {
		if (rt_u64(s + 1, (uint64_t)INT64_MAX + 1, &u) < 0 || u == 0)
			return -1;
		*out = (int64_t)(0 - u);
		return 0;
	}
	if (rt_u64(s, INT64_MAX, &u) < 0)
		return -1;
	*out = (int64_t)u;
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
static const char *rt_pct_decode(ringtrace_trace *t, const char *s, const char **why)
{
	static const char safe[] = "_.-:,=()[]{}<>!?#+^~@$&;";
	size_t n = strlen(s);
	char *out = rt_alloc(t, n + 1);
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
			     (c >= '0' && c <= '9') || strchr(safe, c))) {
			*why = "character that must be percent-encoded";
			return NULL;
		}
		out[k++] = (char)c;
	}
	out[k] = 0;
	return out;
}

#define RT_STR(P, dst, i, what)                                                                    \
	do {                                                                                       \
		const char *why_ = "";                                                             \
		(dst) = rt_pct_decode((P)->t, (P)->tok[i], &why_);                                 \
		if (!(dst))                                                                        \
			return RT_META_FAIL(P, "%s: %s", what, why_);                              \
	} while (0)
#define RT_NUM(P, dst, i, max, what)                                                               \
	do {                                                                                       \
		uint64_t v_;                                                                       \
		if (rt_u64((P)->tok[i], (max), &v_) < 0)                                           \
			return RT_META_FAIL(P, "%s \"%.40s\" is not a number in 0..%llu", what,    \
					    (P)->tok[i], (unsigned long long)(max));               \
		(dst) = v_;                                                                        \
	} while (0)

static int rt_check_field(struct rt_parse *p, const struct ringtrace_field_desc *f, uint32_t nenum)
{
	unsigned sz = f->size, al = f->align;
	int szok = sz == 1 || sz == 2 || sz == 4 || sz == 8;
	if (f->is_signed > 1)
		return RT_META_FAIL(p, "field \"%s\": is_signed %u is not 0 or 1", f->name, f->is_signed);
	if (al > 8 || (al & (al - 1)))
		return RT_META_FAIL(p, "field \"%s\": alignment %u is invalid", f->name, al);
	switch (f->type) {
	case RINGTRACE_FT_INT:
	case RINGTRACE_FT_ENUM:
	case RINGTRACE_FT_ARRAY:
		if (!szok)
			return RT_META_FAIL(p, "field \"%s\": size %u is invalid", f->name, sz);
		break;
	case RINGTRACE_FT_FLOAT:
	case RINGTRACE_FT_FLOAT_ARRAY:
		if (sz != 4 && sz != 8)
			return RT_META_FAIL(p, "field \"%s\": float size %u is invalid", f->name, sz);
		break;
	case RINGTRACE_FT_BOOL:
		if (sz != 1)
			return RT_META_FAIL(p, "field \"%s\": bool size %u is invalid", f->name, sz);
		break;
	case RINGTRACE_FT_POINTER:
		if (sz != 8)
			return RT_META_FAIL(p, "field \"%s\": pointer size %u is invalid", f->name, sz);
		break;
	case RINGTRACE_FT_STRING:
	case RINGTRACE_FT_BYTES:
		break;
	default:
		return RT_META_FAIL(p, "field \"%s\": unknown type %u", f->name, f->type);
	}
	if ((f->type == RINGTRACE_FT_ARRAY || f->type == RINGTRACE_FT_FLOAT_ARRAY) &&
	    (uint64_t)f->count * sz > RINGTRACE_EV_MAX_PAYLOAD)
		return RT_META_FAIL(p, "field \"%s\": array of %u elements does not fit in an event",
				    f->name, f->count);
	if (nenum && f->type != RINGTRACE_FT_ENUM)
		return RT_META_FAIL(p, "field \"%s\": %u enum values on a non-enum field", f->name, nenum);
	return 0;
}

/* State while the field and enum lines of an event are read. */
struct rt_pending {
	struct ringtrace_trace_event_def *ev;
	struct ringtrace_field_desc *fields;
	uint32_t nfields, fields_done;
	struct ringtrace_enum_desc *enm;      /* of the last field */
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

static int rt_parse_line(struct rt_parse *p, char *line, struct rt_pending *pd, int *have_clock)
{
	ringtrace_trace *t = p->t;
	const char *kw = line;
	char *sp = strchr(line, ' ');
	size_t kwl = sp ? (size_t)(sp - line) : strlen(line);
#define KW(s) (kwl == sizeof(s) - 1 && memcmp(kw, s, kwl) == 0)
	int is_field = KW("field"), is_enum = KW("enum");
	if (!is_enum && pd->enm) {
		/* leaving the enum list of a field */
		if (pd->enum_done < pd->nenum)
			return rt_pending_check(p, pd);
		pd->enm = NULL;
	}
	if (!is_field && !is_enum) {
		int r = rt_pending_check(p, pd);
		if (r < 0)
			return r;
		pd->ev = NULL;
	}
	if (KW("clock")) {
		if (rt_split(p, line, 10) < 0 || p->ntok != 5)
			return RT_META_FAIL(p, "clock: expected \"clock <tsc|monotonic> <freq> <base_ticks> <base_ns>\"");
		if (*have_clock)
			return RT_META_FAIL(p, "second clock line");
		if (strcmp(p->tok[1], "tsc") == 0)
			t->clock.is_tsc = 1;
		else if (strcmp(p->tok[1], "monotonic") == 0)
			t->clock.is_tsc = 0;
		else
			return RT_META_FAIL(p, "clock: source \"%.40s\" is not tsc or monotonic", p->tok[1]);
		RT_NUM(p, t->clock.freq, 2, UINT64_MAX, "clock frequency");
		if (t->clock.freq == 0)
			return RT_META_FAIL(p, "clock frequency is 0");
		RT_NUM(p, t->clock.base_ticks, 3, UINT64_MAX, "clock base_ticks");
		RT_NUM(p, t->clock.base_ns, 4, UINT64_MAX, "clock base_ns");
		*have_clock = 1;
		return 0;
	}
	if (KW("event")) {
		if (rt_split(p, line, 10) < 0 || p->ntok != 6)
			return RT_META_FAIL(p, "event: expected \"event <id> <kind> <name> <nfields> <print_fmt>\"");
		if (rt_grow((void **)&t->events, &t->cap_events, t->nevents + 1, sizeof(*t->events)) < 0)
			return RT_META_FAIL(p, "out of memory");
		struct ringtrace_trace_event_def *ev = &t->events[t->nevents];
		memset(ev, 0, sizeof(*ev));
		uint64_t id, kind, nf;
		RT_NUM(p, id, 1, RINGTRACE_EV_MAX_ID, "event id");
		RT_NUM(p, kind, 2, RINGTRACE_KIND_COUNTER, "event kind");
		RT_STR(p, ev->name, 3, "event name");
		RT_NUM(p, nf, 4, RT_TRACE_MAX_FIELDS, "event field count");
		RT_STR(p, ev->print_fmt, 5, "event print format");
		if (!ev->name[0])
			return RT_META_FAIL(p, "event %llu has an empty name", (unsigned long long)id);
		for (uint32_t i = 0; i < t->nevents; i++)
			if (t->events[i].id == id)
				return RT_META_FAIL(p, "event id %llu defined twice", (unsigned long long)id);
		ev->id = (uint32_t)id;
		ev->kind = (uint32_t)kind;
		ev->nfields = (uint32_t)nf;
		pd->fields = nf ? rt_alloc(t, nf * sizeof(struct ringtrace_field_desc)) : NULL;
		if (nf && !pd->fields)
			return RT_META_FAIL(p, "out of memory");
		ev->fields = pd->fields;
		/* events[] may move: the pending pointer is re-derived by index */
		pd->ev = ev;
		pd->nfields = (uint32_t)nf;
		pd->fields_done = 0;
		t->nevents++;
		return 0;
	}
	if (is_field) {
		if (rt_split(p, line, 10) < 0 || p->ntok != 8)
			return RT_META_FAIL(p, "field: expected \"field <name> <type> <size> <is_signed> <align> <count> <nenum>\"");
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
		RT_NUM(p, nenum, 7, RT_TRACE_MAX_ENUMS, "field enum count");
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
		if (f->type == RINGTRACE_FT_ENUM) {
			pd->enm = rt_alloc(t, sizeof(*pd->enm));
			pd->values = nenum ? rt_alloc(t, nenum * sizeof(*pd->values)) : NULL;
			if (!pd->enm || (nenum && !pd->values))
				return RT_META_FAIL(p, "out of memory");
			pd->enm->name = f->name;
			pd->enm->values = pd->values;
			pd->enm->count = (uint32_t)nenum;
			pd->nenum = (uint32_t)nenum;
			pd->enum_done = 0;
			f->enm = pd->enm;
		}
		return 0;
	}
	if (is_enum) {
		if (rt_split(p, line, 10) < 0 || p->ntok != 3)
			return RT_META_FAIL(p, "enum: expected \"enum <name> <value>\"");
		if (!pd->enm || pd->enum_done >= pd->nenum)
			return RT_META_FAIL(p, "enum line without a field that expects one");
		struct ringtrace_enum_value *v = &pd->values[pd->enum_done];
		RT_STR(p, v->name, 1, "enum name");
		if (rt_i64(p->tok[2], &v->value) < 0)
			return RT_META_FAIL(p, "enum value \"%.40s\" is not a 64-bit integer", p->tok[2]);
		pd->enum_done++;
		return 0;
	}
	if (KW("site")) {
		if (rt_split(p, line, 10) < 0 || p->ntok != 7)
			return RT_META_FAIL(p, "site: expected \"site <id> <nargs> <types> <fmt> <file> <line>\"");
		if (rt_grow((void **)&t->sites, &t->cap_sites, t->nsites + 1, sizeof(*t->sites)) < 0)
			return RT_META_FAIL(p, "out of memory");
		struct ringtrace_trace_site *s = &t->sites[t->nsites];
		memset(s, 0, sizeof(*s));
		uint64_t id, nargs, ln;
		RT_NUM(p, id, 1, RT_TRACE_MAX_SITE_ID, "site id");
		if (id == 0)
			return RT_META_FAIL(p, "site id 0 (ids start at 1)");
		RT_NUM(p, nargs, 2, RINGTRACE_PRINTF_MAX_ARGS, "site argument count");
		const char *ty = p->tok[3];
		if (nargs == 0) {
			if (strcmp(ty, "-") != 0)
				return RT_META_FAIL(p, "site with no arguments: types must be \"-\"");
		} else {
			if (strlen(ty) != nargs)
				return RT_META_FAIL(p, "site: %llu types for %llu arguments",
						    (unsigned long long)strlen(ty), (unsigned long long)nargs);
			for (uint64_t i = 0; i < nargs; i++) {
				if (ty[i] < '0' + RINGTRACE_PF_S64 || ty[i] > '0' + RINGTRACE_PF_POINTER)
					return RT_META_FAIL(p, "site: argument type '%c' is not 1..5", ty[i]);
				s->types[i] = (uint8_t)(ty[i] - '0');
			}
		}
		RT_STR(p, s->fmt, 4, "site format");
		RT_STR(p, s->file, 5, "site file");
		RT_NUM(p, ln, 6, UINT32_MAX, "site line");
		for (uint32_t i = 0; i < t->nsites; i++)
			if (t->sites[i].id == id)
				return RT_META_FAIL(p, "site id %llu defined twice", (unsigned long long)id);
		s->id = (uint32_t)id;
		s->nargs = (uint32_t)nargs;
		s->line = (uint32_t)ln;
		t->nsites++;
		return 0;
	}
	if (KW("filter")) {
		if (rt_split(p, line, 10) < 0 || p->ntok != 4)
			return RT_META_FAIL(p, "filter: expected \"filter <event id> <rejected> <expression|->\"");
		if (rt_grow((void **)&t->filters, &t->cap_filters, t->nfilters + 1,
			    sizeof(*t->filters)) < 0)
			return RT_META_FAIL(p, "out of memory");
		struct rt_filter_line *fl = &t->filters[t->nfilters];
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
	if (KW("trigger")) {
		if (rt_split(p, line, 10) < 0 || p->ntok != 4)
			return RT_META_FAIL(p, "trigger: expected \"trigger <fired> <skipped> <spec>\"");
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
	if (KW("stat")) {
		if (rt_split(p, line, 10) < 0 || p->ntok != 3)
			return RT_META_FAIL(p, "stat: expected \"stat <key> <value>\"");
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
#undef KW
	return RT_META_FAIL(p, "unknown line \"%.40s\"", line);
}

static int rt_parse_schema(ringtrace_trace *t, char *text, size_t len)
{
	static const char start[] = "/* ringtrace-schema ";
	struct rt_parse p = {t, 1, {0}, 0};
	if (memchr(text, 0, len))
		return rt_open_fail(RINGTRACE_ECORRUPT, "%s/metadata: byte %zu: NUL byte in the text",
				    t->dir, (size_t)((char *)memchr(text, 0, len) - text));
	/* The block starts on a line of its own; find the last one. */
	char *blk = NULL;
	for (char *s = text; (s = strstr(s, start)) != NULL; s++)
		if (s == text || s[-1] == '\n')
			blk = s;
	if (!blk)
		return rt_open_fail(RINGTRACE_ECORRUPT,
				    "%s/metadata: no \"/* ringtrace-schema 1\" block (not a ringtrace trace?)",
				    t->dir);
	for (char *s = text; s < blk; s++)
		p.line += *s == '\n';
	char *nl = strchr(blk, '\n');
	if (!nl)
		return RT_META_FAIL(&p, "schema block has no lines");
	*nl = 0;
	if (strcmp(blk + sizeof(start) - 1, "1") != 0)
		return RT_META_FAIL(&p, "schema version \"%.20s\" is not 1", blk + sizeof(start) - 1);
	struct rt_pending pd;
	memset(&pd, 0, sizeof(pd));
	int have_clock = 0, ended = 0;
	char *s = nl + 1;
	while (*s) {
		p.line++;
		char *e = strchr(s, '\n');
		if (!e)
			return RT_META_FAIL(&p, "line not terminated by a newline (file truncated?)");
		*e = 0;
		if (strcmp(s, "end */") == 0) {
			int r;
			if (pd.enm && pd.enum_done < pd.nenum)
				return rt_pending_check(&p, &pd);
			pd.enm = NULL;
			if ((r = rt_pending_check(&p, &pd)) < 0)
				return r;
			ended = 1;
			s = e + 1;
			break;
		}
		for (char *c = s; c < e; c++)
			if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7F)
				return RT_META_FAIL(&p, "control or non-ASCII byte 0x%02x", (unsigned char)*c);
		int r = rt_parse_line(&p, s, &pd, &have_clock);
		if (r < 0)
			return r;
		s = e + 1;
	}
	if (!ended)
		return RT_META_FAIL(&p, "schema block not terminated by \"end */\" (file truncated?)");
	for (; *s; s++) {
		if (*s == '\n')
			p.line++;
		else if (!isspace((unsigned char)*s))
			return RT_META_FAIL(&p, "text after the end of the schema block");
	}
	if (!have_clock)
		return rt_open_fail(RINGTRACE_ECORRUPT, "%s/metadata: schema block has no clock line",
				    t->dir);
	/* id tables */
	uint32_t maxid = 0;
	for (uint32_t i = 0; i < t->nevents; i++)
		if (t->events[i].id > maxid)
			maxid = t->events[i].id;
	t->by_id_len = maxid + 1;
	t->by_id = calloc(t->by_id_len, sizeof(*t->by_id));
	t->plans = calloc(t->nevents ? t->nevents : 1, sizeof(*t->plans));
	if (!t->plans)
		return rt_open_fail(RINGTRACE_ENOMEM, "out of memory");
	uint32_t maxsite = 0;
	for (uint32_t i = 0; i < t->nsites; i++)
		if (t->sites[i].id > maxsite)
			maxsite = t->sites[i].id;
	t->site_by_id_len = maxsite + 1;
	t->site_by_id = calloc(t->site_by_id_len, sizeof(*t->site_by_id));
	if (!t->by_id || !t->site_by_id)
		return rt_open_fail(RINGTRACE_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < t->nevents; i++)
		t->by_id[t->events[i].id] = &t->events[i];
	for (uint32_t i = 0; i < t->nsites; i++)
		t->site_by_id[t->sites[i].id] = &t->sites[i];
	/* Before the printf fallback below: a filter line must name an event
	 * of the schema block itself, once. */
	if (t->nfilters) {
		unsigned char *seen = calloc(t->by_id_len, 1);
		if (!seen)
			return rt_open_fail(RINGTRACE_ENOMEM, "out of memory");
		for (uint32_t i = 0; i < t->nfilters; i++) {
			const struct rt_filter_line *fl = &t->filters[i];
			struct ringtrace_trace_event_def *ev =
				fl->id < t->by_id_len ? t->by_id[fl->id] : NULL;
			p.line = fl->line;
			if (!ev || seen[fl->id]) {
				free(seen);
				if (!ev)
					return RT_META_FAIL(&p, "filter: event id %u is not defined by an event line",
							    fl->id);
				return RT_META_FAIL(&p, "filter: second filter line for event %u (%s)",
						    fl->id, ev->name);
			}
			seen[fl->id] = 1;
			ev->filter = fl->expr;
			ev->rejected = fl->rejected;
		}
		free(seen);
	}
	if (!t->by_id[RINGTRACE_EVENT_ID_PRINTF]) {
		t->printf_def.id = RINGTRACE_EVENT_ID_PRINTF;
		t->printf_def.name = "ringtrace_printf";
		t->printf_def.print_fmt = "";
		t->by_id[RINGTRACE_EVENT_ID_PRINTF] = &t->printf_def;
	}
	return 0;
}

static int rt_read_metadata(ringtrace_trace *t)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/metadata", t->dir);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rt_open_fail(RINGTRACE_ESYS, "%s: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > RT_TRACE_MAX_METADATA) {
		close(fd);
		return rt_open_fail(RINGTRACE_ECORRUPT, "%s: not a regular file of at most %u bytes",
				    path, RT_TRACE_MAX_METADATA);
	}
	size_t len = (size_t)st.st_size;
	char *text = malloc(len + 1);
	if (!text) {
		close(fd);
		return rt_open_fail(RINGTRACE_ENOMEM, "%s: out of memory", path);
	}
	size_t got = 0;
	while (got < len) {
		ssize_t r = read(fd, text + got, len - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	text[got] = 0;
	int r = rt_parse_schema(t, text, got);
	free(text);
	return r;
}

/* ---- streams ------------------------------------------------------------- */

static int rt_cmp_stream(const void *a, const void *b)
{
	uint64_t x = ((const struct rt_tstream *)a)->info.id, y = ((const struct rt_tstream *)b)->info.id;
	return x < y ? -1 : x > y;
}

static int rt_open_streams(ringtrace_trace *t)
{
	DIR *d = opendir(t->dir);
	if (!d)
		return rt_open_fail(RINGTRACE_ESYS, "%s: %s", t->dir, strerror(errno));
	uint32_t cap = 0;
	int ret = 0;
	struct dirent *de;
	char extra[512] = "";
	while ((de = readdir(d)) != NULL) {
		const char *n = de->d_name;
		uint64_t id;
		if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0 || strcmp(n, "metadata") == 0)
			continue;
		if (strncmp(n, "stream_", 7) != 0 || rt_u64(n + 7, UINT64_MAX, &id) < 0) {
			if (!extra[0])
				snprintf(extra, sizeof(extra), "%s/%s: not a file of a trace (only metadata and stream_<N>)",
					 t->dir, n);
			continue;
		}
		if (t->nstreams >= RT_TRACE_MAX_STREAMS) {
			ret = rt_open_fail(RINGTRACE_EINVAL, "%s: more than %u streams", t->dir,
					   RT_TRACE_MAX_STREAMS);
			break;
		}
		if (rt_grow((void **)&t->streams, &cap, t->nstreams + 1, sizeof(*t->streams)) < 0) {
			ret = rt_open_fail(RINGTRACE_ENOMEM, "out of memory");
			break;
		}
		struct rt_tstream *s = &t->streams[t->nstreams];
		memset(s, 0, sizeof(*s));
		size_t pl = strlen(t->dir) + strlen(n) + 2;
		char *path = rt_alloc(t, pl);
		if (!path) {
			ret = rt_open_fail(RINGTRACE_ENOMEM, "out of memory");
			break;
		}
		snprintf(path, pl, "%s/%s", t->dir, n);
		s->info.id = id;
		s->info.path = path;
		t->nstreams++;
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			ret = rt_open_fail(RINGTRACE_ESYS, "%s: %s", path,
					   fd < 0 ? strerror(errno) : "not a regular file");
			if (fd >= 0)
				close(fd);
			break;
		}
		s->size = (size_t)st.st_size;
		s->info.bytes = s->size;
		if (s->size) {
			void *m = mmap(NULL, s->size, PROT_READ, MAP_PRIVATE, fd, 0);
			if (m == MAP_FAILED) {
				ret = rt_open_fail(RINGTRACE_ESYS, "%s: mmap: %s", path, strerror(errno));
				close(fd);
				break;
			}
			madvise(m, s->size, MADV_SEQUENTIAL);
			s->map = m;
		}
		close(fd);
	}
	closedir(d);
	if (ret < 0)
		return ret;
	if (t->nstreams)
		qsort(t->streams, t->nstreams, sizeof(*t->streams), rt_cmp_stream);
	t->heap = calloc(t->nstreams ? t->nstreams : 1, sizeof(*t->heap));
	if (!t->heap)
		return rt_open_fail(RINGTRACE_ENOMEM, "out of memory");
	if (extra[0]) {
		t->errors++;
		if (t->err)
			t->err(t->err_arg, extra);
	}
	return 0;
}

/*
 * Produce the stream's next record into s->item: 1, or 0 when the stream
 * has nothing more. Damage is reported and skipped.
 */
static int rt_stream_advance(ringtrace_trace *t, struct rt_tstream *s)
{
	for (;;) {
		if (s->in_page) {
			struct ringtrace_event ev;
			uint32_t at = (s->cur.off + 7u) & ~7u;
			int r = ringtrace_page_next(&s->cur, &ev);
			if (r == 1) {
				struct ringtrace_trace_event_def *def =
					ev.id < t->by_id_len ? t->by_id[ev.id] : NULL;
				if (!def) {
					rt_damage(t, s, s->pkt_off + ev.offset,
						  "event id %u is not defined in the metadata (event skipped)",
						  ev.id);
					continue;
				}
				struct ringtrace_trace_record *it = &s->item;
				it->kind = RINGTRACE_TRACE_EVENT;
				it->id = ev.id;
				it->ts = ev.ts;
				it->data = ev.data;
				it->len = ev.len;
				it->lost = 0;
				it->file_offset = s->pkt_off + ev.offset;
				it->def = def;
				if (!s->info.events)
					s->info.first_ts = ev.ts;
				s->info.last_ts = ev.ts;
				s->info.events++;
				return 1;
			}
			s->in_page = 0;
			if (r < 0) {
				if (s->truncated)
					rt_damage(t, s, s->pkt_off + at,
						  "event cut off by the end of the file at byte %zu (packet at byte %" PRIu64 " declares %" PRIu64 " bytes)",
						  s->size, s->pkt_off, s->page->packet_size / 8);
				else
					rt_damage(t, s, s->pkt_off + at, "%s", ringtrace_last_error());
				if (s->truncated)
					s->dead = 1;
				continue;
			}
			if (s->truncated) {
				rt_damage(t, s, s->size,
					  "file ends inside the packet at byte %" PRIu64 " (%" PRIu64 " bytes declared)",
					  s->pkt_off, s->page->packet_size / 8);
				s->dead = 1;
			} else if (s->cur.index != s->page->events) {
				rt_damage(t, s, s->pkt_off + 72,
					  "packet header declares %u events, %u found", s->page->events,
					  s->cur.index);
			}
			continue;
		}
		if (s->dead)
			return 0;
		if (s->size == 0) {
			rt_damage(t, s, 0, "stream file is empty");
			s->dead = 1;
			return 0;
		}
		if (s->next_pkt >= s->size)
			return 0;
		uint64_t off = s->next_pkt;
		uint64_t avail = s->size - off;
		s->pkt_off = off;
		s->info.pages++;
		if (avail < RINGTRACE_PAGE_HEADER_SIZE) {
			rt_damage(t, s, s->size,
				  "file ends inside the packet header at byte %" PRIu64 " (%" PRIu64 " of %u bytes)",
				  off, avail, RINGTRACE_PAGE_HEADER_SIZE);
			s->dead = 1;
			return 0;
		}
		const struct ringtrace_page_header *h = (const void *)(s->map + off);
		if (ringtrace_page_check(h, 0) < 0) {
			rt_damage(t, s, off, "packet header: %s", ringtrace_last_error());
			s->dead = 1;
			return 0;
		}
		uint64_t psz = h->packet_size / 8;
		s->next_pkt = off + psz;
		s->page = h;
		if (h->stream_instance_id != s->info.id || h->stream_id != 0) {
			rt_damage(t, s, off + 4,
				  "packet header names stream %" PRIu64 " (class %u), not %" PRIu64 " (packet skipped)",
				  h->stream_instance_id, h->stream_id, s->info.id);
			continue;
		}
		s->truncated = psz > avail;
		ringtrace_page_cursor_init(&s->cur, h);
		if (s->truncated && s->cur.end > avail)
			s->cur.end = (uint32_t)avail;
		s->in_page = 1;
		s->info.tid = h->tid;
		s->cpu = h->cpu;
		memcpy(s->comm, h->comm, 16);
		s->comm[16] = 0;
		for (int i = 0; i < 16; i++)
			if (s->comm[i] && ((unsigned char)s->comm[i] < 0x20 || (unsigned char)s->comm[i] == 0x7F))
				s->comm[i] = '?';
		memcpy(s->info.comm, s->comm, sizeof(s->comm));
		/* losses since the previous packet of this stream */
		uint64_t dropped = 0, overrun = 0;
		if (!s->have_prev) {
			dropped = h->events_discarded;
			overrun = h->events_before;
		} else {
			const struct ringtrace_page_header *a = &s->prev;
			if (h->packet_seq_num <= a->packet_seq_num ||
			    h->events_discarded < a->events_discarded ||
			    h->events_before < a->events_before ||
			    h->events_before - a->events_before < a->events) {
				rt_damage(t, s, off + 48,
					  "packet sequence or event counters go backwards from the previous packet");
			} else {
				dropped = h->events_discarded - a->events_discarded;
				overrun = h->events_before - a->events_before - a->events;
			}
		}
		memcpy(&s->prev, h, sizeof(s->prev));
		s->have_prev = 1;
		if (dropped + overrun) {
			s->info.dropped += dropped;
			s->info.overrun += overrun;
			struct ringtrace_trace_record *it = &s->item;
			it->kind = RINGTRACE_TRACE_LOST;
			it->id = 0;
			it->ts = h->timestamp_begin;
			it->data = NULL;
			it->len = 0;
			it->lost = dropped + overrun < dropped ? UINT64_MAX : dropped + overrun;
			it->file_offset = off;
			it->def = NULL;
			return 1;
		}
	}
}

static inline int rt_less(const ringtrace_trace *t, uint32_t a, uint32_t b)
{
	const struct rt_tstream *x = &t->streams[a], *y = &t->streams[b];
	if (x->item.ts != y->item.ts)
		return x->item.ts < y->item.ts;
	return a < b; /* streams are sorted by id */
}

static void rt_heap_down(ringtrace_trace *t, uint32_t i)
{
	uint32_t n = t->nheap;
	for (;;) {
		uint32_t l = 2 * i + 1, m = i;
		if (l < n && rt_less(t, t->heap[l], t->heap[m]))
			m = l;
		if (l + 1 < n && rt_less(t, t->heap[l + 1], t->heap[m]))
			m = l + 1;
		if (m == i)
			return;
		uint32_t x = t->heap[i];
		t->heap[i] = t->heap[m];
		t->heap[m] = x;
		i = m;
	}
}

static void rt_heap_up(ringtrace_trace *t, uint32_t i)
{
	while (i) {
		uint32_t p = (i - 1) / 2;
		if (!rt_less(t, t->heap[i], t->heap[p]))
			return;
		uint32_t x = t->heap[i];
		t->heap[i] = t->heap[p];
		t->heap[p] = x;
		i = p;
	}
}

uint64_t ringtrace_trace_ticks_to_ns(const ringtrace_trace *t, uint64_t ticks)
{
	const struct ringtrace_trace_clock *c = &t->clock;
	__int128 d = (__int128)ticks - (__int128)c->base_ticks;
	__int128 ns = (__int128)c->base_ns + d * 1000000000 / (__int128)c->freq;
	if (ns < 0)
		return 0;
	if (ns > (__int128)UINT64_MAX)
		return UINT64_MAX;
	return (uint64_t)ns;
}

int ringtrace_trace_next(ringtrace_trace *t, struct ringtrace_trace_record *rec)
{
	if (!t->started) {
		t->started = 1;
		for (uint32_t i = 0; i < t->nstreams; i++)
			if (rt_stream_advance(t, &t->streams[i])) {
				t->heap[t->nheap++] = i;
				rt_heap_up(t, t->nheap - 1);
			}
	} else if (t->pending >= 0) {
		uint32_t i = (uint32_t)t->pending;
		t->pending = -1;
		/* the returned stream is at the top of the heap */
		if (!rt_stream_advance(t, &t->streams[i]))
			t->heap[0] = t->heap[--t->nheap];
		if (t->nheap > 1)
			rt_heap_down(t, 0);
	}
	if (t->nheap == 0)
		return 0;
	uint32_t i = t->heap[0];
	struct rt_tstream *s = &t->streams[i];
	*rec = s->item;
	rec->ns = ringtrace_trace_ticks_to_ns(t, rec->ts);
	rec->tid = s->info.tid;
	rec->cpu = s->cpu;
	rec->stream_index = i;
	rec->stream = s->info.id;
	rec->comm = s->comm;
	t->pending = (int)i;
	return 1;
}

/* ---- formatting ---------------------------------------------------------- */

static void rt_plan_compile(ringtrace_trace *t, const struct ringtrace_trace_event_def *d,
			    struct rt_plan *pl)
{
	pl->state = 2;
	/* values that print: all but a leading _truncated */
	uint16_t first = d->nfields && strcmp(d->fields[0].name, "_truncated") == 0;
	uint32_t nvis = d->nfields - first, arg = 0, n = 0;
	const char *f = d->print_fmt;
	size_t fl = strlen(f);
	struct rt_seg *seg = rt_alloc(t, (fl + 1) * sizeof(*seg));
	if (!seg)
		return;
	for (const char *q = f; *q;) {
		if (*q != '%' || q[1] == '%') {
			const char *e = q;
			if (*q == '%')
				e = q + 1; /* "%%": one '%' */
			else
				while (*e && *e != '%')
					e++;
			seg[n].lit = q;
			seg[n].litlen = (uint32_t)(e - q);
			seg[n++].conv = 0;
			q = *q == '%' ? q + 2 : e;
			continue;
		}
		q++;
		char lm[3] = {0, 0, 0};
		int k = 0;
		while (*q && strchr("hlLqjzt", *q) && k < 2)
			lm[k++] = *q++;
		char c = *q++;
		if (!c || !strchr("diuxXs", c) || arg >= nvis)
			return;
		const struct ringtrace_field_desc *fd = &d->fields[first + arg];
		if (c == 's' ? fd->type != RINGTRACE_FT_STRING
			     : fd->type != RINGTRACE_FT_INT && fd->type != RINGTRACE_FT_BOOL)
			return;
		int hh = lm[0] == 'h' && lm[1] == 'h';
		int h = lm[0] == 'h' && !hh;
		seg[n].conv = c == 'i' ? 'd' : c;
		seg[n].mod = hh ? 1 : h ? 2 : lm[0] ? 3 : 0;
		seg[n].value = (uint16_t)(first + arg);
		seg[n].lit = NULL;
		seg[n++].litlen = 0;
		arg++;
	}
	pl->seg = seg;
	pl->nseg = n;
	pl->state = 1;
}

struct rt_w {
	char *p, *end; /* end: last byte usable for text (the NUL goes there at most) */
	size_t total;
};

static inline void rt_w_put(struct rt_w *w, const char *s, size_t n)
{
	w->total += n;
	size_t room = (size_t)(w->end - w->p);
	if (n > room)
		n = room;
	memcpy(w->p, s, n);
	w->p += n;
}

static int rt_plan_format(const struct rt_plan *pl, const struct ringtrace_value *vals, char *buf,
			  size_t size)
{
	char dummy;
	struct rt_w w = {size ? buf : &dummy, size ? buf + size - 1 : &dummy, 0};
	for (uint32_t i = 0; i < pl->nseg; i++) {
		const struct rt_seg *sg = &pl->seg[i];
		if (!sg->conv) {
			rt_w_put(&w, sg->lit, sg->litlen);
			continue;
		}
		const struct ringtrace_value *v = &vals[sg->value];
		if (sg->conv == 's') {
			rt_w_put(&w, v->ptr, v->len);
			continue;
		}
		char tmp[24], *e = tmp + sizeof(tmp), *p = e;
		uint64_t u = v->v.u;
		if (sg->conv == 'd') {
			int64_t x = (int64_t)u;
			if (sg->mod == 1) x = (signed char)x;
			else if (sg->mod == 2) x = (short)x;
			else if (sg->mod == 0) x = (int)x;
			u = x < 0 ? 0 - (uint64_t)x : (uint64_t)x;
			do { *--p = (char)('0' + u % 10); u /= 10; } while (u);
			if (x < 0)
				*--p = '-';
		} else {
			if (sg->mod == 1) u = (unsigned char)u;
			else if (sg->mod == 2) u = (unsigned short)u;
			else if (sg->mod == 0) u = (unsigned int)u;
			if (sg->conv == 'u') {
				do { *--p = (char)('0' + u % 10); u /= 10; } while (u);
			} else {
				const char *dig = sg->conv == 'x' ? "0123456789abcdef" : "0123456789ABCDEF";
				do { *--p = dig[u & 15]; u >>= 4; } while (u);
			}
		}
		rt_w_put(&w, p, (size_t)(e - p));
	}
	if (size)
		*w.p = 0;
	return w.total > 0x7FFFFFFF ? 0x7FFFFFFF : (int)w.total;
}

int ringtrace_trace_format(ringtrace_trace *t, const struct ringtrace_trace_record *rec, char *buf,
			   size_t size)
{
	struct rt_tstream *s = rec->stream_index < t->nstreams ? &t->streams[rec->stream_index] : NULL;
	int r;
	if (size)
		buf[0] = 0;
	if (!s || rec->kind != RINGTRACE_TRACE_EVENT || !rec->def)
		return -RINGTRACE_EINVAL;
	if (rec->id == RINGTRACE_EVENT_ID_PRINTF) {
		uint32_t site = 0;
		if (rec->len >= 4)
			memcpy(&site, rec->data, 4);
		const struct ringtrace_trace_site *ps =
			site < t->site_by_id_len ? t->site_by_id[site] : NULL;
		if (!ps) {
			rt_damage(t, s, rec->file_offset, "printf record names call site %u, not in the metadata",
				  site);
			return -RINGTRACE_ECORRUPT;
		}
		r = ringtrace_printf_format(ps->fmt, ps->types, ps->nargs, rec->data, rec->len, buf, size);
	} else {
		struct rt_plan *pl = NULL;
		if (rec->def >= t->events && rec->def < t->events + t->nevents && t->plans) {
			pl = &t->plans[rec->def - t->events];
			if (pl->state == 0)
				rt_plan_compile(t, rec->def, pl);
		}
		if (pl && pl->state == 1) {
			struct ringtrace_value vals[RT_TRACE_MAX_FIELDS];
			r = ringtrace_record_decode(rec->def->fields, rec->def->nfields, rec->data,
						    rec->len, vals);
			if (r >= 0)
				r = rt_plan_format(pl, vals, buf, size);
		} else {
			r = ringtrace_record_format(rec->def->print_fmt, rec->def->fields,
						    rec->def->nfields, rec->data, rec->len, buf, size);
		}
	}
	if (r < 0)
		rt_damage(t, s, rec->file_offset, "event %s: %s", rec->def->name, ringtrace_last_error());
	return r;
}

const char *ringtrace_trace_event_name(const struct ringtrace_trace_record *rec)
{
	if (rec->id == RINGTRACE_EVENT_ID_PRINTF)
		return "ringtrace_printf";
	return rec->def ? rec->def->name : "?";
}

/* ---- open/close and accessors -------------------------------------------- */

int ringtrace_trace_open(const char *dir, ringtrace_trace_error_fn err, void *arg,
			 ringtrace_trace **out)
{
	rt_open_err[0] = 0;
	if (!dir || !out)
		return rt_open_fail(RINGTRACE_EINVAL, "trace_open: NULL argument");
	*out = NULL;
	ringtrace_trace *t = calloc(1, sizeof(*t));
	if (!t || !(t->dir = strdup(dir))) {
		free(t);
		return rt_open_fail(RINGTRACE_ENOMEM, "out of memory");
	}
	size_t dl = strlen(t->dir);
	while (dl > 1 && t->dir[dl - 1] == '/')
		t->dir[--dl] = 0;
	t->err = err;
	t->err_arg = arg;
	t->pending = -1;
	int r = rt_read_metadata(t);
	if (r == 0)
		r = rt_open_streams(t);
	if (r < 0) {
		char save[sizeof(rt_open_err)];
		memcpy(save, rt_open_err, sizeof(save));
		ringtrace_trace_close(t);
		memcpy(rt_open_err, save, sizeof(save));
		return r;
	}
	*out = t;
	return 0;
}

void ringtrace_trace_close(ringtrace_trace *t)
{
	if (!t)
		return;
	for (uint32_t i = 0; i < t->nstreams; i++)
		if (t->streams[i].map)
			munmap((void *)t->streams[i].map, t->streams[i].size);
	free(t->streams);
	free(t->heap);
	free(t->events);
	free(t->sites);
	free(t->stats);
	free(t->filters);
	free(t->triggers);
	free(t->by_id);
	free(t->plans);
	free(t->site_by_id);
	while (t->arena) {
		struct rt_arena_chunk *c = t->arena;
		t->arena = c->next;
		free(c);
	}
	free(t->dir);
	free(t);
}

uint64_t ringtrace_trace_errors(const ringtrace_trace *t)
{
	return t->errors;
}

const struct ringtrace_trace_clock *ringtrace_trace_clock(const ringtrace_trace *t)
{
	return &t->clock;
}

uint32_t ringtrace_trace_event_count(const ringtrace_trace *t)
{
	return t->nevents;
}

const struct ringtrace_trace_event_def *ringtrace_trace_event(const ringtrace_trace *t, uint32_t i)
{
	return i < t->nevents ? &t->events[i] : NULL;
}

const struct ringtrace_trace_event_def *ringtrace_trace_event_by_id(const ringtrace_trace *t,
								      uint32_t id)
{
	return id < t->by_id_len ? t->by_id[id] : NULL;
}

uint32_t ringtrace_trace_site_count(const ringtrace_trace *t)
{
	return t->nsites;
}

const struct ringtrace_trace_site *ringtrace_trace_site(const ringtrace_trace *t, uint32_t i)
{
	return i < t->nsites ? &t->sites[i] : NULL;
}

uint32_t ringtrace_trace_trigger_count(const ringtrace_trace *t)
{
	return t->ntriggers;
}

const struct ringtrace_trace_trigger *ringtrace_trace_trigger(const ringtrace_trace *t, uint32_t i)
{
	return i < t->ntriggers ? &t->triggers[i] : NULL;
}

uint32_t ringtrace_trace_stat_count(const ringtrace_trace *t)
{
	return t->nstats;
}

const struct ringtrace_trace_stat *ringtrace_trace_stat(const ringtrace_trace *t, uint32_t i)
{
	return i < t->nstats ? &t->stats[i] : NULL;
}

uint32_t ringtrace_trace_stream_count(const ringtrace_trace *t)
{
	return t->nstreams;
}

const struct ringtrace_trace_stream_info *ringtrace_trace_stream(const ringtrace_trace *t,
								   uint32_t i)
{
	return i < t->nstreams ? &t->streams[i].info : NULL;
}
