/*
 * src/schema/schema_api.h - what the layers above may use of the schema
 * layer beyond ringtrace/schema.h: the one field loader, field checks,
 * and the one formatter (printf-style conversions over decoded values).
 * Not installed. Pure code: depends on base only.
 */
#ifndef RINGTRACE_SCHEMA_API_H
#define RINGTRACE_SCHEMA_API_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/base.h"
#include "ringtrace/schema.h"

/* ---- the field loader --------------------------------------------------------- */

/*
 * An integer field of `size` bytes (1, 2, 4; anything else reads 8) at p,
 * zero-extended. Every reader of record fields (decoding, filters, the
 * JSON export) loads through these; the bounds are the caller's to check.
 */
static inline uint64_t rt_field_load(const void *p, unsigned size)
{
	switch (size) {
	case 1: {
		uint8_t v;
		memcpy(&v, p, 1);
		return v;
	}
	case 2: {
		uint16_t v;
		memcpy(&v, p, 2);
		return v;
	}
	case 4: {
		uint32_t v;
		memcpy(&v, p, 4);
		return v;
	}
	default: {
		uint64_t v;
		memcpy(&v, p, 8);
		return v;
	}
	}
}

/* v, loaded from `size` bytes, sign-extended to 64 bits. */
static inline int64_t rt_field_sext(uint64_t v, unsigned size)
{
	if (size >= 8)
		return (int64_t)v;
	unsigned shift = 64 - 8 * size;
	return (int64_t)(v << shift) >> shift;
}

/* A float field of 4 or 8 bytes at p, as a double. */
static inline double rt_field_load_float(const void *p, unsigned size)
{
	if (size == 4) {
		float x;
		memcpy(&x, p, 4);
		return x;
	}
	double d;
	memcpy(&d, p, 8);
	return d;
}

/* Field i is the hidden `_truncated` byte that leads records with strings. */
static inline int rt_field_hidden(const struct ringtrace_field_desc *fields, uint32_t i)
{
	return i == 0 && fields[0].name && strcmp(fields[0].name, "_truncated") == 0;
}

/*
 * Whether a field description is one a record can have (type, size,
 * alignment, signedness): 0, or -1 with *why saying what is wrong (a
 * phrase, e.g. "float size 3 is invalid"; a static string or `buf`).
 */
RT_HIDDEN int rt_field_check(const struct ringtrace_field_desc *f, char *buf, size_t size,
			     const char **why);
/*
 * ringtrace_record_decode, with the field descriptions already checked
 * (checked 1: a schema every field of which passed rt_field_check, such
 * as a parsed metadata's) or not (0: checked on the way).
 */
RT_HIDDEN int rt_record_decode(const struct ringtrace_field_desc *fields, uint32_t nfields,
			       const void *payload, size_t len, struct ringtrace_value *values,
			       int checked);
/* "signed integer", "float", "string", ...: the field's type in words. */
RT_HIDDEN const char *rt_field_type_name(const struct ringtrace_field_desc *f);
/* Bytes of a fixed-size field's data (scalars, arrays); 0 for strings and bytes. */
RT_HIDDEN uint64_t rt_field_fixed_bytes(const struct ringtrace_field_desc *f);

/* ---- the formatter (format.c) ------------------------------------------------ */

/* One value to format: type is an enum ringtrace_pf_type. */
struct rt_arg {
	uint8_t type;
	uint64_t v;
	const char *s; /* RINGTRACE_PF_STRING: the bytes (not NUL-terminated) */
	uint32_t slen;
};

/*
 * One piece of a print format, as rt_fmt_next() cuts it: literal text, or
 * one conversion with its flags, width, precision and length modifier.
 * A caller that formats many records with one format keeps its pieces
 * (the trace reader does, per event) instead of cutting them every time.
 */
/* The widest field width or precision printed (larger ones are clamped). */
#define RT_FMT_MAX_WIDTH 4096u

struct rt_fmt_seg {
	const char *lit; /* literal text (conv == 0) */
	uint32_t litlen;
	char conv;              /* the conversion character, 0 for a literal */
	uint8_t simple;         /* no flags, width or precision */
	uint8_t star_w, star_p; /* width / precision given as '*' (an argument each) */
	uint8_t hh, h, wide;    /* length modifier: hh, h, or any wider one */
	uint8_t speclen;
	char spec[45]; /* "%" flags width "." precision (clamped), no modifier */
};

/*
 * Cut the next piece of the format at *fmt: 1 and *seg filled (*fmt moves
 * past it), 0 at the end of the format (or at a '%' with no conversion).
 */
RT_HIDDEN int rt_fmt_next(const char **fmt, struct rt_fmt_seg *seg);

/*
 * Format arguments with the pieces of a print format: each conversion
 * narrowed by its length modifier to what a C compiler would have passed,
 * then printed as printf would (a missing argument prints "<missing>", an
 * unknown conversion "<%c?>"). Returns the length that would have been
 * written (saturated at INT_MAX); buf (if size > 0) is NUL-terminated.
 */
RT_HIDDEN int rt_format_segs(const struct rt_fmt_seg *segs, uint32_t nseg,
			     const struct rt_arg *args, uint32_t nargs, char *buf, size_t size);
/* The same, cutting the format as it goes. */
RT_HIDDEN int rt_format_args(const char *fmt, const struct rt_arg *args, uint32_t nargs, char *buf,
			     size_t size);

/*
 * ringtrace_record_format with the print format already cut (segs, or
 * NULL to cut print_fmt as it goes), and the fields checked already or
 * not (as rt_record_decode).
 */
RT_HIDDEN int rt_record_format(const char *print_fmt, const struct rt_fmt_seg *segs, uint32_t nseg,
			       const struct ringtrace_field_desc *fields, uint32_t nfields,
			       int checked, const void *payload, size_t len, char *buf,
			       size_t size);

#endif /* RINGTRACE_SCHEMA_API_H */
