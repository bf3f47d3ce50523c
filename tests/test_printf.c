/*
 * test_printf: ringtrace_printf, the binary printf.
 *
 *  1. Disabled by default: nothing is recorded and no call site is
 *     registered until ringtrace_event_enable("ringtrace_printf").
 *  2. 0 .. 8 arguments of every kind (char, signed/unsigned char, short,
 *     int, long, long long and their unsigned variants, _Bool, float,
 *     double, const char *, char arrays, void *, negative numbers) with
 *     flags, widths, precisions, length modifiers and * forms. Each record
 *     read back and formatted with ringtrace_printf_format() (its site from
 *     ringtrace_printf_site_by_id()) must equal snprintf() of the same
 *     format and arguments. Every mismatch is listed before the test fails.
 *  3. Strings longer than RINGTRACE_STRING_MAX - 1 are cut to it; a NULL
 *     string reads "(null)".
 *  4. The call site: format, file, line, argument types; site ids are
 *     1 .. ringtrace_printf_site_count().
 *  5. Damaged records (cut short, wrong argument count, a string length
 *     past the end) are -RINGTRACE_ECORRUPT; snprintf-like truncation.
 *  6. Two threads racing on the first enabled call of one site: every
 *     record's site id leads to that site.
 *  7. Integers of every digit count (each side of every power of ten and
 *     of two) print as snprintf prints them, into buffers of every size
 *     around the text (the formatter writes digits straight into the
 *     buffer where they fit, through a copy where they do not).
 *  8. A width or precision larger than 4096, written in the format or
 *     given as a '*' argument, prints as 4096 (a format can come from a
 *     trace's metadata: "%999999999d" must not ask for a gigabyte).
 * Each is a case; 2-5 check the records that printf_record() makes. 1
 * and 4 count the call sites registered in the process: they run alone.
 */
#include <limits.h>
#include <math.h>
#include <pthread.h>

#include "events_util.h"
#include "testutil.h"

#define MAXEXP 256
static struct {
	char text[2048];
	const char *fmt;
	int line;
} expected[MAXEXP];
static int nexp;

