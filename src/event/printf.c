/*
 * Binary printf: recording (the format is never looked at) and formatting
 * at read time (the format is parsed then, one conversion at a time).
 */
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <limits.h>

#include "common/internal.h"
#include "event/format_internal.h"
#include "ringtrace/event.h"

/* The pseudo-event that enables ringtrace_printf, with the fixed id 0. */
static const struct ringtrace_field_desc rt_printf_fields[] = {
	{"site", RINGTRACE_FT_INT, 4, 0, 4, 0, NULL},
	{"args", RINGTRACE_FT_BYTES, 1, 0, 4, 65535, NULL},
};
struct ringtrace_event_desc ringtrace_event_ringtrace_printf = {
	0, 0, 0, RINGTRACE_KIND_INSTANT, "ringtrace_printf", "site=%u args=%s", __FILE__,
	rt_printf_fields, 2, 0, NULL, NULL, NULL, 0};

__attribute__((constructor(102))) static void rt_printf_init(void)
{
	ringtrace_event_register(&ringtrace_event_ringtrace_printf);
}

/*
 * Call sites, registered lock-free on their first enabled call (which may
 * be in a signal handler): a fetch-and-add gives an id, a compare-and-swap
 * on the site's id field decides between two threads racing on the same
 * site (the loser's slot keeps a harmless duplicate pointer).
 */
#define RT_MAX_SITES 16384u
static struct ringtrace_printf_site *rt_sites[RT_MAX_SITES + 1];
static uint32_t rt_nsites;

/*
 * The registry keeps its own copy of each site (format, file, types): a
 * site's static data lives in the code that called it, which dlclose() may
 * unmap while the trace still holds its records. Copies come from an arena
 * mapped once and carved with a fetch-and-add, which is async-signal-safe
 * where malloc is not.
 */
#define RT_ARENA_SIZE (8u << 20)
static char *rt_arena;
static size_t rt_arena_used;

