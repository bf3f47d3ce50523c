/*
 * test_event_format_limits: formatting records whose content is data, not
 * trusted - regressions from the events-layer review.
 *
 *  1. ringtrace_record_format() renders byte sequences and arrays into a
 *     scratch area of its own. Four byte-sequence fields of lengths 4096,
 *     0, 0, 512 used it up; the old code then stepped past its end and
 *     wrote the last field's hex there (ASan: stack-buffer-overflow). An
 *     enum value without a name, met when the scratch area is used up
 *     exactly, was read from past its end. Now: no write or read outside,
 *     a length no larger than the full rendering, and well-formed text
 *     (a prefix of each field's rendering).
 *  2. A float array of element size 2 (or anything but 4 and 8) is
 *     -RINGTRACE_ECORRUPT for ringtrace_record_decode() and
 *     ringtrace_record_format(); the old code read 8 bytes per element
 *     (ASan: heap-buffer-overflow).
 *  3. ringtrace_printf_format() on crafted records: star widths and
 *     precisions of +-2147483000 return quickly with a bounded length
 *     (the old code padded to 2 GiB twice and returned a negative int);
 *     "%*.*c" and "%*.*p" take both stars (the old code passed one, so
 *     the value printed was the precision and the rest garbage).
 *
 * Payloads are malloc'ed at their exact length, so that ASan sees any
 * read past a record. Each check is a case (1. two: bytes, enum).
 */
#include <stdarg.h>

#include "events_util.h"
#include "testutil.h"

#define CHECK_RC(call, want)                                                              \
	do {                                                                              \
		int rc_ = (call);                                                         \
		CHECKF(rc_ == (want), "%s returned %d (%s), expected %d: %s", #call, rc_, \
		       ringtrace_strerror(rc_), (int)(want), ringtrace_last_error());     \
	} while (0)

/* ---- building records ------------------------------------------------------ */

struct rec {
	unsigned char b[16384];
	size_t len;
};

static void rec_align(struct rec *r, size_t al)
{
	while (r->len % al)
		r->b[r->len++] = 0;
}

static void rec_u32(struct rec *r, uint32_t v)
{
	rec_align(r, 4);
	CHECK(r->len + 4 <= sizeof(r->b));
	memcpy(r->b + r->len, &v, 4);
	r->len += 4;
}

static void rec_i64(struct rec *r, int64_t v)
{
	rec_align(r, 8);
	CHECK(r->len + 8 <= sizeof(r->b));
	memcpy(r->b + r->len, &v, 8);
	r->len += 8;
}

/* A byte sequence: 4-aligned u32 length, then `n` bytes of `fill`. */
static void rec_bytes(struct rec *r, uint32_t n, unsigned char fill)
{
	rec_u32(r, n);
	CHECK(r->len + n <= sizeof(r->b));
	memset(r->b + r->len, fill, n);
	r->len += n;
}

/* The record at its exact length, from malloc (free it). */
static void *rec_dup(const struct rec *r)
{
	void *p = malloc(r->len ? r->len : 1);
	CHECK(p != NULL);
	memcpy(p, r->b, r->len);
	return p;
}

static struct ringtrace_field_desc f_bytes(const char *name)
{
	struct ringtrace_field_desc f = {name, RINGTRACE_FT_BYTES,  1,   0,
					 4,    RINGTRACE_BYTES_MAX, NULL};
	return f;
}

/* Splits s at ' ' into at most max parts (in place); returns the count. */
static int split(char *s, char **parts, int max)
{
	int n = 0;
	parts[n++] = s;
	for (char *c = s; *c; c++) {
		if (*c == ' ') {
			*c = 0;
			CHECK(n < max);
			parts[n++] = c + 1;
		}
	}
	return n;
}

/* s is a prefix of `pair` repeated (an even number of hex digits). */
static int hex_prefix(const char *s, const char *pair, size_t max_len)
{
	size_t l = strlen(s);
	if (l % 2 || l > max_len)
		return 0;
	for (size_t i = 0; i < l; i++)
		if (s[i] != pair[i % 2])
			return 0;
	return 1;
}

/* ---- 1. record_format's scratch space --------------------------------------- */

/* Full text of 4096 bytes 0xab, 0, 0, 512 bytes 0xcd with "%s %s %s %s". */
#define FULL_LEN (2u * 4096u + 2u * 512u + 3u)

