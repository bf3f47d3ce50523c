/*
 * The formatter: printf-style conversions over recorded values. Every
 * text rendering of a record goes through it: ringtrace_record_format
 * (an event by its print format), ringtrace_printf_format (a binary printf
 * record by its call site's format), the trace reader's report (which
 * keeps each event's format cut into pieces, rt_fmt_seg, instead of
 * cutting it again for every record).
 *
 * Each conversion is cut out of the format, its length modifier replaced
 * by one that fits the recorded 64-bit value (narrowed first as a C
 * compiler would have passed it), and printed. Conversions with no flags,
 * width or precision (%d %i %u %x %X, and %s of a string) are printed
 * here directly: the trace reader formats millions of events a second
 * and snprintf is most of a record's cost. Their output is snprintf's, to
 * the byte (tests/test_event_format_limits.c checks every integer
 * conversion and modifier both ways); everything else is snprintf's own.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema/schema_api.h"

/* ---- cutting a format -------------------------------------------------------- */

/*
 * A width or precision written in the format: its digits at *q (moved past
 * all of them), written to spec clamped to RT_FMT_MAX_WIDTH; returns the
 * bytes written (at most 4). A print format comes from a trace's metadata,
 * which anyone can write: "%999999999d" asked snprintf for a gigabyte of
 * padding per record (a width read from a record is clamped the same way).
 */
static size_t rt_fmt_number(const char **q, char *spec)
{
	uint32_t v = 0;
	for (; **q >= '0' && **q <= '9'; (*q)++)
		if (v <= RT_FMT_MAX_WIDTH)
			v = v * 10 + (uint32_t)(**q - '0');
	if (v > RT_FMT_MAX_WIDTH)
		v = RT_FMT_MAX_WIDTH;
	char tmp[8], *e = tmp + sizeof(tmp), *p = e;
	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	memcpy(spec, p, (size_t)(e - p));
	return (size_t)(e - p);
}

int rt_fmt_next(const char **fmtp, struct rt_fmt_seg *sg)
{
	const char *f = *fmtp;
	if (!*f)
		return 0;
	memset(sg, 0, sizeof(*sg));
	if (*f != '%' || f[1] == '%') {
		const char *e;
		if (*f == '%') {
			e = f + 1; /* "%%": one '%' */
			*fmtp = f + 2;
		} else {
			e = strchr(f, '%');
			if (!e)
				e = f + strlen(f);
			*fmtp = e;
		}
		sg->lit = f;
		sg->litlen = (uint32_t)(e - f);
		return 1;
	}
	/* %[flags][width][.precision][length]conv */
	size_t k = 0;
	const char *q = f + 1;
	sg->spec[k++] = '%';
	while (*q && strchr("-+ #0'", *q) && k < 20)
		sg->spec[k++] = *q++;
	if (*q == '*') {
		sg->star_w = 1;
		sg->spec[k++] = *q++;
	}
	if (*q >= '0' && *q <= '9')
		k += rt_fmt_number(&q, sg->spec + k);
	if (*q == '.') {
		sg->spec[k++] = *q++;
		if (*q == '*') {
			sg->star_p = 1;
			sg->spec[k++] = *q++;
		}
		if (*q >= '0' && *q <= '9')
			k += rt_fmt_number(&q, sg->spec + k);
	}
	sg->spec[k] = 0;
	sg->speclen = (uint8_t)k;
	sg->simple = k == 1;
	/* length modifier: decides how the recorded 64 bits are narrowed */
	char lm[3] = {0, 0, 0};
	int n = 0;
	while (*q && strchr("hlLqjzt", *q) && n < 2)
		lm[n++] = *q++;
	sg->hh = lm[0] == 'h' && lm[1] == 'h';
	sg->h = lm[0] == 'h' && !sg->hh;
	sg->wide = lm[0] && !sg->h && !sg->hh; /* l, ll, j, z, t, q, L */
	sg->conv = *q;
	if (!sg->conv) {
		*fmtp = q;
		return 0; /* a conversion cut short by the end: nothing more to print */
	}
	*fmtp = q + 1;
	return 1;
}

/* ---- printing ------------------------------------------------------------------ */

struct rt_out {
	char *buf;
	size_t size, len;
};