static void *rt_arena_alloc(size_t n)
{
	char *a = __atomic_load_n(&rt_arena, __ATOMIC_ACQUIRE);
	if (!a) {
		char *m = mmap(NULL, RT_ARENA_SIZE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (m == MAP_FAILED)
			return NULL;
		char *exp = NULL;
		if (!__atomic_compare_exchange_n(&rt_arena, &exp, m, 0, __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE)) {
			munmap(m, RT_ARENA_SIZE);
			m = exp;
		}
		a = m;
	}
	n = (n + 7) & ~(size_t)7;
	size_t off = __atomic_fetch_add(&rt_arena_used, n, __ATOMIC_RELAXED);
	if (off + n > RT_ARENA_SIZE)
		return NULL;
	return a + off;
}

static struct ringtrace_printf_site *rt_site_copy(const struct ringtrace_printf_site *site)
{
	size_t lf = strlen(site->fmt) + 1, lfile = strlen(site->file ? site->file : "") + 1;
	struct ringtrace_printf_site *c = rt_arena_alloc(sizeof(*c) + lf + lfile + site->nargs);
	if (!c)
		return NULL;
	char *strs = (char *)(c + 1);
	memcpy(strs, site->fmt, lf);
	memcpy(strs + lf, site->file ? site->file : "", lfile);
	memcpy(strs + lf + lfile, site->types, site->nargs);
	/* field by field: site->id is being set by other threads (CAS) */
	memset(c, 0, sizeof(*c));
	c->line = site->line;
	c->nargs = site->nargs;
	c->fmt = strs;
	c->file = strs + lf;
	c->types = (const uint8_t *)(strs + lf + lfile);
	return c;
}

static uint32_t rt_site_register(struct ringtrace_printf_site *site)
{
	if (site->nargs > RINGTRACE_PRINTF_MAX_ARGS ||
	    __atomic_load_n(&rt_nsites, __ATOMIC_RELAXED) >= RT_MAX_SITES)
		return 0;
	struct ringtrace_printf_site *copy = rt_site_copy(site);
	if (!copy)
		return 0;
	uint32_t id = __atomic_add_fetch(&rt_nsites, 1, __ATOMIC_RELAXED);
	if (id > RT_MAX_SITES)
		return 0;
	copy->id = id;
	__atomic_store_n(&rt_sites[id], copy, __ATOMIC_RELEASE);
	uint32_t exp = 0;
	if (!__atomic_compare_exchange_n(&site->id, &exp, id, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return exp;
	return id;
}

const struct ringtrace_printf_site *ringtrace_printf_site_by_id(uint32_t id)
{
	if (id == 0 || id > RT_MAX_SITES)
		return NULL;
	return __atomic_load_n(&rt_sites[id], __ATOMIC_ACQUIRE);
}

uint32_t ringtrace_printf_site_count(void)
{
	uint32_t n = __atomic_load_n(&rt_nsites, __ATOMIC_RELAXED);
	return n > RT_MAX_SITES ? RT_MAX_SITES : n;
}

void ringtrace_printf_record_(struct ringtrace_printf_site *site, const uint64_t *vals)
{
	uint32_t id = __atomic_load_n(&site->id, __ATOMIC_ACQUIRE);
	if (rt_unlikely(id == 0) && (id = rt_site_register(site)) == 0)
		return;
	unsigned rd = ringtrace_read_lock();
	ringtrace_rb *rb = ringtrace_events_buffer_();
	if (!rb || !(__atomic_load_n(&ringtrace_event_ringtrace_printf.state, __ATOMIC_RELAXED) &
		     RINGTRACE_EV_RECORD)) {
		ringtrace_read_unlock(rd);
		return;
	}
	uint32_t n = site->nargs;
	size_t slen[RINGTRACE_PRINTF_MAX_ARGS];
	size_t sz = 8;
	for (uint32_t i = 0; i < n; i++) {
		if (site->types[i] == RINGTRACE_PF_STRING) {
			const char *str = (const char *)(uintptr_t)vals[i];
			slen[i] = str ? ringtrace_strnlen_(str, RINGTRACE_STRING_MAX - 1) : 6;
			sz = RT_ALIGN8(sz + 4 + slen[i]);
		} else {
			sz = RT_ALIGN8(sz) + 8;
		}
	}
	char *p = ringtrace_rb_reserve(rb, RINGTRACE_EVENT_ID_PRINTF, sz);
	if (p) {
		uint32_t nbytes = (uint32_t)(sz - 8);
		memcpy(p, &id, 4);
		memcpy(p + 4, &nbytes, 4);
		size_t o = 8;
		for (uint32_t i = 0; i < n; i++) {
			if (site->types[i] == RINGTRACE_PF_STRING) {
				const char *str = (const char *)(uintptr_t)vals[i];
				uint32_t l = (uint32_t)slen[i];
				memcpy(p + o, &l, 4);
				memcpy(p + o + 4, str ? str : "(null)", l);
				o = RT_ALIGN8(o + 4 + l);
			} else {
				o = RT_ALIGN8(o);
				memcpy(p + o, &vals[i], 8);
				o += 8;
			}
		}
		ringtrace_rb_commit(rb);
	}
	ringtrace_read_unlock(rd);
}

/* ---- formatting at read time --------------------------------------------- */

struct rt_out {
	char *buf;
	size_t size, len;
};

static void rt_out_add(struct rt_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rt_out_add(struct rt_out *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	size_t room = o->len < o->size ? o->size - o->len : 0;
	int n = vsnprintf(room ? o->buf + o->len : NULL, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len += (size_t)n;
}

int rt_format_args(const char *fmt, const struct rt_arg *args, uint32_t nargs, char *buf,
		   size_t size)
{
	struct rt_out o = {buf, size, 0};
	uint32_t ai = 0;
	if (size)
		buf[0] = 0;
	for (const char *f = fmt; *f;) {
		if (*f != '%') {
			const char *e = strchr(f, '%');
			size_t l = e ? (size_t)(e - f) : strlen(f);
			rt_out_add(&o, "%.*s", (int)l, f);
			f += l;
			continue;
		}
		if (f[1] == '%') {
			rt_out_add(&o, "%%");
			f += 2;
			continue;
		}
		/* %[flags][width][.precision][length]conv */
		char spec[48];
		size_t k = 0;
		const char *q = f + 1;
		spec[k++] = '%';
		int star_w = 0, star_p = 0;
		while (*q && strchr("-+ #0'", *q) && k < 20)
			spec[k++] = *q++;
		if (*q == '*') {
			star_w = 1;
			spec[k++] = *q++;
		}
		while (*q >= '0' && *q <= '9' && k < 30)
			spec[k++] = *q++;
		if (*q == '.') {
			spec[k++] = *q++;
			if (*q == '*') {
				star_p = 1;
				spec[k++] = *q++;
			}
			while (*q >= '0' && *q <= '9' && k < 40)
				spec[k++] = *q++;
		}
		/* length modifier: decides how the recorded 64 bits are narrowed */
		char lenmod[3] = {0, 0, 0};
		int lm = 0;
		while (*q && strchr("hlLqjzt", *q) && lm < 2)
			lenmod[lm++] = *q++;
		char conv = *q;
		if (!conv)
			break;
		q++;
		int stars[2] = {0, 0};
		int nstars = 0;
		for (int st = 0; st < star_w + star_p; st++) {
			int64_t w = ai < nargs ? (int64_t)args[ai].v : 0;
			/* a width read from a record is data, not trusted */
			stars[nstars++] = w > 4096 ? 4096 : w < -4096 ? -4096 : (int)w;
			ai++;
		}
		if (ai >= nargs) {
			rt_out_add(&o, "<missing>");
			f = q;
			continue;
		}
		const struct rt_arg *a = &args[ai++];
		int hh = lenmod[0] == 'h' && lenmod[1] == 'h';
		int h = lenmod[0] == 'h' && !hh;
		int wide = lenmod[0] && !h && !hh; /* l, ll, j, z, t, q, L */
		switch (conv) {
		case 'd': case 'i': {
			long long v = (long long)a->v;
			if (hh) v = (signed char)v;
			else if (h) v = (short)v;
			else if (!wide) v = (int)v;
			spec[k++] = 'l'; spec[k++] = 'l'; spec[k++] = conv; spec[k] = 0;
			if (nstars == 2) rt_out_add(&o, spec, stars[0], stars[1], v);
			else if (nstars == 1) rt_out_add(&o, spec, stars[0], v);
			else rt_out_add(&o, spec, v);
			break;
		}
		case 'u': case 'x': case 'X': case 'o': {
			unsigned long long v = a->v;
			if (hh) v = (unsigned char)v;
			else if (h) v = (unsigned short)v;
			else if (!wide) v = (unsigned int)v;
			spec[k++] = 'l'; spec[k++] = 'l'; spec[k++] = conv; spec[k] = 0;
			if (nstars == 2) rt_out_add(&o, spec, stars[0], stars[1], v);
			else if (nstars == 1) rt_out_add(&o, spec, stars[0], v);
			else rt_out_add(&o, spec, v);
			break;
		}
		case 'c':
			spec[k++] = 'c'; spec[k] = 0;
			if (nstars == 2) rt_out_add(&o, spec, stars[0], stars[1], (int)a->v);
			else if (nstars == 1) rt_out_add(&o, spec, stars[0], (int)a->v);
			else rt_out_add(&o, spec, (int)a->v);
			break;
		case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': case 'a': case 'A': {
			double d;
			if (a->type == RINGTRACE_PF_DOUBLE)
				memcpy(&d, &a->v, 8);
			else
				d = (double)(int64_t)a->v;
			spec[k++] = conv; spec[k] = 0;
			if (nstars == 2) rt_out_add(&o, spec, stars[0], stars[1], d);
			else if (nstars == 1) rt_out_add(&o, spec, stars[0], d);
			else rt_out_add(&o, spec, d);
			break;
		}
		case 's':
			spec[k] = 0;
			if (a->type == RINGTRACE_PF_STRING) {
				/*
				 * The recorded string has no NUL: it is printed with a
				 * precision, the user's if smaller. Flags and width stay.
				 */
				char *dot = strchr(spec, '.');
				int prec = (int)a->slen;
				if (dot) {
					int up = star_p ? stars[nstars - 1] : atoi(dot + 1);
					if (up >= 0 && up < prec)
						prec = up;
					k = (size_t)(dot - spec);
				}
				int width = 0, has_width = 0;
				if (star_w) {
					width = stars[0];
					has_width = 1;
					/* drop the '*' from the spec; pass width explicitly */
					char *st = strchr(spec, '*');
					if (st && (!dot || st < dot))
						k = (size_t)(st - spec);
				}
				spec[k++] = '.'; spec[k++] = '*'; spec[k++] = 's'; spec[k] = 0;
				if (has_width) {
					char full[56];
					snprintf(full, sizeof(full), "%.*s*.*s", (int)(k - 3), spec);
					rt_out_add(&o, full, width, prec, a->s);
				} else {
					rt_out_add(&o, spec, prec, a->s);
				}
			} else {
				rt_out_add(&o, "%llu", (unsigned long long)a->v);
			}
			break;
		case 'p':
			spec[k++] = 'p'; spec[k] = 0;
			if (nstars == 2) rt_out_add(&o, spec, stars[0], stars[1], (void *)(uintptr_t)a->v);
			else if (nstars == 1) rt_out_add(&o, spec, stars[0], (void *)(uintptr_t)a->v);
			else rt_out_add(&o, spec, (void *)(uintptr_t)a->v);
			break;
		default:
			rt_out_add(&o, "<%%%c?>", conv);
			break;
		}
		f = q;
	}
	return o.len > INT_MAX ? INT_MAX : (int)o.len;
}

int ringtrace_printf_format(const char *fmt, const uint8_t *types, uint32_t nargs,
			    const void *payload, size_t len, char *buf, size_t size)
{
	const char *p = payload;
	struct rt_arg args[RINGTRACE_PRINTF_MAX_ARGS];
	if (!fmt || len < 8)
		return rt_error(RINGTRACE_ECORRUPT, "printf record: %zu bytes, shorter than its 8-byte header", len);
	uint32_t nbytes, n = nargs;
	memcpy(&nbytes, p + 4, 4);
	if (nbytes > len - 8)
		return rt_error(RINGTRACE_ECORRUPT,
				"printf record: %u argument bytes at offset 4, but only %zu follow",
				nbytes, len - 8);
	if (n > RINGTRACE_PRINTF_MAX_ARGS)
		return rt_error(RINGTRACE_EINVAL, "printf call site: %u arguments (at most %u)", n,
				RINGTRACE_PRINTF_MAX_ARGS);
	len = 8 + (size_t)nbytes; /* the arguments end there */
	size_t o = 8;
	for (uint32_t i = 0; i < n; i++) {
		args[i].type = types[i];
		if (types[i] == RINGTRACE_PF_STRING) {
			uint32_t l;
			if (o > len || len - o < 4)
				return rt_error(RINGTRACE_ECORRUPT,
						"printf record: argument %u at offset %zu is truncated", i + 1, o);
			memcpy(&l, p + o, 4);
			if (l > len - o - 4)
				return rt_error(RINGTRACE_ECORRUPT,
						"printf record: string argument %u at offset %zu overruns the record",
						i + 1, o);
			args[i].s = p + o + 4;
			args[i].slen = l;
			args[i].v = 0;
			o = RT_ALIGN8(o + 4 + l);
		} else {
			o = RT_ALIGN8(o);
			if (o > len || len - o < 8)
				return rt_error(RINGTRACE_ECORRUPT,
						"printf record: argument %u at offset %zu is truncated", i + 1, o);
			memcpy(&args[i].v, p + o, 8);
			args[i].s = NULL;
			args[i].slen = 0;
			o += 8;
		}
	}
	if (RT_ALIGN8(o) != len)
		return rt_error(RINGTRACE_ECORRUPT,
				"printf record: %zu argument bytes, but the call site's %u arguments take %zu",
				len - 8, n, RT_ALIGN8(o) - 8);
	return rt_format_args(fmt, args, n, buf, size);
}