static void check_bytes_fields(void)
{
	const struct ringtrace_field_desc f[4] = {f_bytes("a"), f_bytes("b"), f_bytes("c"),
						  f_bytes("d")};
	static struct rec r;
	r.len = 0;
	rec_bytes(&r, 4096, 0xab);
	rec_bytes(&r, 0, 0);
	rec_bytes(&r, 0, 0);
	rec_bytes(&r, 512, 0xcd);
	CHECK_EQ_U64(r.len, 4 + 4096 + 4 + 4 + 4 + 512);
	void *p = rec_dup(&r);

	struct ringtrace_value v[4];
	CHECK_RC(ringtrace_record_decode(f, 4, p, r.len, v), 4);
	CHECK(v[0].len == 4096 && v[1].len == 0 && v[2].len == 0 && v[3].len == 512);

	/* a small buffer: snprintf-like, the length of the whole text */
	char small[256];
	memset(small, 'X', sizeof(small));
	int n = ringtrace_record_format("%s %s %s %s", f, 4, p, r.len, small, sizeof(small));
	CHECKF(n >= 3 && (unsigned)n <= FULL_LEN, "returned %d (at most %u)", n, FULL_LEN);
	CHECK_EQ_U64(strlen(small), (size_t)n < sizeof(small) ? (size_t)n : sizeof(small) - 1);

	/* no buffer at all: the same length */
	CHECK_RC(ringtrace_record_format("%s %s %s %s", f, 4, p, r.len, NULL, 0), n);

	/* a buffer large enough for everything: the text is well-formed */
	char *big = malloc(FULL_LEN + 64);
	CHECK(big != NULL);
	CHECK_RC(ringtrace_record_format("%s %s %s %s", f, 4, p, r.len, big, FULL_LEN + 64), n);
	CHECK_EQ_U64(strlen(big), (size_t)n);
	char *parts[4];
	CHECK_EQ_U64(split(big, parts, 4), 4);
	CHECKF(strlen(parts[0]) > 0 && hex_prefix(parts[0], "ab", 2 * 4096), "a: %.40s... (%zu)",
	       parts[0], strlen(parts[0]));
	CHECK(parts[1][0] == 0 && parts[2][0] == 0);
	CHECKF(hex_prefix(parts[3], "cd", 2 * 512), "d: %.40s... (%zu)", parts[3],
	       strlen(parts[3]));

	/* an integer array where the scratch space is used up */
	const struct ringtrace_field_desc fa[4] = {f_bytes("a"),
						   f_bytes("b"),
						   {"arr", RINGTRACE_FT_ARRAY, 4, 1, 4, 4, NULL},
						   f_bytes("d")};
	r.len = 0;
	rec_bytes(&r, 4096, 0xab);
	rec_bytes(&r, 0, 0);
	for (int i = 0; i < 4; i++)
		rec_u32(&r, (uint32_t)(i - 2));
	rec_bytes(&r, 512, 0xcd);
	free(p);
	p = rec_dup(&r);
	n = ringtrace_record_format("%s %s %s %s", fa, 4, p, r.len, big, FULL_LEN + 64);
	CHECKF(n >= 3 && (unsigned)n <= FULL_LEN + 32, "returned %d", n);
	CHECK_EQ_U64(strlen(big), (size_t)n);
	CHECK_EQ_U64(split(big, parts, 4), 4);
	CHECK(hex_prefix(parts[0], "ab", 2 * 4096) && parts[1][0] == 0);
	CHECKF(parts[2][0] == 0 || strncmp(parts[2], "{-2,-1,0,1}", strlen(parts[2])) == 0,
	       "arr: \"%s\"", parts[2]);
	CHECK(hex_prefix(parts[3], "cd", 2 * 512));

	free(big);
	free(p);
}

static const struct ringtrace_enum_value enum_vals[] = {{"ONE", 1}, {"TWO", 2}};
static const struct ringtrace_enum_desc enum_desc = {"num", enum_vals, 2};

/* An enum field right where the scratch space is used up exactly. */
static void check_enum_exhausted(void)
{
	const struct ringtrace_field_desc f[4] = {f_bytes("a"),
						  f_bytes("b"),
						  {"e", RINGTRACE_FT_ENUM, 4, 1, 4, 0, &enum_desc},
						  f_bytes("d")};
	const int32_t values[] = {77, 1, -5, 2};
	for (size_t k = 0; k < sizeof(values) / sizeof(values[0]); k++) {
		static struct rec r;
		r.len = 0;
		rec_bytes(&r, 4096, 0xab);
		rec_bytes(&r, 0, 0);
		rec_u32(&r, (uint32_t)values[k]);
		rec_bytes(&r, 512, 0xcd);
		void *p = rec_dup(&r);
		char buf[FULL_LEN + 64];
		int n = ringtrace_record_format("%s %s %s %s", f, 4, p, r.len, buf, sizeof(buf));
		CHECKF(n >= 3 && (unsigned)n <= FULL_LEN + 32, "value %d: returned %d", values[k],
		       n);
		CHECK_EQ_U64(strlen(buf), (size_t)n);
		char *parts[4];
		CHECK_EQ_U64(split(buf, parts, 4), 4);
		CHECK(hex_prefix(parts[0], "ab", 2 * 4096) && parts[1][0] == 0);
		CHECK(hex_prefix(parts[3], "cd", 2 * 512));
		char num[24];
		snprintf(num, sizeof(num), "%d", values[k]);
		const char *name = values[k] == 1 ? "ONE" : values[k] == 2 ? "TWO" : NULL;
		if (name)
			CHECKF(strcmp(parts[2], name) == 0, "enum %d: \"%s\", expected %s",
			       values[k], parts[2], name);
		else
			CHECKF(strcmp(parts[2], "?") == 0 || strcmp(parts[2], num) == 0,
			       "enum %d without a name: \"%s\"", values[k], parts[2]);
		free(p);
	}

	/* with room to spare, an unnamed value is shown as its number */
	const struct ringtrace_field_desc fe[1] = {
		{"e", RINGTRACE_FT_ENUM, 4, 1, 4, 0, &enum_desc}};
	int32_t v = -77;
	void *p = malloc(4);
	CHECK(p != NULL);
	memcpy(p, &v, 4);
	char buf[64];
	CHECK_RC(ringtrace_record_format("e=%s", fe, 1, p, 4, buf, sizeof(buf)), 5);
	CHECK(strcmp(buf, "e=-77") == 0);
	free(p);
}

