/*
 * Decoding and formatting records by their schema.
 *
 * A record is its fields in order, each at an offset aligned to the
 * field's alignment (relative to the payload start): scalars and arrays in
 * native little-endian form, strings NUL-terminated, byte sequences as a
 * 4-aligned u32 length followed by the bytes. Nothing here trusts the
 * record: every offset and length is checked against the record's length.
 */
#include <stdio.h>
#include <string.h>

#include "common/internal.h"
#include "event/format_internal.h"
#include "ringtrace/event.h"

static uint64_t rt_load_uint(const char *p, unsigned size)
{
	switch (size) {
	case 1: { uint8_t v; memcpy(&v, p, 1); return v; }
	case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
	case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
	default: { uint64_t v; memcpy(&v, p, 8); return v; }
	}
}

static int64_t rt_sign_extend(uint64_t v, unsigned size)
{
	if (size >= 8)
		return (int64_t)v;
	unsigned shift = 64 - 8 * size;
	return (int64_t)(v << shift) >> shift;
}

int ringtrace_record_decode(const struct ringtrace_field_desc *fields, uint32_t nfields,
			    const void *payload, size_t len, struct ringtrace_value *values)
{
	const char *p = payload;
	size_t o = 0;
	uint32_t i = 0;
	for (i = 0; i < nfields; i++) {
		const struct ringtrace_field_desc *f = &fields[i];
		struct ringtrace_value *v = &values[i];
		unsigned al = f->align ? f->align : 1;
		if (al > 8 || (al & (al - 1)))
			return rt_error(RINGTRACE_ECORRUPT, "field \"%s\": alignment %u is invalid", f->name, al);
		o = (o + al - 1) & ~(size_t)(al - 1);
		memset(v, 0, sizeof(*v));
		v->field = f;
		v->offset = (uint32_t)o;
		if (o > len)
			goto short_record;
		switch (f->type) {
		case RINGTRACE_FT_INT:
		case RINGTRACE_FT_ENUM:
		case RINGTRACE_FT_BOOL:
		case RINGTRACE_FT_POINTER:
		case RINGTRACE_FT_FLOAT:
			if (f->size != 1 && f->size != 2 && f->size != 4 && f->size != 8)
				return rt_error(RINGTRACE_ECORRUPT, "field \"%s\": size %u is invalid", f->name, f->size);
			if (len - o < f->size)
				goto short_record;
			if (f->type == RINGTRACE_FT_FLOAT) {
				if (f->size == 4) {
					float x;
					memcpy(&x, p + o, 4);
					v->v.f = x;
				} else if (f->size == 8) {
					memcpy(&v->v.f, p + o, 8);
				} else {
					return rt_error(RINGTRACE_ECORRUPT, "field \"%s\": float of size %u", f->name, f->size);
				}
			} else {
				uint64_t u = rt_load_uint(p + o, f->size);
				if (f->is_signed)
					v->v.i = rt_sign_extend(u, f->size);
				else
					v->v.u = u;
			}
			o += f->size;
			break;
		case RINGTRACE_FT_ARRAY:
		case RINGTRACE_FT_FLOAT_ARRAY: {
			if (f->type == RINGTRACE_FT_FLOAT_ARRAY && f->size != 4 && f->size != 8)
				return rt_error(RINGTRACE_ECORRUPT, "field \"%s\": float element size %u is invalid", f->name, f->size);
			if (f->size != 1 && f->size != 2 && f->size != 4 && f->size != 8)
				return rt_error(RINGTRACE_ECORRUPT, "field \"%s\": element size %u is invalid", f->name, f->size);
			uint64_t bytes = (uint64_t)f->size * f->count;
			if (len - o < bytes)
				goto short_record;
			v->ptr = p + o;
			v->len = f->count;
			o += bytes;
			break;
		}
		case RINGTRACE_FT_STRING: {
			const char *nul = memchr(p + o, 0, len - o);
			if (!nul)
				return rt_error(RINGTRACE_ECORRUPT,
						"field \"%s\": string at offset %zu has no terminating NUL within the record (%zu bytes)",
						f->name, o, len);
			v->ptr = p + o;
			v->len = (uint32_t)(nul - (p + o));
			o += v->len + 1;
			break;
		}
		case RINGTRACE_FT_BYTES: {
			uint32_t l;
			if (len - o < 4)
				goto short_record;
			memcpy(&l, p + o, 4);
			if (l > len - o - 4)
				return rt_error(RINGTRACE_ECORRUPT,
						"field \"%s\": %u bytes at offset %zu overrun the record (%zu bytes)",
						f->name, l, o, len);
			v->ptr = p + o + 4;
			v->len = l;
			o += 4 + (size_t)l;
			break;
		}
		default:
			return rt_error(RINGTRACE_ECORRUPT, "field \"%s\": unknown type %u", f->name, f->type);
		}
	}
	return (int)nfields;
short_record:
	return rt_error(RINGTRACE_ECORRUPT, "field \"%s\" at offset %zu: record is only %zu bytes",
			fields[i].name ? fields[i].name : "?", o, len);
}


/* Render a value as text into [*at, end): arrays {a, b}, bytes as hex. */
static const char *rt_render(const struct ringtrace_value *v, char **at, char *end, uint32_t *outlen)
{
	const struct ringtrace_field_desc *f = v->field;
	char *start = *at;
	*outlen = 0;
	if (start >= end)
		return ""; /* scratch space used up: render nothing */
	size_t room = (size_t)(end - start);
	size_t n = 0;
#define RT_ADD(...)                                                                  \
	do {                                                                         \
		int k_ = snprintf(start + n, room > n ? room - n : 0, __VA_ARGS__);  \
		if (k_ > 0)                                                          \
			n += (size_t)k_;                                             \
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
				double d;
				if (f->size == 4) {
					float x;
					memcpy(&x, e, 4);
					d = x;
				} else {
					memcpy(&d, e, 8);
				}
				RT_ADD("%s%g", i ? "," : "", d);
			} else {
				uint64_t u = rt_load_uint(e, f->size);
				if (f->is_signed)
					RT_ADD("%s%lld", i ? "," : "", (long long)rt_sign_extend(u, f->size));
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

int ringtrace_record_format(const char *print_fmt, const struct ringtrace_field_desc *fields,
			    uint32_t nfields, const void *payload, size_t len, char *buf,
			    size_t size)
{
	struct ringtrace_value vals[64];
	struct rt_arg args[64];
	char scratch[8192];
	char *at = scratch, *end = scratch + sizeof(scratch);
	if (nfields > 64)
		return rt_error(RINGTRACE_EINVAL, "record_format: %u fields (at most 64)", nfields);
	int n = ringtrace_record_decode(fields, nfields, payload, len, vals);
	if (n < 0)
		return n;
	uint32_t na = 0;
	for (uint32_t i = 0; i < nfields; i++) {
		const struct ringtrace_value *v = &vals[i];
		const struct ringtrace_field_desc *f = v->field;
		struct rt_arg *a = &args[na];
		if (strcmp(f->name, "_truncated") == 0 && i == 0)
			continue; /* hidden */
		memset(a, 0, sizeof(*a));
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
	return rt_format_args(print_fmt, args, na, buf, size);
}
