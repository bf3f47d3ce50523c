/*
 * Decoding a record by its schema (ringtrace/schema.h describes the
 * layout). Nothing here trusts the record: every offset and length is
 * checked against the record's length, and every field description
 * against the rules of field.c.
 */
#include <stdio.h>
#include <string.h>

#include "schema/schema_api.h"

int rt_record_decode(const struct ringtrace_field_desc *fields, uint32_t nfields,
		     const void *payload, size_t len, struct ringtrace_value *values, int checked)
{
	const char *p = payload;
	size_t o = 0;
	uint32_t i = 0;
	for (i = 0; i < nfields; i++) {
		const struct ringtrace_field_desc *f = &fields[i];
		struct ringtrace_value *v = &values[i];
		char why_buf[80];
		const char *why;
		if (!checked && rt_field_check(f, why_buf, sizeof(why_buf), &why) < 0)
			return rt_error(RINGTRACE_ECORRUPT, "field \"%s\": %s",
					f->name ? f->name : "?", why);
		unsigned al = f->align ? f->align : 1;
		o = (o + al - 1) & ~(size_t)(al - 1);
		v->field = f;
		v->v.u = 0;
		v->ptr = NULL;
		v->len = 0;
		v->offset = (uint32_t)o;
		if (o > len)
			goto short_record;
		switch (f->type) {
		case RINGTRACE_FT_INT:
		case RINGTRACE_FT_ENUM:
		case RINGTRACE_FT_BOOL:
		case RINGTRACE_FT_POINTER:
		case RINGTRACE_FT_FLOAT:
			if (len - o < f->size)
				goto short_record;
			if (f->type == RINGTRACE_FT_FLOAT) {
				v->v.f = rt_field_load_float(p + o, f->size);
			} else {
				uint64_t u = rt_field_load(p + o, f->size);
				if (f->is_signed)
					v->v.i = rt_field_sext(u, f->size);
				else
					v->v.u = u;
			}
			o += f->size;
			break;
		case RINGTRACE_FT_ARRAY:
		case RINGTRACE_FT_FLOAT_ARRAY: {
			uint64_t bytes = rt_field_fixed_bytes(f);
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
				return rt_error(
					RINGTRACE_ECORRUPT,
					"field \"%s\": string at offset %zu has no terminating NUL within the record (%zu bytes)",
					f->name, o, len);
			v->ptr = p + o;
			v->len = (uint32_t)(nul - (p + o));
			o += v->len + 1;
			break;
		}
		default: { /* RINGTRACE_FT_BYTES (rt_field_check refused any other type) */
			uint32_t l;
			if (len - o < 4)
				goto short_record;
			memcpy(&l, p + o, 4);
			if (l > len - o - 4)
				return rt_error(
					RINGTRACE_ECORRUPT,
					"field \"%s\": %u bytes at offset %zu overrun the record (%zu bytes)",
					f->name, l, o, len);
			v->ptr = p + o + 4;
			v->len = l;
			o += 4 + (size_t)l;
			break;
		}
		}
	}
	return (int)nfields;
short_record:
	return rt_error(RINGTRACE_ECORRUPT, "field \"%s\" at offset %zu: record is only %zu bytes",
			fields[i].name ? fields[i].name : "?", o, len);
}

int ringtrace_record_decode(const struct ringtrace_field_desc *fields, uint32_t nfields,
			    const void *payload, size_t len, struct ringtrace_value *values)
{
	return rt_record_decode(fields, nfields, payload, len, values, 0);
}