/* ---- 2. float arrays ----------------------------------------------------------- */

static void check_float_arrays(void)
{
	const uint8_t bad_sizes[] = {1, 2, 3, 16};
	for (size_t k = 0; k < sizeof(bad_sizes); k++) {
		const uint8_t sz = bad_sizes[k];
		const struct ringtrace_field_desc f[1] = {{"h", RINGTRACE_FT_FLOAT_ARRAY, sz, 1,
							   sz == 2   ? 2
							   : sz >= 8 ? 8
								     : 1,
							   3, NULL}};
		size_t len = (size_t)sz * 3;
		void *p = calloc(1, len);
		CHECK(p != NULL);
		struct ringtrace_value v[1];
		CHECK_RC(ringtrace_record_decode(f, 1, p, len, v), -RINGTRACE_ECORRUPT);
		CHECKF(evu_has(ringtrace_last_error(), "\"h\""), "message: %s",
		       ringtrace_last_error());
		char buf[128];
		CHECK_RC(ringtrace_record_format("%s", f, 1, p, len, buf, sizeof(buf)),
			 -RINGTRACE_ECORRUPT);
		free(p);
	}

	/* 4 and 8 are floats and doubles */
	{
		const struct ringtrace_field_desc f[1] = {
			{"h", RINGTRACE_FT_FLOAT_ARRAY, 4, 1, 4, 3, NULL}};
		const float x[3] = {1.5f, -2.0f, 0.25f};
		void *p = malloc(sizeof(x));
		CHECK(p != NULL);
		memcpy(p, x, sizeof(x));
		char buf[128];
		CHECK_RC(ringtrace_record_format("h=%s", f, 1, p, sizeof(x), buf, sizeof(buf)),
			 (int)strlen("h={1.5,-2,0.25}"));
		CHECKF(strcmp(buf, "h={1.5,-2,0.25}") == 0, "\"%s\"", buf);
		free(p);
	}
	{
		const struct ringtrace_field_desc f[1] = {
			{"h", RINGTRACE_FT_FLOAT_ARRAY, 8, 1, 8, 2, NULL}};
		const double x[2] = {1e100, -0.125};
		void *p = malloc(sizeof(x));
		CHECK(p != NULL);
		memcpy(p, x, sizeof(x));
		char buf[128];
		CHECK_RC(ringtrace_record_format("h=%s", f, 1, p, sizeof(x), buf, sizeof(buf)),
			 (int)strlen("h={1e+100,-0.125}"));
		CHECKF(strcmp(buf, "h={1e+100,-0.125}") == 0, "\"%s\"", buf);
		free(p);
	}
}

/* ---- 3. printf_format: star widths and precisions ------------------------------ */

/*
 * A printf record of n 8-byte arguments: u32 site id, u32 number of
 * argument bytes that follow, then the values.
 */
static void *pf_record(const int64_t *vals, uint32_t n, size_t *len)
{
	static struct rec r;
	r.len = 0;
	rec_u32(&r, 1);
	rec_u32(&r, 8 * n);
	for (uint32_t i = 0; i < n; i++)
		rec_i64(&r, vals[i]);
	*len = r.len;
	return rec_dup(&r);
}

