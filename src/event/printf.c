/*
 * Binary printf: its pseudo-event, its call sites, and recording (the
 * format is never looked at; it is parsed when the trace is read, by
 * ringtrace_printf_format in src/schema/format.c).
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "event/event_internal.h"
#include "ringtrace/printf.h"

/* The pseudo-event that enables ringtrace_printf, with the fixed id 0. */
static const struct ringtrace_field_desc rt_printf_fields[] = {
	{"site", RINGTRACE_FT_INT, 4, 0, 4, 0, NULL},
	{"args", RINGTRACE_FT_BYTES, 1, 0, 4, 65535, NULL},
};
struct ringtrace_event_desc ringtrace_event_ringtrace_printf = {0,
								0,
								0,
								RINGTRACE_KIND_INSTANT,
								0,
								"ringtrace_printf",
								"site=%u args=%s",
								__FILE__,
								rt_printf_fields,
								2,
								0,
								NULL,
								NULL,
								NULL};

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
static char *rt_site_arena;
static size_t rt_site_arena_used;

static void *rt_site_alloc(size_t n)
{
	char *a = __atomic_load_n(&rt_site_arena, __ATOMIC_ACQUIRE);
	if (!a) {
		char *m = mmap(NULL, RT_ARENA_SIZE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (m == MAP_FAILED)
			return NULL;
		char *exp = NULL;
		if (!__atomic_compare_exchange_n(&rt_site_arena, &exp, m, 0, __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE)) {
			munmap(m, RT_ARENA_SIZE);
			m = exp;
		}
		a = m;
	}
	n = (n + 7) & ~(size_t)7;
	size_t off = __atomic_fetch_add(&rt_site_arena_used, n, __ATOMIC_RELAXED);
	if (off + n > RT_ARENA_SIZE)
		return NULL;
	return a + off;
}

static struct ringtrace_printf_site *rt_site_copy(const struct ringtrace_printf_site *site)
{
	size_t lf = strlen(site->fmt) + 1, lfile = strlen(site->file ? site->file : "") + 1;
	struct ringtrace_printf_site *c = rt_site_alloc(sizeof(*c) + lf + lfile + site->nargs);
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
	if (!__atomic_compare_exchange_n(&site->id, &exp, id, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
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