static void rt_out_add(struct rt_out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
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

/* Bytes as they are (the terminating NUL is kept in place by the caller). */
static inline __attribute__((always_inline)) void rt_out_put(struct rt_out *o, const char *s,
							     size_t n)
{
	if (o->len < o->size) {
		size_t room = o->size - o->len - 1;
		memcpy(o->buf + o->len, s, n < room ? n : room);
	}
	o->len += n;
}

/* %d %u %x %X of a narrowed value, as snprintf would print it. */
static inline __attribute__((always_inline)) void rt_out_int(struct rt_out *o, char conv,
							     uint64_t u, int negative)
{
	char tmp[24], *e = tmp + sizeof(tmp), *p = e;
	if (conv == 'x' || conv == 'X') {
		const char *dig = conv == 'x' ? "0123456789abcdef" : "0123456789ABCDEF";
		do {
			*--p = dig[u & 15];
			u >>= 4;
		} while (u);
	} else {
		/* Decimal, the common case: straight into buf where it fits. */
		size_t n = rt_dec_len(u) + (size_t)negative;
		if (o->len + n < o->size) {
			char *d = o->buf + o->len;
			if (negative)
				*d = '-';
			rt_dec_back(d + n, u);
			o->len += n;
			return;
		}
		p = rt_dec_back(e, u);
		if (negative)
			*--p = '-';
	}
	rt_out_put(o, p, (size_t)(e - p));
}

/*
 * A conversion being printed: its spec as the format wrote it, to be
 * completed with what snprintf is given (a length modifier and the
 * conversion), and the values of its '*' width and precision.
 */
struct rt_conv {
	char spec[56];
	size_t k; /* the spec's length so far */
	int stars[2];
	int nstars;
};

/* The spec with the star values it takes (0, 1 or 2) and then v. */
#define RT_CONV_ADD(o, c, v)                                                            \
	((c)->nstars == 2   ? rt_out_add(o, (c)->spec, (c)->stars[0], (c)->stars[1], v) \
	 : (c)->nstars == 1 ? rt_out_add(o, (c)->spec, (c)->stars[0], v)                \
			    : rt_out_add(o, (c)->spec, v))

/* Complete the spec with s (a length modifier and the conversion). */
static void rt_conv_end(struct rt_conv *c, const char *s)
{
	while (*s)
		c->spec[c->k++] = *s++;
	c->spec[c->k] = 0;
}

static void rt_conv_signed(struct rt_out *o, const struct rt_fmt_seg *sg, struct rt_conv *c,
			   const struct rt_arg *a)
{
	long long v = (long long)a->v;
	if (sg->hh)
		v = (signed char)v;
	else if (sg->h)
		v = (short)v;
	else if (!sg->wide)
		v = (int)v;
	if (sg->simple) {
		rt_out_int(o, 'd', v < 0 ? 0 - (unsigned long long)v : (unsigned long long)v,
			   v < 0);
		return;
	}
	rt_conv_end(c, sg->conv == 'd' ? "lld" : "lli");
	RT_CONV_ADD(o, c, v);
}

static void rt_conv_unsigned(struct rt_out *o, const struct rt_fmt_seg *sg, struct rt_conv *c,
			     const struct rt_arg *a)
{
	unsigned long long v = a->v;
	if (sg->hh)
		v = (unsigned char)v;
	else if (sg->h)
		v = (unsigned short)v;
	else if (!sg->wide)
		v = (unsigned int)v;
	if (sg->simple && sg->conv != 'o') {
		rt_out_int(o, sg->conv, v, 0);
		return;
	}
	const char ll[] = {'l', 'l', sg->conv, 0};
	rt_conv_end(c, ll);
	RT_CONV_ADD(o, c, v);
}

/* f F e E g G a A: a double, or an integer argument converted to one. */
static void rt_conv_float(struct rt_out *o, const struct rt_fmt_seg *sg, struct rt_conv *c,
			  const struct rt_arg *a)
{
	double d;
	if (a->type == RINGTRACE_PF_DOUBLE)
		memcpy(&d, &a->v, 8);
	else
		d = (double)(int64_t)a->v;
	const char conv[] = {sg->conv, 0};
	rt_conv_end(c, conv);
	RT_CONV_ADD(o, c, d);
}

/* %s: a recorded string, or any other argument as a number. */
static void rt_conv_string(struct rt_out *o, const struct rt_fmt_seg *sg, struct rt_conv *c,
			   const struct rt_arg *a)
{
	char *spec = c->spec;
	spec[c->k] = 0;
	if (a->type != RINGTRACE_PF_STRING) {
		rt_out_add(o, "%llu", (unsigned long long)a->v);
		return;
	}
	if (sg->simple) {
		rt_out_put(o, a->s, a->slen);
		return;
	}
	/*
	 * The recorded string has no NUL: it is printed with a
	 * precision, the user's if smaller. Flags and width stay.
	 */
	char *dot = strchr(spec, '.');
	int prec = (int)a->slen;
	if (dot) {
		int up = sg->star_p ? c->stars[c->nstars - 1] : atoi(dot + 1);
		if (up >= 0 && up < prec)
			prec = up;
		c->k = (size_t)(dot - spec);
	}
	int width = 0, has_width = 0;
	if (sg->star_w) {
		width = c->stars[0];
		has_width = 1;
		/* drop the '*' from the spec; pass width explicitly */
		char *st = strchr(spec, '*');
		if (st && (!dot || st < dot))
			c->k = (size_t)(st - spec);
	}
	rt_conv_end(c, ".*s");
	if (has_width) {
		char full[64];
		snprintf(full, sizeof(full), "%.*s*.*s", (int)(c->k - 3), spec);
		rt_out_add(o, full, width, prec, a->s);
	} else {
		rt_out_add(o, spec, prec, a->s);
	}
}

/* One conversion, with its arguments from args[*ai]. */
static void rt_format_conv(struct rt_out *o, const struct rt_fmt_seg *sg, const struct rt_arg *args,
			   uint32_t nargs, uint32_t *ai)
{
	struct rt_conv c;
	c.k = sg->speclen;
	memcpy(c.spec, sg->spec, c.k);
	c.stars[0] = c.stars[1] = 0;
	c.nstars = 0;
	for (int st = 0; st < sg->star_w + sg->star_p; st++) {
		int64_t w = *ai < nargs ? (int64_t)args[*ai].v : 0;
		/* a width read from a record is data, not trusted */
		c.stars[c.nstars++] = w > (int64_t)RT_FMT_MAX_WIDTH    ? (int)RT_FMT_MAX_WIDTH
				      : w < -(int64_t)RT_FMT_MAX_WIDTH ? -(int)RT_FMT_MAX_WIDTH
								       : (int)w;
		(*ai)++;
	}
	if (*ai >= nargs) {
		rt_out_add(o, "<missing>");
		return;
	}
	const struct rt_arg *a = &args[(*ai)++];
	switch (sg->conv) {
	case 'd':
	case 'i':
		rt_conv_signed(o, sg, &c, a);
		break;
	case 'u':
	case 'x':
	case 'X':
	case 'o':
		rt_conv_unsigned(o, sg, &c, a);
		break;
	case 'c':
		rt_conv_end(&c, "c");
		RT_CONV_ADD(o, &c, (int)a->v);
		break;
	case 'f':
	case 'F':
	case 'e':
	case 'E':
	case 'g':
	case 'G':
	case 'a':
	case 'A':
		rt_conv_float(o, sg, &c, a);
		break;
	case 's':
		rt_conv_string(o, sg, &c, a);
		break;
	case 'p':
		rt_conv_end(&c, "p");
		RT_CONV_ADD(o, &c, (void *)(uintptr_t)a->v);
		break;
	default:
		rt_out_add(o, "<%%%c?>", sg->conv);
		break;
	}
}

static int rt_out_done(struct rt_out *o)
{
	if (o->size)
		o->buf[o->len < o->size ? o->len : o->size - 1] = 0;
	return o->len > INT_MAX ? INT_MAX : (int)o->len;
}

int rt_format_segs(const struct rt_fmt_seg *segs, uint32_t nseg, const struct rt_arg *args,
		   uint32_t nargs, char *buf, size_t size)
{
	struct rt_out o = {buf, size, 0};
	uint32_t ai = 0;
	if (size)
		buf[0] = 0;
	for (uint32_t i = 0; i < nseg; i++) {
		const struct rt_fmt_seg *sg = &segs[i];
		if (!sg->conv) {
			rt_out_put(&o, sg->lit, sg->litlen);
			continue;
		}
		/* The common conversions without a call: an integer printed in
		 * decimal or hex, a string as it is (as rt_format_conv does). */
		if (sg->simple && ai < nargs) {
			const struct rt_arg *a = &args[ai];
			uint64_t u = a->v;
			switch (sg->conv) {
			case 'd':
			case 'i': {
				int64_t v = (int64_t)u;
				if (sg->hh)
					v = (signed char)v;
				else if (sg->h)
					v = (short)v;
				else if (!sg->wide)
					v = (int)v;
				rt_out_int(&o, 'd', v < 0 ? 0 - (uint64_t)v : (uint64_t)v, v < 0);
				ai++;
				continue;
			}
			case 'u':
			case 'x':
			case 'X':
				if (sg->hh)
					u = (unsigned char)u;
				else if (sg->h)
					u = (unsigned short)u;
				else if (!sg->wide)
					u = (unsigned int)u;
				rt_out_int(&o, sg->conv, u, 0);
				ai++;
				continue;
			case 's':
				if (a->type == RINGTRACE_PF_STRING) {
					rt_out_put(&o, a->s, a->slen);
					ai++;
					continue;
				}
				break;
			}
		}
		rt_format_conv(&o, sg, args, nargs, &ai);
	}
	return rt_out_done(&o);
}

int rt_format_args(const char *fmt, const struct rt_arg *args, uint32_t nargs, char *buf,
		   size_t size)
{
	struct rt_out o = {buf, size, 0};
	struct rt_fmt_seg sg;
	uint32_t ai = 0;
	if (size)
		buf[0] = 0;
	while (rt_fmt_next(&fmt, &sg)) {
		if (!sg.conv)
			rt_out_put(&o, sg.lit, sg.litlen);
		else
			rt_format_conv(&o, &sg, args, nargs, &ai);
	}
	return rt_out_done(&o);
}

/* ---- records by their schema ------------------------------------------------- */

/* Render a value as text into [*at, end): arrays {a, b}, bytes as hex. */
static const char *rt_render(const struct ringtrace_value *v, char **at, char *end,
			     uint32_t *outlen)
{
	const struct ringtrace_field_desc *f = v->field;
	char *start = *at;
	*outlen = 0;
	if (start >= end)
		return ""; /* scratch space used up: render nothing */
	size_t room = (size_t)(end - start);
	size_t n = 0;
#define RT_ADD(...)                                                                 \
	do {                                                                        \
		int k_ = snprintf(start + n, room > n ? room - n : 0, __VA_ARGS__); \
		if (k_ > 0)                                                         \
			n += (size_t)k_;                                            \
	} while (0)
	if (f->type == RINGTRACE_FT_BYTES) {
		const unsigned char *b = v->ptr;
		for (uint32_t i = 0; i < v->len && n + 3 < room; i++)
			RT_ADD("%02x", b[i]);
	} else {
		RT_ADD("{");
		for (uint32_t i = 0; i < v->len && n + 24 < room; i++) {
			const char *e = (const char *)v->ptr + (size_t)i * f->size;
			if (f->type == RINGTRACE_FT_FLOAT_ARRAY) {
				RT_ADD("%s%g", i ? "," : "", rt_field_load_float(e, f->size));
			} else {
				uint64_t u = rt_field_load(e, f->size);
				if (f->is_signed)
					RT_ADD("%s%lld", i ? "," : "",
					       (long long)rt_field_sext(u, f->size));
				else
					RT_ADD("%s%llu", i ? "," : "", (unsigned long long)u);
			}
		}
		RT_ADD("}");
	}
#undef RT_ADD
	if (n >= room)
		n = room - 1;
	*at = start + n + 1; /* <= end */
	*outlen = (uint32_t)n;
	return start;
}

int rt_record_format(const char *print_fmt, const struct rt_fmt_seg *segs, uint32_t nseg,
		     const struct ringtrace_field_desc *fields, uint32_t nfields, int checked,
		     const void *payload, size_t len, char *buf, size_t size)
{
	struct ringtrace_value vals[64];
	struct rt_arg args[64];
	char scratch[8192];
	char *at = scratch, *end = scratch + sizeof(scratch);
	if (nfields > 64)
		return rt_error(RINGTRACE_EINVAL, "record_format: %u fields (at most 64)", nfields);
	int n = rt_record_decode(fields, nfields, payload, len, vals, checked);
	if (n < 0)
		return n;
	uint32_t na = 0;
	for (uint32_t i = nfields && rt_field_hidden(fields, 0); i < nfields; i++) {
		const struct ringtrace_value *v = &vals[i];
		const struct ringtrace_field_desc *f = v->field;
		struct rt_arg *a = &args[na];
		a->v = 0; /* what an integer conversion of a string prints */
		a->s = NULL;
		a->slen = 0;
		switch (f->type) {
		case RINGTRACE_FT_INT:
		case RINGTRACE_FT_BOOL:
			a->type = f->is_signed ? RINGTRACE_PF_S64 : RINGTRACE_PF_U64;
			a->v = v->v.u;
			break;
		case RINGTRACE_FT_POINTER:
			a->type = RINGTRACE_PF_POINTER;
			a->v = v->v.u;
			break;
		case RINGTRACE_FT_FLOAT:
			a->type = RINGTRACE_PF_DOUBLE;
			memcpy(&a->v, &v->v.f, 8);
			break;
		case RINGTRACE_FT_ENUM: {
			a->type = RINGTRACE_PF_STRING;
			a->v = v->v.u;
			const char *name = NULL;
			int64_t val = f->is_signed ? v->v.i : (int64_t)v->v.u;
			for (uint32_t k = 0; f->enm && k < f->enm->count; k++)
				if (f->enm->values[k].value == val)
					name = f->enm->values[k].name;
			if (!name && at + 24 <= end) {
				int k = snprintf(at, 24, "%lld", (long long)val);
				name = at;
				at += k + 1;
			} else if (!name) {
				name = "?";
			}
			a->s = name;
			a->slen = (uint32_t)strlen(name);
			break;
		}
		case RINGTRACE_FT_STRING:
			a->type = RINGTRACE_PF_STRING;
			a->s = v->ptr;
			a->slen = v->len;
			break;
		default: /* arrays, bytes */
			a->type = RINGTRACE_PF_STRING;
			a->s = rt_render(v, &at, end, &a->slen);
			a->v = v->len;
			break;
		}
		na++;
	}
	if (segs)
		return rt_format_segs(segs, nseg, args, na, buf, size);
	return rt_format_args(print_fmt, args, na, buf, size);
}

int ringtrace_record_format(const char *print_fmt, const struct ringtrace_field_desc *fields,
			    uint32_t nfields, const void *payload, size_t len, char *buf,
			    size_t size)
{
	return rt_record_format(print_fmt, NULL, 0, fields, nfields, 0, payload, len, buf, size);
}

/* ---- binary printf records ------------------------------------------------------ */

int ringtrace_printf_format(const char *fmt, const uint8_t *types, uint32_t nargs,
			    const void *payload, size_t len, char *buf, size_t size)
{
	const char *p = payload;
	struct rt_arg args[RINGTRACE_PRINTF_MAX_ARGS];
	if (!fmt || len < 8)
		return rt_error(RINGTRACE_ECORRUPT,
				"printf record: %zu bytes, shorter than its 8-byte header", len);
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
				return rt_error(
					RINGTRACE_ECORRUPT,
					"printf record: argument %u at offset %zu is truncated",
					i + 1, o);
			memcpy(&l, p + o, 4);
			if (l > len - o - 4)
				return rt_error(
					RINGTRACE_ECORRUPT,
					"printf record: string argument %u at offset %zu overruns the record",
					i + 1, o);
			args[i].s = p + o + 4;
			args[i].slen = l;
			args[i].v = 0;
			o = RT_ALIGN8(o + 4 + l);
		} else {
			o = RT_ALIGN8(o);
			if (o > len || len - o < 8)
				return rt_error(
					RINGTRACE_ECORRUPT,
					"printf record: argument %u at offset %zu is truncated",
					i + 1, o);
			memcpy(&args[i].v, p + o, 8);
			args[i].s = NULL;
			args[i].slen = 0;
			o += 8;
		}
	}
	if (RT_ALIGN8(o) != len)
		return rt_error(
			RINGTRACE_ECORRUPT,
			"printf record: %zu argument bytes, but the call site's %u arguments take %zu",
			len - 8, n, RT_ALIGN8(o) - 8);
	return rt_format_args(fmt, args, n, buf, size);
}