static void exp_add(int line, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void exp_add(int line, const char *fmt, ...)
{
	CHECK(nexp < MAXEXP);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(expected[nexp].text, sizeof(expected[nexp].text), fmt, ap);
	va_end(ap);
	expected[nexp].fmt = fmt;
	expected[nexp].line = line;
	nexp++;
}

/* Record with ringtrace_printf and remember what snprintf makes of it. */
#define PF(...)                                 \
	do {                                    \
		ringtrace_printf(__VA_ARGS__);  \
		exp_add(__LINE__, __VA_ARGS__); \
	} while (0)

static char long_str[5000];

/* Not visibly NULL to the compiler's format checks. */
static const char *__attribute__((noinline)) null_str(void)
{
	static const char *volatile p;
	return p;
}

static void record_all(void)
{
	char c = 'A';
	signed char sc = -5;
	unsigned char uc = 200;
	short sh = -1234;
	unsigned short ush = 65535;
	int i = -42, i2 = 7;
	unsigned u = 4000000000u;
	long lg = -1234567890123L;
	unsigned long ul = ULONG_MAX;
	long long ll = LLONG_MIN;
	unsigned long long ull = ULLONG_MAX;
	_Bool b = 1;
	float f = 1.25f;
	double d = -3.14159, big = 1e300, tiny = 5e-324;
	const char *str = "str";
	char cbuf[16] = "buffer";
	static int obj;
	void *ptr = &obj;
	const void *cptr = &obj;

	/* 0 arguments */
	PF("no arguments");
	PF("percent %% only");
	/* 1 argument of each kind */
	PF("%c", c);
	PF("%hhd", sc);
	PF("%hhu", uc);
	PF("%hd", sh);
	PF("%hu", ush);
	PF("%d", i);
	PF("%i", i);
	PF("%u", u);
	PF("%ld", lg);
	PF("%lu", ul);
	PF("%lld", ll);
	PF("%llu", ull);
	PF("%d", b);
	PF("%f", f);
	PF("%f", d);
	PF("%e", big);
	PF("%g", tiny);
	PF("%a", d);
	PF("%s", str);
	PF("%s", cbuf);
	PF("%p", ptr);
	PF("%p", cptr);
	PF("%d", INT_MIN);
	PF("%lld", LLONG_MAX);
	PF("%f", NAN);
	PF("%f", -INFINITY);
	PF("%g", -0.0);
	/* flags, widths, precisions */
	PF("[%5d]", i2);
	PF("[%5d]", i);
	PF("[%-5d]", i);
	PF("[%05d]", i);
	PF("[%+d]", i2);
	PF("[% d]", i2);
	PF("[%.3f]", d);
	PF("[%10.2f]", d);
	PF("[%-10.1e]", big);
	PF("[%x]", 255u);
	PF("[%X]", 48879u);
	PF("[%#x]", 255u);
	PF("[%o]", 8u);
	PF("[%llx]", ull);
	PF("[%lx]", ul);
	PF("[%08llx]", 0x1234ull);
	PF("[%c%c]", 'o', 'k');
	PF("[%5c]", c);
	PF("[%*d]", 6, i);
	PF("[%-*d]", 6, i);
	PF("[%.*f]", 2, d);
	PF("[%*.*f]", 9, 3, d);
	PF("[%-8s]", str);
	PF("[%8s]", str);
	PF("[%.2s]", str);
	PF("[%*s]", 6, str);
	PF("[%*s]", -6, str);
	PF("[%-*s]", 6, str);
	PF("[%.*s]", 2, str);
	PF("[%.*s]", -1, str);
	PF("[%*.*s]", 7, 1, str);
	PF("[%-*.*s]", 7, 2, cbuf);
	PF("[%5.1s]", str);
	PF("[%.0s]", str);
	PF("[%.10s]", str);
	PF("[%-10s|%10s]", cbuf, "");
	PF("[%20p]", ptr);
	PF("[%-20p]", ptr);
	PF("[%p]", (void *)0);
	PF("100%% [%d%%]", i2);
	/* negative numbers through unsigned and narrow conversions */
	PF("[%x]", -1);
	PF("[%u]", i);
	PF("[%hhx]", sc);
	PF("[%hu]", sh);
	PF("[%d]", u);
	PF("[%lx]", lg);
	/* 2 .. 8 arguments, mixed kinds */
	PF("%d %s", i, str);
	PF("%s=%f", cbuf, d);
	PF("%c|%hu|%p", c, ush, ptr);
	PF("%lld %llu %s %s", ll, ull, str, cbuf);
	PF("%d %u %ld %lu %lld", i, u, lg, ul, ll);
	PF("%s %d %s %d %s %d", "a", 1, "bb", 2, "ccc", 3);
	PF("%hhd %hhu %hd %hu %d %u %f", sc, uc, sh, ush, i, u, f);
	PF("%d %u %ld %lu %lld %llu %f %s", i, u, lg, ul, ll, ull, d, str);
	PF("%s%s%s%s%s%s%s%s", "1", "22", "", "4444", cbuf, "666666", str, "8");
	PF("%p %c %e %g %x %o %X %%%i", ptr, 'q', big, tiny, 0xabcu, 511u, 0xdeadu, -9);
	PF("[%5d] [%-8s] [%.3f] [%x] [%llx] [%c] [%*d] %%", i2, str, d, 255u, ull, c, 4, i2);
	PF("%s", "");
	PF("%s|%s", "", "x");
}

struct mismatch_log {
	int n;
};

static void compare(const char *got, int got_len, int k, const char *fmt, struct mismatch_log *ml)
{
	if (strcmp(got, expected[k].text) != 0 || got_len != (int)strlen(expected[k].text)) {
		fprintf(stderr,
			"  line %d: ringtrace_printf(\"%s\")\n      got      \"%s\" (%d)\n"
			"      snprintf \"%s\"\n",
			expected[k].line, fmt, got, got_len, expected[k].text);
		ml->n++;
	}
}

static int format_event(const struct evu_event *e, char *buf, size_t size,
			const struct ringtrace_printf_site **site_out)
{
	CHECK_EQ_U64(e->id, RINGTRACE_EVENT_ID_PRINTF);
	CHECK(e->len >= 8);
	uint32_t sid, nbytes;
	memcpy(&sid, e->data, 4);
	memcpy(&nbytes, (const char *)e->data + 4, 4); /* argument bytes that follow */
	const struct ringtrace_printf_site *site = ringtrace_printf_site_by_id(sid);
	CHECKF(site != NULL, "no site %u", sid);
	CHECK(sid >= 1 && sid <= ringtrace_printf_site_count());
	CHECK_EQ_U64(nbytes, e->len - 8);
	if (site_out)
		*site_out = site;
	int r = ringtrace_printf_format(site->fmt, site->types, site->nargs, e->data, e->len, buf,
					size);
	CHECKF(r >= 0, "printf_format(\"%s\"): %d: %s", site->fmt, r, ringtrace_last_error());
	return r;
}

/* The record of the main list made by the call site with this format. */
static const struct evu_event *by_fmt(const struct evu_list *l, int n, const char *fmt)
{
	for (int k = 0; k < n; k++)
		if (strcmp(expected[k].fmt, fmt) == 0)
			return &l->ev[k];
	check_fail_(__FILE__, __LINE__, "by_fmt", "no call with format \"%s\"", fmt);
}

/* ---- 6. racing first calls ---------------------------------------------- */

static pthread_barrier_t race_barrier;
static void *race_thread(void *arg)
{
	int th = (int)(uintptr_t)arg;
	pthread_barrier_wait(&race_barrier);
	for (int i = 0; i < 200; i++)
		ringtrace_printf("race %d %d", th, i);
	return NULL;
}

/* The records of 2. and 3., and the state around them. */
static struct {
	ringtrace_rb *rb;
	struct evu_list l;
	int nmain;     /* records of record_all() */
	int line_long; /* the line of the first long-string call */
} pf;
static char buf[8192];

static void printf_setup(void)
{
	for (size_t k = 0; k < sizeof(long_str) - 1; k++)
		long_str[k] = (char)('a' + k % 26);
	long_str[sizeof(long_str) - 1] = 0;
	memset(&pf, 0, sizeof(pf));
	nexp = 0;
	pf.rb = evu_buffer(64u << 10, 32);
}

static void printf_done(void)
{
	evu_list_free(&pf.l);
	evu_buffer_done(pf.rb);
}

/* 1. Disabled by default: nothing recorded, no call site registered. */
static void test_disabled(void)
{
	printf_setup();
	struct ringtrace_event_info info;
	/* 1. disabled by default */
	CHECK_OK(ringtrace_event_lookup("ringtrace_printf", &info));
	CHECK_EQ_U64(info.id, RINGTRACE_EVENT_ID_PRINTF);
	CHECK(info.enabled == 0);
	CHECK_EQ_U64(ringtrace_printf_site_count(), 0);
	ringtrace_printf("disabled %d %s", 1, "x");
	ringtrace_printf("disabled too");
	CHECK_EQ_U64(ringtrace_printf_site_count(), 0);
	CHECK(ringtrace_printf_site_by_id(1) == NULL);
	evu_collect(pf.rb, &pf.l);
	CHECK_EQ_U64(pf.l.n, 0);
	printf_done();
}

/*
 * Enables ringtrace_printf, makes the records of 2. (record_all) and 3.
 * (long and NULL strings), disables it again (a call then records
 * nothing) and collects them into pf.l.
 */
static void printf_record(void)
{
	printf_setup();
	CHECK(ringtrace_event_enable("ringtrace_printf") == 1);
	CHECK(ringtrace_event_ringtrace_printf.state != 0);

	/* 2. */
	record_all();
	pf.nmain = nexp;
	/* 3. long and NULL strings */
	pf.line_long = __LINE__ + 1;
	ringtrace_printf(">%s<", long_str);
	ringtrace_printf("%s|%d", null_str(), 5);
	ringtrace_printf("%s%s", long_str, long_str + 1);
	/* recorded while disabled again: nothing */
	CHECK(ringtrace_event_disable("ringtrace_printf") == 1);
	ringtrace_printf("after disable %d", 3);
	evu_collect(pf.rb, &pf.l);
	CHECKF(pf.l.n == (size_t)pf.nmain + 3, "%zu records, expected %d", pf.l.n, pf.nmain + 3);
}

/* 2. Every kind of argument formats as snprintf does. */
static void test_formats(void)
{
	printf_record();
	struct mismatch_log ml = {0};
	for (int k = 0; k < pf.nmain; k++) {
		const struct ringtrace_printf_site *site;
		int r = format_event(&pf.l.ev[k], buf, sizeof(buf), &site);
		CHECKF(strcmp(site->fmt, expected[k].fmt) == 0,
		       "record %d: site format \"%s\", expected \"%s\"", k, site->fmt,
		       expected[k].fmt);
		CHECK_EQ_U64(site->line, expected[k].line);
		CHECK(evu_has(site->file, "test_printf.c"));
		compare(buf, r, k, site->fmt, &ml);
	}
	CHECKF(ml.n == 0, "%d of %d records differ from snprintf (listed above)", ml.n, pf.nmain);
	printf_done();
}

/* 3. Long strings cut to RINGTRACE_STRING_MAX - 1; NULL reads "(null)". */
static void test_long_strings(void)
{
	printf_record();
	/* 3. */
	{
		const struct ringtrace_printf_site *site;
		int r = format_event(&pf.l.ev[pf.nmain], buf, sizeof(buf), &site);
		CHECK_EQ_U64(site->line, pf.line_long);
		CHECK_EQ_U64(site->nargs, 1);
		CHECK_EQ_U64(site->types[0], RINGTRACE_PF_STRING);
		CHECKF(r == (int)RINGTRACE_STRING_MAX - 1 + 2, "long string: %d", r);
		CHECK(buf[0] == '>' && memcmp(buf + 1, long_str, RINGTRACE_STRING_MAX - 1) == 0);
		CHECK(strcmp(buf + RINGTRACE_STRING_MAX, "<") == 0);
		r = format_event(&pf.l.ev[pf.nmain + 1], buf, sizeof(buf), &site);
		CHECKF(strcmp(buf, "(null)|5") == 0, "NULL string: \"%s\"", buf);
		r = format_event(&pf.l.ev[pf.nmain + 2], buf, sizeof(buf), &site);
		CHECK_EQ_U64(r, 2 * (RINGTRACE_STRING_MAX - 1));
		CHECK(memcmp(buf, long_str, RINGTRACE_STRING_MAX - 1) == 0);
		CHECK(memcmp(buf + RINGTRACE_STRING_MAX - 1, long_str + 1,
			     RINGTRACE_STRING_MAX - 1) == 0);
	}
	printf_done();
}

/* 4. The call sites: format, file, line, types; ids 1 .. count. */
static void test_sites(void)
{
	printf_record();
	/* 4. the sites */
	{
		const struct ringtrace_printf_site *s;
		const struct evu_event *e = by_fmt(&pf.l, pf.nmain, "%p %c %e %g %x %o %X %%%i");
		format_event(e, buf, sizeof(buf), &s);
		CHECK_EQ_U64(s->nargs, 8);
		static const uint8_t want[8] = {RINGTRACE_PF_POINTER, RINGTRACE_PF_S64,
						RINGTRACE_PF_DOUBLE,  RINGTRACE_PF_DOUBLE,
						RINGTRACE_PF_U64,     RINGTRACE_PF_U64,
						RINGTRACE_PF_U64,     RINGTRACE_PF_S64};
		CHECK(memcmp(s->types, want, 8) == 0);
		CHECK_EQ_U64(s->id, ((const uint32_t *)e->data)[0]);
		uint32_t n = ringtrace_printf_site_count();
		CHECKF(n >= (uint32_t)pf.nmain && n <= (uint32_t)pf.nmain + 3, "%u sites", n);
		for (uint32_t id = 1; id <= n; id++)
			CHECK(ringtrace_printf_site_by_id(id) != NULL);
		CHECK(ringtrace_printf_site_by_id(n + 1) == NULL);
		CHECK(ringtrace_printf_site_by_id(0) == NULL);
	}
	printf_done();
}

/* 5. Damaged records are -RINGTRACE_ECORRUPT; snprintf-like truncation. */
static void test_damaged(void)
{
	printf_record();
	/* 5. damaged records */
	{
		const struct ringtrace_printf_site *s;
		/* "%c|%hu|%p": the last argument a scalar */
		const struct evu_event *e = by_fmt(&pf.l, pf.nmain, "%c|%hu|%p");
		format_event(e, buf, sizeof(buf), &s);
		CHECK(strcmp(s->fmt, "%c|%hu|%p") == 0);
		for (uint32_t len = 0; len < e->len; len++) {
			int r = ringtrace_printf_format(s->fmt, s->types, s->nargs, e->data, len,
							buf, sizeof(buf));
			CHECKF(r == -RINGTRACE_ECORRUPT, "cut to %u of %u bytes: %d", len, e->len,
			       r);
			CHECK(ringtrace_last_error()[0] != 0);
		}
		int r = ringtrace_printf_format(s->fmt, s->types, s->nargs + 1, e->data, e->len,
						buf, sizeof(buf));
		CHECK(r == -RINGTRACE_ECORRUPT);
		r = ringtrace_printf_format(s->fmt, s->types, 1, e->data, e->len, buf, sizeof(buf));
		CHECK(r == -RINGTRACE_ECORRUPT);
		/* "%lld %llu %s %s": string lengths */
		e = by_fmt(&pf.l, pf.nmain, "%lld %llu %s %s");
		format_event(e, buf, sizeof(buf), &s);
		CHECK(strcmp(s->fmt, "%lld %llu %s %s") == 0);
		char copy[256];
		CHECK(e->len <= sizeof(copy));
		memcpy(copy, e->data, e->len);
		uint32_t huge = 0xFFFFFFF0u;
		memcpy(copy + 24, &huge, 4); /* the first string's length */
		r = ringtrace_printf_format(s->fmt, s->types, s->nargs, copy, e->len, buf,
					    sizeof(buf));
		CHECKF(r == -RINGTRACE_ECORRUPT, "huge string length: %d", r);
		for (uint32_t len = 0; len < 24 + 4 + 3; len++) {
			r = ringtrace_printf_format(s->fmt, s->types, s->nargs, e->data, len, buf,
						    sizeof(buf));
			CHECKF(r == -RINGTRACE_ECORRUPT, "cut to %u: %d", len, r);
		}
		CHECK(ringtrace_printf_format(NULL, s->types, s->nargs, e->data, e->len, buf,
					      sizeof(buf)) == -RINGTRACE_ECORRUPT);
		/* snprintf semantics */
		e = &pf.l.ev[0]; /* "no arguments" */
		char small[4] = "zzz";
		r = ringtrace_printf_format("no arguments", NULL, 0, e->data, e->len, small,
					    sizeof(small));
		CHECK_EQ_U64(r, strlen("no arguments"));
		CHECK(strcmp(small, "no ") == 0);
		r = ringtrace_printf_format("no arguments", NULL, 0, e->data, e->len, NULL, 0);
		CHECK_EQ_U64(r, strlen("no arguments"));
	}
	printf_done();
}

/* 6. Two threads racing on a site's first enabled call. */
static void test_race(void)
{
	printf_setup();
	/* 6. two threads on one fresh site */
	CHECK(ringtrace_event_enable("ringtrace_printf") == 1);
	CHECK(pthread_barrier_init(&race_barrier, NULL, 2) == 0);
	pthread_t t[2];
	for (uintptr_t k = 0; k < 2; k++)
		CHECK(pthread_create(&t[k], NULL, race_thread, (void *)k) == 0);
	for (int k = 0; k < 2; k++)
		CHECK(pthread_join(t[k], NULL) == 0);
	pthread_barrier_destroy(&race_barrier);
	evu_collect(pf.rb, &pf.l);
	CHECK_EQ_U64(pf.l.n, 400);
	int next[2] = {0, 0};
	for (size_t k = 0; k < pf.l.n; k++) {
		const struct ringtrace_printf_site *s;
		format_event(&pf.l.ev[k], buf, sizeof(buf), &s);
		CHECK(strcmp(s->fmt, "race %d %d") == 0);
		int th, idx;
		CHECK(sscanf(buf, "race %d %d", &th, &idx) == 2);
		CHECK(th == 0 || th == 1);
		CHECK_EQ_U64(idx, next[th]);
		next[th]++;
	}
	printf_done();
}

/* ---- 7. digit counts ----------------------------------------------------- */

/* A printf record of two integers (types S64, U64), made by hand. */
static size_t int_record(char *rec, int64_t a, uint64_t b)
{
	uint32_t site = 1, nbytes = 16;
	memcpy(rec, &site, 4);
	memcpy(rec + 4, &nbytes, 4);
	memcpy(rec + 8, &a, 8);
	memcpy(rec + 16, &b, 8);
	return 24;
}

static void check_ints(uint64_t u)
{
	static const uint8_t types[2] = {RINGTRACE_PF_S64, RINGTRACE_PF_U64};
	static const char *const fmts[] = {"%lld|%llu", "%d|%u", "v=%lld", "%hd %hhu", "%llx|%llu"};
	char rec[24], want[64], got[64];
	const int64_t s[2] = {(int64_t)u, (int64_t)(0 - u)}; /* (no signed overflow) */
	for (int k = 0; k < 2; k++) {
		size_t len = int_record(rec, s[k], u);
		for (size_t f = 0; f < sizeof(fmts) / sizeof(fmts[0]); f++) {
			int wn;
			if (f == 0 || f == 4)
				wn = snprintf(want, sizeof(want), fmts[f], (long long)s[k],
					      (unsigned long long)u);
			else if (f == 1)
				wn = snprintf(want, sizeof(want), "%d|%u", (int)s[k], (unsigned)u);
			else if (f == 2)
				wn = snprintf(want, sizeof(want), "v=%lld", (long long)s[k]);
			else
				wn = snprintf(want, sizeof(want), "%hd %hhu", (short)s[k],
					      (unsigned char)u);
			/* every buffer size from 0 to the whole text and one more */
			for (size_t size = 0; size <= (size_t)wn + 1; size++) {
				memset(got, 'Z', sizeof(got));
				int r = ringtrace_printf_format(fmts[f], types, 2, rec, len,
								size ? got : NULL, size);
				CHECKF(r == wn, "\"%s\" of %lld, %llu: %d, snprintf %d", fmts[f],
				       (long long)s[k], (unsigned long long)u, r, wn);
				if (size) {
					char w[64];
					snprintf(w, size, "%s", want);
					CHECKF(strcmp(got, w) == 0,
					       "\"%s\" of %lld, %llu into %zu bytes: \"%s\", want \"%s\"",
					       fmts[f], (long long)s[k], (unsigned long long)u,
					       size, got, w);
					CHECKF(got[size] == 'Z', "wrote past %zu bytes", size);
				}
			}
		}
	}
}

static void test_digit_counts(void)
{
	uint64_t p = 1;
	for (int e = 0; e < 20; e++, p *= 10)
		for (int d = -2; d <= 2; d++)
			if ((int64_t)p + d >= 0 || e == 19)
				check_ints(p + (uint64_t)d);
	for (int b = 0; b < 64; b++)
		for (int d = -1; d <= 1; d++)
			check_ints((UINT64_C(1) << b) + (uint64_t)d);
	check_ints(0);
	check_ints(UINT64_MAX);
}

/* ---- 8. widths clamped ------------------------------------------------------ */

static void test_width_clamp(void)
{
	static const uint8_t types[2] = {RINGTRACE_PF_S64, RINGTRACE_PF_U64};
	char rec[24];
	size_t len = int_record(rec, -42, 7);
	static char got[16384], want[16384];
	static const struct {
		const char *fmt, *same; /* the format, and what it must print as */
	} cases[] = {
		{"%999999999lld|%llu", "%4096lld|%llu"},
		{"%-99999999999999999999999lld|%llu", "%-4096lld|%llu"},
		{"%.999999999lld|%09999llu", "%.4096lld|%04096llu"},
		{"%4096lld|%4097llu", "%4096lld|%4096llu"},
		{"%*lld|%llu", NULL}, /* a star width of -42: left-aligned in 42 */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = ringtrace_printf_format(cases[i].fmt, types, 2, rec, len, got, sizeof(got));
		int w = cases[i].same ? snprintf(want, sizeof(want), cases[i].same, -42ll, 7ull)
				      : snprintf(want, sizeof(want), "%-42llu|", 7ull);
		if (!cases[i].same) /* the star took -42; the rest has no argument */
			w += snprintf(want + w, sizeof(want) - (size_t)w, "<missing>");
		CHECKF(r == w, "\"%s\": %d bytes, want %d", cases[i].fmt, r, w);
		CHECKF(strcmp(got, want) == 0, "\"%s\" printed differently from \"%s\"",
		       cases[i].fmt, cases[i].same ? cases[i].same : "%-42llu|<missing>");
	}
	/* a string's precision from the format, clamped too */
	static const uint8_t stype[1] = {RINGTRACE_PF_STRING};
	char srec[24] = {0};
	uint32_t site = 1, nbytes = 8, slen = 3;
	memcpy(srec, &site, 4);
	memcpy(srec + 4, &nbytes, 4);
	memcpy(srec + 8, &slen, 4);
	memcpy(srec + 12, "abc", 3);
	int r = ringtrace_printf_format("%99999999999.99999999999s", stype, 1, srec, 16, got,
					sizeof(got));
	snprintf(want, sizeof(want), "%4096.3s", "abc");
	CHECK_EQ_U64(r, 4096);
	CHECK(strcmp(got, want) == 0);
}

/* 1 and 4 count the call sites registered: in a process of their own. */
/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
static const struct check_case cases[] = {
	CHECK_CASE_ALONE(printf_disabled_by_default_records_nothing_registers_no_site, test_disabled),
	CHECK_CASE(printf_every_argument_kind_formats_as_snprintf_does, test_formats),
	CHECK_CASE(printf_long_strings_cut_and_null_string_reads_null, test_long_strings),
	CHECK_CASE_ALONE(printf_call_site_holds_format_file_line_and_types, test_sites),
	CHECK_CASE(printf_damaged_records_refused_and_output_truncated_like_snprintf, test_damaged),
	CHECK_CASE(printf_threads_racing_on_a_new_site_share_its_id, test_race),
	CHECK_CASE(printf_integers_of_every_digit_count_print_as_snprintf_does, test_digit_counts),
	CHECK_CASE(printf_format_widths_and_precisions_clamped_to_4096, test_width_clamp),
};
/* clang-format on */

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