/* snprintf with a format that the compiler does not check (%*.*c). */
static int ref_format(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

static void check_printf_stars(void)
{
	const uint64_t t0 = tu_mono_ns();
	const uint8_t s64[4] = {RINGTRACE_PF_S64, RINGTRACE_PF_S64, RINGTRACE_PF_S64,
				RINGTRACE_PF_S64};
	char buf[64];
	size_t len;

	/* two huge widths (the reviewer's record) */
	{
		const int64_t v[4] = {2147483000, 7, 2147483000, 8};
		void *p = pf_record(v, 4, &len);
		CHECK_EQ_U64(len, 40);
		uint64_t t = tu_mono_ns();
		int n = ringtrace_printf_format("%*d%*d", s64, 4, p, len, buf, sizeof(buf));
		t = tu_mono_ns() - t;
		CHECKF(t < 1000000000ull, "took %.2f s", (double)t / 1e9);
		CHECKF(n >= 2 && n <= (1 << 20), "returned %d: %s", n, ringtrace_last_error());
		CHECK_EQ_U64(strlen(buf), sizeof(buf) - 1);
		for (size_t i = 0; i < sizeof(buf) - 1; i++)
			CHECK(buf[i] == ' ');
		CHECK_RC(ringtrace_printf_format("%*d%*d", s64, 4, p, len, NULL, 0), n);
		free(p);
	}
	/* huge negative widths: left-justified */
	{
		const int64_t v[4] = {-2147483000, 7, -2147483000, 8};
		void *p = pf_record(v, 4, &len);
		int n = ringtrace_printf_format("%*d|%*d", s64, 4, p, len, buf, sizeof(buf));
		CHECKF(n >= 3 && n <= (1 << 20), "returned %d", n);
		CHECK(buf[0] == '7' && buf[1] == ' ' && buf[sizeof(buf) - 2] == ' ');
		free(p);
	}
	/* huge width and precision together, and INT64 extremes */
	{
		const int64_t v[3] = {INT64_MAX, INT64_MIN, 5};
		void *p = pf_record(v, 3, &len);
		int n = ringtrace_printf_format("%*.*d", s64, 3, p, len, buf, sizeof(buf));
		CHECKF(n >= 1 && n <= (1 << 20), "returned %d", n);
		CHECK_EQ_U64(strlen(buf), (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
		free(p);
	}
	{
		const int64_t v[2] = {2147483000, 3};
		void *p = pf_record(v, 2, &len);
		int n = ringtrace_printf_format("%.*d", s64, 2, p, len, buf, sizeof(buf));
		CHECKF(n >= 1 && n <= (1 << 20), "returned %d", n);
		CHECK(strncmp(buf, "0000", 4) == 0);
		free(p);
	}

	/* %c and %p with two stars */
	struct {
		const char *fmt;
		int64_t w, prec, arg;
		uint8_t type;
	} cases[] = {
		{"[%*.*c]", 5, 3, 'x', RINGTRACE_PF_S64},
		{"[%-*.*c]", 4, 0, 'y', RINGTRACE_PF_S64},
		{"[%*.*p]", 24, 16, 0x1234, RINGTRACE_PF_POINTER},
		{"[%-*.*p]", 20, 2, 0xabcdef, RINGTRACE_PF_POINTER},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		const int64_t v[3] = {cases[k].w, cases[k].prec, cases[k].arg};
		const uint8_t types[3] = {RINGTRACE_PF_S64, RINGTRACE_PF_S64, cases[k].type};
		void *p = pf_record(v, 3, &len);
		char want[64];
		int wn;
		if (cases[k].type == RINGTRACE_PF_POINTER)
			wn = ref_format(want, sizeof(want), cases[k].fmt, (int)cases[k].w,
					(int)cases[k].prec, (void *)(uintptr_t)cases[k].arg);
		else
			wn = ref_format(want, sizeof(want), cases[k].fmt, (int)cases[k].w,
					(int)cases[k].prec, (int)cases[k].arg);
		int n = ringtrace_printf_format(cases[k].fmt, types, 3, p, len, buf, sizeof(buf));
		CHECKF(n == wn && strcmp(buf, want) == 0, "%s: \"%s\" (%d), snprintf \"%s\" (%d)",
		       cases[k].fmt, buf, n, want, wn);
		free(p);
	}
	const uint64_t t = tu_mono_ns() - t0;
	CHECKF(t < 1000000000ull, "printf_format checks took %.2f s", (double)t / 1e9);
}

/* One case a line: tests/CMakeLists.txt reads these lines. */
/* clang-format off */
static const struct check_case cases[] = {
	CHECK_CASE(event_format_limits_bytes_fields_stay_inside_the_scratch_area, check_bytes_fields),
	CHECK_CASE(event_format_limits_enum_at_exhausted_scratch_area_read_safely, check_enum_exhausted),
	CHECK_CASE(event_format_limits_float_arrays_of_other_sizes_refused_as_corrupt, check_float_arrays),
	CHECK_CASE(event_format_limits_printf_star_widths_bounded_c_and_p_take_both, check_printf_stars),
};
/* clang-format on */

int main(int argc, char **argv)
{
	return CHECK_MAIN(cases, argc, argv);
}
